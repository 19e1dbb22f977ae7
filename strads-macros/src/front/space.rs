//! The loop's iteration space and key pattern: an array (`for ([u, i], v) in ratings`,
//! maybe `.iter()` or `.iter_mut()`) or ranges `a..b`, `a..=b`, `(a..b).step_by(s)`; the
//! pattern binds one name (or `_`) per dim. Anything else is an error at its token, so a
//! space that parses is one the runtime can partition.

use syn::{Expr, ExprRange, Pat, RangeLimits};

use crate::arrays::ArrayVar;
use crate::ctxt::Ctxt;
use crate::syntax::int_literal;

/// What the loop iterates over.
pub(crate) enum SpaceSrc {
    /// An array variable (index into `LoopFn::arrays`).
    Array(usize),
    /// `start..end` or `start..=end` (each maybe `.step_by(s)`): one per loop of a perfect
    /// nest `for i in a..b { for j in c..d { .. } }`, outermost first.
    Range { dims: Vec<RangeDim> },
}

/// One range loop of the iteration space.
pub(crate) struct RangeDim {
    pub(crate) start: Box<Expr>,
    pub(crate) end: Box<Expr>,
    pub(crate) inclusive: bool,
    /// `(a..b).step_by(step)`.
    pub(crate) step: Option<Box<Expr>>,
}

impl RangeDim {
    /// The step when it is an integer literal (`1` without `step_by`).
    pub(crate) fn literal_step(&self) -> Option<i64> {
        match &self.step {
            None => Some(1),
            Some(e) => int_literal(e),
        }
    }

    /// The start when it is an integer literal.
    pub(crate) fn literal_start(&self) -> Option<i64> {
        int_literal(&self.start)
    }
}

/// How the loop pattern binds the iteration index.
pub(crate) enum KeyPat {
    /// `([u, i], v)`: one ident (or `_`) per dim.
    Elems(Vec<Option<syn::Ident>>),
    /// `(key, v)`: the whole index array.
    Whole(syn::Ident),
    /// `(_, v)`.
    Ignored,
    /// `i` of a range loop; `i`, `j`, .. of a perfect nest of range loops.
    Range(Vec<Option<syn::Ident>>),
}

pub(super) fn space_of(cx: &Ctxt, expr: &Expr, arrays: &[ArrayVar]) -> Option<SpaceSrc> {
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
            start: Some(_),
            end: Some(_),
            ..
        }) => Some(SpaceSrc::Range {
            dims: vec![range_dim(e).expect("a range with both bounds")],
        }),
        Expr::MethodCall(m) if m.method == "step_by" => match range_dim(e) {
            Some(d) => Some(SpaceSrc::Range { dims: vec![d] }),
            None => {
                cx.error_spanned_by(
                    expr,
                    "`step_by` iterates a range with both bounds: `(a..b).step_by(s)`",
                );
                None
            }
        },
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

/// `a..b`, `a..=b`, `(a..b).step_by(s)`.
pub(super) fn range_dim(e: &Expr) -> Option<RangeDim> {
    match strip_ref(e) {
        Expr::Range(ExprRange {
            start: Some(start),
            end: Some(end),
            limits,
            ..
        }) => Some(RangeDim {
            start: start.clone(),
            end: end.clone(),
            inclusive: matches!(limits, RangeLimits::Closed(_)),
            step: None,
        }),
        Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
            let mut d = range_dim(&m.receiver).filter(|d| d.step.is_none())?;
            d.step = Some(Box::new(m.args[0].clone()));
            Some(d)
        }
        _ => None,
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
pub(super) fn is_iter_mut(expr: &Expr) -> bool {
    matches!(strip_ref(expr), Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty())
}

pub(super) fn key_of_array(cx: &Ctxt, pat: &Pat, rank: usize) -> Option<(KeyPat, usize)> {
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

pub(super) fn key_of_range(cx: &Ctxt, pat: &Pat) -> Option<Option<syn::Ident>> {
    match pat {
        Pat::Ident(pi) if pi.subpat.is_none() => Some(Some(pi.ident.clone())),
        Pat::Wild(_) => Some(None),
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
