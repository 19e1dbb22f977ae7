//! Reductions: outer variables the body only accumulates into (`x += e`, `x *= e`,
//! `x = x.max(e)`, `x = x.min(e)`), each by its first operator; every worker gets its own
//! accumulator. Whether the updates qualify (one operator, no reads, `mut`, a type) is
//! `check`'s to judge; a variable without a declared type is no `FoundReduction`.

use syn::Expr;

use super::Walker;
use crate::syntax::strip_group;

/// How a reduction combines per-worker parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReduceOp {
    /// `x += e`.
    Add,
    /// `x *= e`.
    Mul,
    /// `x = x.max(e)`.
    Max,
    /// `x = x.min(e)`.
    Min,
}

impl ReduceOp {
    /// The operator in the loop IR.
    pub(crate) fn ir(self) -> strads_analysis::ReduceOp {
        match self {
            ReduceOp::Add => strads_analysis::ReduceOp::Add,
            ReduceOp::Mul => strads_analysis::ReduceOp::Mul,
            ReduceOp::Max => strads_analysis::ReduceOp::Max,
            ReduceOp::Min => strads_analysis::ReduceOp::Min,
        }
    }

    /// How the user writes it, for messages and the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReduceOp::Add => "+=",
            ReduceOp::Mul => "*=",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }

    pub(crate) fn partial(self) -> &'static str {
        match self {
            ReduceOp::Add => "sum",
            ReduceOp::Mul => "product",
            ReduceOp::Max => "maximum",
            ReduceOp::Min => "minimum",
        }
    }
}

/// An outer variable the loop only accumulates into: each worker gets its own copy.
pub(crate) struct FoundReduction {
    pub(crate) ident: syn::Ident,
    /// The declared type.
    pub(crate) ty: syn::Type,
    pub(crate) op: ReduceOp,
}

impl Walker<'_> {
    /// The outer (non-array) variable a plain path names, unless a local shadows it.
    pub(super) fn outer_scalar(&self, e: &Expr) -> Option<String> {
        let Expr::Path(p) = e else { return None };
        if p.qself.is_some() {
            return None;
        }
        let name = p.path.get_ident()?.to_string();
        (self.lookup(&name).is_none() && self.f.outer_var(&name).is_some()).then_some(name)
    }

    /// Turns the updates into reductions: the variables updated in the body with a declared
    /// type, by their first operator (`check_reductions` in `check/vars.rs` judges the rest).
    /// Reductions are not captures.
    pub(super) fn finish_reductions(&mut self) {
        for var in &self.f.outer {
            let name = var.ident.to_string();
            let Some(ups) = self.found.updates.get(&name) else {
                continue;
            };
            let op = ups[0].0;
            self.found.captures.remove(&name);
            if let Some(ty) = &var.ty {
                self.found.reductions.push(FoundReduction {
                    ident: var.ident.clone(),
                    ty: ty.clone(),
                    op,
                });
            }
        }
    }
}

/// `x.max(e)`, `e.max(x)`, `T::max(x, e)` or `max(e, x)` (and `min`) where `is_var(x)`:
/// the operator and `e`.
pub(super) fn max_min<'e>(
    e: &'e Expr,
    is_var: &dyn Fn(&Expr) -> bool,
) -> Option<(ReduceOp, &'e Expr)> {
    let op_of = |m: &syn::Ident| match m.to_string().as_str() {
        "max" => Some(ReduceOp::Max),
        "min" => Some(ReduceOp::Min),
        _ => None,
    };
    match strip_group(e) {
        Expr::MethodCall(m) if m.args.len() == 1 && m.turbofish.is_none() => {
            let op = op_of(&m.method)?;
            if is_var(&m.receiver) {
                Some((op, &m.args[0]))
            } else if is_var(&m.args[0]) {
                Some((op, &m.receiver))
            } else {
                None
            }
        }
        Expr::Call(c) if c.args.len() == 2 => {
            let Expr::Path(f) = &*c.func else { return None };
            let op = op_of(&f.path.segments.last()?.ident)?;
            if is_var(&c.args[0]) {
                Some((op, &c.args[1]))
            } else if is_var(&c.args[1]) {
                Some((op, &c.args[0]))
            } else {
                None
            }
        }
        _ => None,
    }
}
