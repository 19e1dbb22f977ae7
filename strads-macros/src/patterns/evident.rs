//! The evident type of a value: the type its expression says without inference (a suffixed
//! literal, a cast, a number type's constant, a variable of known type, ..). `None` whenever
//! inference could pick among types (`0.0` alone), so a type given is always the value's.

use syn::{Expr, Type};

use super::Known;
use crate::syntax::{NUMBER_TYPES, int_literal, strip_group};

fn number_type(name: &str) -> Option<Type> {
    NUMBER_TYPES
        .contains(&name)
        .then(|| syn::parse_str(name).expect("a type name"))
}

/// The type of a local's value when the expression says it without inference: a suffixed
/// literal (`0u64`, `0.0f64`), `true`, a string literal, a number type's constant or
/// conversion (`f64::MIN`, `std::f64::consts::PI`, `u64::from(x)`), a cast (`x as f32`),
/// `.len()` and `shape()[k]` (`usize`), a variable of known type, arithmetic or float
/// methods (`abs`, `sqrt`, `max`, ..) of those, and tuples and arrays of them
/// (`(1u8, n)`, `[0.5f32, 2.0]`, `[0u64; 4]`). `None` otherwise (`0.0` alone could be
/// `f32` or `f64`).
pub(crate) fn evident_type(e: &Expr, known: Known) -> Option<Type> {
    use syn::{BinOp, Lit, UnOp};
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) if !i.suffix().is_empty() => number_type(i.suffix()),
            Lit::Float(f) if !f.suffix().is_empty() => number_type(f.suffix()),
            Lit::Bool(_) => Some(syn::parse_quote!(bool)),
            Lit::Char(_) => Some(syn::parse_quote!(char)),
            Lit::Str(_) => Some(syn::parse_quote!(&str)),
            _ => None,
        },
        Expr::Paren(p) => evident_type(&p.expr, known),
        Expr::Group(g) => evident_type(&g.expr, known),
        Expr::Cast(c) => match &*c.ty {
            Type::Path(tp) if tp.qself.is_none() => Some((*c.ty).clone()),
            _ => None,
        },
        Expr::Path(p) if p.qself.is_none() => {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            match segs.as_slice() {
                [one] => known(one),
                // `f64::MIN`, `core::f64::MAX`, `std::f64::consts::PI`.
                [.., ty, _] if number_type(ty).is_some() => number_type(ty),
                [.., ty, consts, _] if consts == "consts" => number_type(ty),
                _ => None,
            }
        }
        // `u64::from(x)`, `f64::max(a, b)`.
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => {
                let ty = p.path.segments[0].ident.to_string();
                let f = p.path.segments[1].ident.to_string();
                matches!(f.as_str(), "from" | "max" | "min" | "abs" | "sqrt")
                    .then(|| number_type(&ty))
                    .flatten()
            }
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => evident_type(&u.expr, known),
        Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => evident_type(&u.expr, known),
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_)
            | BinOp::Ne(_)
            | BinOp::Lt(_)
            | BinOp::Le(_)
            | BinOp::Gt(_)
            | BinOp::Ge(_)
            | BinOp::And(_)
            | BinOp::Or(_) => Some(syn::parse_quote!(bool)),
            BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_) | BinOp::Rem(_) => {
                evident_type(&b.left, known).or_else(|| evident_type(&b.right, known))
            }
            _ => None,
        },
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "len" | "nrows" | "ncols" if m.args.is_empty() => Some(syn::parse_quote!(usize)),
            "abs" | "sqrt" | "ln" | "exp" | "powi" | "powf" | "max" | "min" | "floor" | "ceil"
            | "round" | "recip" | "clamp" => evident_type(&m.receiver, known),
            _ => None,
        },
        // `(1u8, x.len())`: a tuple of evident types.
        Expr::Tuple(t) => {
            let mut elems = t
                .elems
                .iter()
                .map(|e| evident_type(e, known))
                .collect::<Option<syn::punctuated::Punctuated<Type, syn::Token![,]>>>()?;
            if elems.len() == 1 {
                elems.push_punct(Default::default());
            }
            Some(Type::Tuple(syn::TypeTuple {
                paren_token: Default::default(),
                elems,
            }))
        }
        // `[0.5f32, 2.0]`, `[0u8; 4]`: the elements share one type, which the first
        // element of an evident type no coercion changes shows.
        Expr::Array(a) => {
            let elem = a
                .elems
                .iter()
                .find_map(|e| evident_type(e, known).filter(settled))?;
            let n = proc_macro2::Literal::usize_unsuffixed(a.elems.len());
            Some(syn::parse_quote!([#elem; #n]))
        }
        Expr::Repeat(r) => {
            let elem = evident_type(&r.expr, known)?;
            let n = int_literal(&r.len)?;
            let n = proc_macro2::Literal::i64_unsuffixed(n);
            Some(syn::parse_quote!([#elem; #n]))
        }
        // `a.shape()[0]`.
        Expr::Index(ix) => match strip_group(&ix.expr) {
            Expr::MethodCall(m) if m.method == "shape" && m.args.is_empty() => {
                Some(syn::parse_quote!(usize))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether no coercion changes a value of type `t`: numbers, `bool`, `char`, and tuples
/// and arrays of them. (Coercions change references, pointers, boxes, function items.)
pub(crate) fn settled(t: &Type) -> bool {
    match t {
        Type::Path(tp) => {
            tp.qself.is_none()
                && tp.path.get_ident().is_some_and(|i| {
                    NUMBER_TYPES.contains(&i.to_string().as_str()) || i == "bool" || i == "char"
                })
        }
        Type::Tuple(t) => t.elems.iter().all(settled),
        Type::Array(a) => settled(&a.elem),
        Type::Paren(p) => settled(&p.elem),
        _ => false,
    }
}
