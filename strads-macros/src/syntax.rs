//! Helpers over syn's syntax tree that know nothing of strads' model: an expression
//! without its parentheses, the names a pattern binds, an integer literal's value, the
//! number types, the `for` token of a loop. They depend on no other module of the crate.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, ExprForLoop, Pat};

/// `e` without the parentheses (and invisible groups) around it.
pub(crate) fn strip_group(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_group(&p.expr),
        Expr::Group(g) => strip_group(&g.expr),
        e => e,
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

/// The value of an integer literal, maybe parenthesized or with a suffix (`2`, `(4usize)`).
pub(crate) fn int_literal(e: &Expr) -> Option<i64> {
    match strip_group(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<i64>().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// Number types whose name is a path's first segment in `f64::MIN`, `u64::from(x)`.
pub(crate) const NUMBER_TYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize",
];

/// The span of the `for` token, for errors about the loop as a whole.
pub(crate) fn for_span(l: &ExprForLoop) -> Span {
    l.for_token.span()
}
