//! The strads arrays a loop function names (`ArrayVar`): a `DistArray` or `SparseArray`
//! parameter, or a local annotated with one, its element type and literal rank read off
//! the type (`array_type`). An array is only ever recognised by its written type.

use syn::{Expr, GenericArgument, PathArguments, Type};

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

/// `(kind, element type, rank, mutable, owned)` when `ty` is a strads array type.
pub(crate) fn array_type(cx: &Ctxt, ty: &Type) -> Option<(ArrayKind, Type, usize, bool, bool)> {
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
