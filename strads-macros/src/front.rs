//! Front end: the annotated function as a model strads can reason about.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{
    Expr, ExprForLoop, ExprRange, FnArg, GenericArgument, ItemFn, Pat, PathArguments, RangeLimits,
    Stmt, Type,
};

use crate::ctxt::Ctxt;

/// Which array type a variable holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArrayKind {
    Dense,
    Sparse,
}

/// An array the function can see: a parameter or a typed local before the loop.
pub(crate) struct ArrayVar {
    pub(crate) ident: syn::Ident,
    pub(crate) kind: ArrayKind,
    pub(crate) elem: Type,
    pub(crate) rank: usize,
    /// `&mut` parameter or `let mut` local.
    pub(crate) mutable: bool,
    /// A local owned by the function rather than a reference parameter.
    pub(crate) owned: bool,
}

/// A non-array variable defined outside the loop: a parameter or a local before the loop.
pub(crate) struct OuterVar {
    pub(crate) ident: syn::Ident,
    /// The declared type, or the evident type of an unannotated local's value
    /// ([`evident_type`]); `None` when neither is known.
    pub(crate) ty: Option<Type>,
    /// Declared with `mut`.
    pub(crate) mutable: bool,
    /// An unannotated local bound to a closure.
    pub(crate) closure: bool,
}

/// What the loop iterates over.
pub(crate) enum SpaceSrc {
    /// An array variable (index into `LoopFn::arrays`).
    Array(usize),
    /// `start..end` or `start..=end`.
    Range {
        start: Box<Expr>,
        end: Box<Expr>,
        inclusive: bool,
    },
}

/// How the loop pattern binds the iteration index.
pub(crate) enum KeyPat {
    /// `([u, i], v)`: one ident (or `_`) per dim.
    Elems(Vec<Option<syn::Ident>>),
    /// `(key, v)`: the whole index array.
    Whole(syn::Ident),
    /// `(_, v)`.
    Ignored,
    /// `i` of a range loop.
    Range(Option<syn::Ident>),
}

/// The annotated function, split around its loop.
pub(crate) struct LoopFn {
    pub(crate) item: ItemFn,
    pub(crate) arrays: Vec<ArrayVar>,
    pub(crate) outer: Vec<OuterVar>,
    pub(crate) loop_index: usize,
    pub(crate) for_loop: ExprForLoop,
    pub(crate) space: SpaceSrc,
    pub(crate) key: KeyPat,
    pub(crate) n_dims: usize,
    /// Arrays given to `buffer(..)`: write-back buffers, exempt from the analysis.
    pub(crate) buffered: Vec<usize>,
    /// `for (k, v) in a.iter_mut()`: each iteration owns its entry's value.
    pub(crate) values_mut: bool,
    /// `buffer(g, apply = f(w, s))`: (buffered array, function, target arrays).
    pub(crate) applies: Vec<(usize, syn::Path, Vec<usize>)>,
    /// `buffer(.., max_delay = n)`.
    pub(crate) max_delay: Option<usize>,
}

impl LoopFn {
    /// Parses the function; `None` after reporting errors when it cannot be modelled.
    pub(crate) fn from_syn(cx: &Ctxt, item: &ItemFn) -> Option<LoopFn> {
        check_signature(cx, item);
        let mut arrays = Vec::new();
        let mut outer = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(r) => cx.error_spanned_by(
                    r,
                    "`#[parallel_for]` goes on a free function; move the loop into a function \
                     that takes the fields it needs as parameters",
                ),
                FnArg::Typed(pt) => {
                    let Pat::Ident(pi) = &*pt.pat else {
                        cx.error_spanned_by(
                            &pt.pat,
                            "parameters of a `#[parallel_for]` function must be plain names; \
                             destructure inside the body instead",
                        );
                        continue;
                    };
                    match array_type(cx, &pt.ty) {
                        Some((kind, elem, rank, mutable, owned)) => {
                            if owned {
                                cx.error_spanned_by(
                                    &pt.ty,
                                    "take arrays by reference: `&DistArray<..>`, \
                                     `&mut DistArray<..>` or `&SparseArray<..>`",
                                );
                            }
                            arrays.push(ArrayVar {
                                ident: pi.ident.clone(),
                                kind,
                                elem,
                                rank,
                                mutable,
                                owned: false,
                            })
                        }
                        None => outer.push(OuterVar {
                            ident: pi.ident.clone(),
                            ty: Some((*pt.ty).clone()),
                            mutable: pi.mutability.is_some(),
                            closure: false,
                        }),
                    }
                }
            }
        }

        let stmts = &item.block.stmts;
        let loops: Vec<usize> = stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Stmt::Expr(Expr::ForLoop(_), _)))
            .map(|(i, _)| i)
            .collect();
        let loop_index = match loops.as_slice() {
            [i] => *i,
            [] => {
                cx.error_spanned_by(
                    &item.sig.ident,
                    "`#[parallel_for]` needs one top-level `for` loop in the function body; \
                     that loop is run in parallel",
                );
                return None;
            }
            [_, second, ..] => {
                let Stmt::Expr(Expr::ForLoop(l), _) = &stmts[*second] else {
                    unreachable!("filtered above");
                };
                cx.syn_error(syn::Error::new(
                    for_span(l),
                    "the function holds several top-level `for` loops; put each loop to \
                     parallelize in its own `#[parallel_for]` function",
                ));
                return None;
            }
        };
        for stmt in &stmts[..loop_index] {
            if let Stmt::Local(local) = stmt {
                let (pat, ty) = match &local.pat {
                    Pat::Type(pt) => (&*pt.pat, Some((*pt.ty).clone())),
                    p => (p, None),
                };
                let mut names = Vec::new();
                collect_idents(pat, &mut names);
                for (ident, mutable) in names {
                    // A redefinition shadows the earlier variable.
                    arrays.retain(|a: &ArrayVar| a.ident != ident);
                    outer.retain(|o: &OuterVar| o.ident != ident);
                    let single = matches!(pat, Pat::Ident(_));
                    match ty
                        .as_ref()
                        .filter(|_| single)
                        .and_then(|t| array_type(cx, t))
                    {
                        Some((kind, elem, rank, _, owned)) => arrays.push(ArrayVar {
                            ident,
                            kind,
                            elem,
                            rank,
                            mutable,
                            owned,
                        }),
                        None => {
                            let init = local.init.as_ref().map(|i| &*i.expr);
                            let ty = match (&ty, init) {
                                (Some(t), _) => Some(t.clone()).filter(|_| single),
                                (None, Some(e)) if single => evident_type(e, &outer),
                                _ => None,
                            };
                            outer.push(OuterVar {
                                ident,
                                ty,
                                mutable,
                                closure: single
                                    && matches!(init.map(strip_group), Some(Expr::Closure(_))),
                            })
                        }
                    }
                }
            }
        }

        let Stmt::Expr(Expr::ForLoop(for_loop), _) = &stmts[loop_index] else {
            unreachable!("found above");
        };
        let for_loop = for_loop.clone();
        let values_mut = is_iter_mut(&for_loop.expr);
        let space = space_of(cx, &for_loop.expr, &arrays)?;
        if values_mut {
            if let SpaceSrc::Array(a) = space {
                let arr = &arrays[a];
                if arr.kind != ArrayKind::Sparse || !arr.mutable || arr.owned {
                    cx.error_spanned_by(
                        &for_loop.expr,
                        "`iter_mut()` in a `#[parallel_for]` loop iterates a `&mut SparseArray` \
                         parameter, giving each iteration its entry's value to update",
                    );
                    return None;
                }
            }
        }
        let (key, n_dims) = match &space {
            SpaceSrc::Array(a) => key_of_array(cx, &for_loop.pat, arrays[*a].rank)?,
            SpaceSrc::Range { .. } => (key_of_range(cx, &for_loop.pat)?, 1),
        };
        Some(LoopFn {
            item: item.clone(),
            arrays,
            outer,
            loop_index,
            for_loop,
            space,
            key,
            n_dims,
            buffered: Vec::new(),
            values_mut,
            applies: Vec::new(),
            max_delay: None,
        })
    }

    /// Index of the array named `name`.
    pub(crate) fn array_index(&self, name: &str) -> Option<usize> {
        self.arrays.iter().position(|a| a.ident == name)
    }

    /// The outer variable named `name`.
    pub(crate) fn outer_var(&self, name: &str) -> Option<&OuterVar> {
        self.outer.iter().find(|o| o.ident == name)
    }

    /// Dim names for the report: the pattern's idents, `key[0]` for a whole key.
    pub(crate) fn dim_names(&self) -> Vec<String> {
        match &self.key {
            KeyPat::Elems(v) => v
                .iter()
                .enumerate()
                .map(|(d, i)| i.as_ref().map_or(format!("_{d}"), |i| i.to_string()))
                .collect(),
            KeyPat::Whole(k) => (0..self.n_dims).map(|d| format!("{k}[{d}]")).collect(),
            KeyPat::Ignored => (0..self.n_dims).map(|d| format!("_{d}")).collect(),
            KeyPat::Range(i) => vec![i.as_ref().map_or("_0".into(), |i| i.to_string())],
        }
    }
}

fn check_signature(cx: &Ctxt, item: &ItemFn) {
    let sig = &item.sig;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "generic `#[parallel_for]` functions are not supported yet; write the loop for \
             concrete element types",
        );
    }
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(a, "`#[parallel_for]` functions cannot be `async`");
    }
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, "`#[parallel_for]` functions cannot be `const`");
    }
}

/// `(kind, element type, rank, mutable, owned)` when `ty` is a strads array type.
fn array_type(cx: &Ctxt, ty: &Type) -> Option<(ArrayKind, Type, usize, bool, bool)> {
    let (inner, mutable, owned) = match ty {
        Type::Reference(r) => (&*r.elem, r.mutability.is_some(), false),
        t => (t, false, true),
    };
    let Type::Path(tp) = inner else { return None };
    let seg = tp.path.segments.last()?;
    let kind = match seg.ident.to_string().as_str() {
        "DistArray" => ArrayKind::Dense,
        "SparseArray" => ArrayKind::Sparse,
        _ => return None,
    };
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        cx.error_spanned_by(seg, "write the array type in full: `DistArray<f32, 2>`");
        return None;
    };
    let mut it = args.args.iter();
    let (Some(GenericArgument::Type(elem)), Some(rank_arg), None) =
        (it.next(), it.next(), it.next())
    else {
        cx.error_spanned_by(args, "expected `<element type, rank>`, e.g. `<f32, 2>`");
        return None;
    };
    let rank = match rank_arg {
        GenericArgument::Const(Expr::Lit(l)) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<usize>().ok(),
            _ => None,
        },
        _ => None,
    };
    let Some(rank) = rank.filter(|r| *r >= 1) else {
        cx.error_spanned_by(
            rank_arg,
            "write the array's rank as an integer literal (1, 2, 3, ..) so strads can analyse \
             its subscripts",
        );
        return None;
    };
    Some((kind, elem.clone(), rank, mutable, owned))
}

fn strip_group(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_group(&p.expr),
        Expr::Group(g) => strip_group(&g.expr),
        e => e,
    }
}

/// Number types whose name is a path's first segment in `f64::MIN`, `u64::from(x)`.
pub(crate) const NUMBER_TYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize",
];

fn number_type(name: &str) -> Option<Type> {
    NUMBER_TYPES
        .contains(&name)
        .then(|| syn::parse_str(name).expect("a type name"))
}

/// The type of a local's value when the expression says it without inference: a suffixed
/// literal (`0u64`, `0.0f64`), `true`, a string literal, a number type's constant or
/// conversion (`f64::MIN`, `std::f64::consts::PI`, `u64::from(x)`), a cast (`x as f32`),
/// `.len()` and `shape()[k]` (`usize`), a variable of known type, and arithmetic or
/// float methods (`abs`, `sqrt`, `max`, ..) of those. `None` otherwise (`0.0` alone could
/// be `f32` or `f64`).
pub(crate) fn evident_type(e: &Expr, known: &[OuterVar]) -> Option<Type> {
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
                [one] => known
                    .iter()
                    .rev()
                    .find(|v| v.ident == one)
                    .and_then(|v| v.ty.clone()),
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
            "len" if m.args.is_empty() => Some(syn::parse_quote!(usize)),
            "abs" | "sqrt" | "ln" | "exp" | "powi" | "powf" | "max" | "min" | "floor" | "ceil"
            | "round" | "recip" | "clamp" => evident_type(&m.receiver, known),
            _ => None,
        },
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

/// Every ident a pattern binds, with whether it is bound `mut`.
pub(crate) fn collect_idents(pat: &Pat, out: &mut Vec<(syn::Ident, bool)>) {
    match pat {
        Pat::Ident(pi) => {
            out.push((pi.ident.clone(), pi.mutability.is_some()));
            if let Some((_, sub)) = &pi.subpat {
                collect_idents(sub, out);
            }
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|p| collect_idents(p, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|p| collect_idents(p, out)),
        Pat::Slice(s) => s.elems.iter().for_each(|p| collect_idents(p, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| collect_idents(&f.pat, out)),
        Pat::Reference(r) => collect_idents(&r.pat, out),
        Pat::Type(t) => collect_idents(&t.pat, out),
        Pat::Or(o) => {
            if let Some(first) = o.cases.first() {
                collect_idents(first, out);
            }
        }
        Pat::Paren(p) => collect_idents(&p.pat, out),
        _ => {}
    }
}

fn strip_ref(e: &Expr) -> &Expr {
    match e {
        Expr::Reference(r) if r.mutability.is_none() => strip_ref(&r.expr),
        Expr::Paren(p) => strip_ref(&p.expr),
        e => e,
    }
}

/// Whether the loop iterates `a.iter_mut()`.
fn is_iter_mut(expr: &Expr) -> bool {
    matches!(strip_ref(expr), Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty())
}

fn space_of(cx: &Ctxt, expr: &Expr, arrays: &[ArrayVar]) -> Option<SpaceSrc> {
    let e = strip_ref(expr);
    let e = match e {
        // `a.iter()` is the same as `a`; `a.iter_mut()` too, with mutable values.
        Expr::MethodCall(m)
            if (m.method == "iter" || m.method == "iter_mut") && m.args.is_empty() =>
        {
            strip_ref(&m.receiver)
        }
        e => e,
    };
    match e {
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let name = p.path.get_ident().map(|i| i.to_string());
            match arrays
                .iter()
                .position(|a| Some(a.ident.to_string()) == name)
            {
                Some(a) => Some(SpaceSrc::Array(a)),
                None => {
                    cx.error_spanned_by(
                        expr,
                        "strads cannot see what this iterates over; iterate a `&SparseArray` or \
                         `&DistArray` parameter, or a range `a..b`",
                    );
                    None
                }
            }
        }
        Expr::Range(ExprRange {
            start: Some(start),
            end: Some(end),
            limits,
            ..
        }) => Some(SpaceSrc::Range {
            start: start.clone(),
            end: end.clone(),
            inclusive: matches!(limits, RangeLimits::Closed(_)),
        }),
        Expr::Range(r) => {
            cx.error_spanned_by(r, "the range needs both bounds: `a..b` or `a..=b`");
            None
        }
        other => {
            cx.error_spanned_by(
                other,
                "unsupported iteration expression; a `#[parallel_for]` loop iterates a \
                 `&SparseArray` or `&DistArray` parameter (`for (key, value) in ratings`), or \
                 a range (`for i in 0..n`)",
            );
            None
        }
    }
}

fn key_of_array(cx: &Ctxt, pat: &Pat, rank: usize) -> Option<(KeyPat, usize)> {
    let Pat::Tuple(t) = pat else {
        cx.error_spanned_by(
            pat,
            format!(
                "iterating an array yields `(index, &value)`; write the pattern as \
                 `([{}], value)`",
                dim_idents(rank)
            ),
        );
        return None;
    };
    if t.elems.len() != 2 {
        cx.error_spanned_by(
            t,
            "iterating an array yields `(index, &value)`: a pair, not this tuple",
        );
        return None;
    }
    let key = match &t.elems[0] {
        Pat::Slice(s) => {
            if s.elems.len() != rank {
                cx.error_spanned_by(
                    s,
                    format!(
                        "the array has {rank} dims, so its index has {rank} elements: `[{}]`",
                        dim_idents(rank)
                    ),
                );
                return None;
            }
            let mut dims = Vec::new();
            for e in &s.elems {
                match e {
                    Pat::Ident(pi) if pi.subpat.is_none() => dims.push(Some(pi.ident.clone())),
                    Pat::Wild(_) => dims.push(None),
                    other => {
                        cx.error_spanned_by(other, "bind each index with a plain name or `_`");
                        return None;
                    }
                }
            }
            KeyPat::Elems(dims)
        }
        Pat::Ident(pi) if pi.subpat.is_none() => KeyPat::Whole(pi.ident.clone()),
        Pat::Wild(_) => KeyPat::Ignored,
        other => {
            cx.error_spanned_by(
                other,
                format!("bind the index as `[{}]` or as one name", dim_idents(rank)),
            );
            return None;
        }
    };
    Some((key, rank))
}

fn key_of_range(cx: &Ctxt, pat: &Pat) -> Option<KeyPat> {
    match pat {
        Pat::Ident(pi) if pi.subpat.is_none() => Some(KeyPat::Range(Some(pi.ident.clone()))),
        Pat::Wild(_) => Some(KeyPat::Range(None)),
        other => {
            cx.error_spanned_by(
                other,
                "bind the range's index with a plain name: `for i in a..b`",
            );
            None
        }
    }
}

fn dim_idents(rank: usize) -> String {
    const NAMES: [&str; 6] = ["i", "j", "k", "l", "m", "n"];
    (0..rank)
        .map(|d| NAMES.get(d).copied().unwrap_or("_"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The span of the `for` token, for errors about the loop as a whole.
pub(crate) fn for_span(l: &ExprForLoop) -> Span {
    l.for_token.span()
}
