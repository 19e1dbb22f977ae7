//! Perfect nests: the range loops nested in a range loop that become dims of its
//! iteration space (`perfect_nest`). A loop joins the nest only when flattening cannot
//! change what the body does: its bounds are computable before the outer loop, and no jump
//! in the innermost body leaves a loop of the nest.

use syn::{Expr, ExprForLoop, Pat, Stmt};

use super::OuterVar;
use super::space::{RangeDim, range_dim};
use crate::arrays::ArrayVar;
use crate::syntax::collect_idents;

/// The body of the innermost loop of a perfect nest of `levels` loops below `l`.
pub(crate) fn innermost_body_mut(l: &mut ExprForLoop, levels: usize) -> &mut syn::Block {
    if levels == 0 {
        return &mut l.body;
    }
    match l.body.stmts.first_mut() {
        Some(Stmt::Expr(Expr::ForLoop(inner), _)) => innermost_body_mut(inner, levels - 1),
        _ => unreachable!("a perfect nest holds one loop per level"),
    }
}

/// The loops perfectly nested in `l` that become dims of the iteration space, their ranges
/// appended to `dims`: while a loop's body is exactly one `for` loop over a range whose
/// bounds do not depend on the indices bound so far (nor on anything the loop may change),
/// and nothing in the innermost body jumps out of it or to an outer loop of the nest.
pub(super) fn perfect_nest(
    l: &ExprForLoop,
    arrays: &[ArrayVar],
    outer: &[OuterVar],
    dims: &mut Vec<RangeDim>,
) -> Vec<ExprForLoop> {
    let mut nest: Vec<ExprForLoop> = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    let mut cur = l;
    loop {
        let mut names = Vec::new();
        collect_idents(&cur.pat, &mut names);
        bound.extend(names.into_iter().map(|(i, _)| i.to_string()));
        let [Stmt::Expr(Expr::ForLoop(inner), _)] = cur.body.stmts.as_slice() else {
            break;
        };
        let pure = |e: &Expr| pure_bound(e, arrays, outer, &bound);
        let Some(dim) = range_dim(&inner.expr)
            .filter(|d| pure(&d.start) && pure(&d.end) && d.step.as_deref().is_none_or(pure))
        else {
            break;
        };
        let fresh_name = match &*inner.pat {
            Pat::Ident(pi) => {
                pi.subpat.is_none() && pi.by_ref.is_none() && !bound.contains(&pi.ident.to_string())
            }
            Pat::Wild(_) => true,
            _ => false,
        };
        if !inner.attrs.is_empty() || !fresh_name {
            break;
        }
        nest.push(inner.clone());
        dims.push(dim);
        cur = inner;
    }
    // Jumps in the innermost body: cut the nest above the loops they leave or continue.
    while !nest.is_empty() {
        let labels: Vec<Option<String>> = std::iter::once(l)
            .chain(nest.iter())
            .map(|l| l.label.as_ref().map(|x| x.name.ident.to_string()))
            .collect();
        let body = &nest.last().expect("not empty").body;
        let mut j = Jumps {
            labels: &labels,
            depth: 0,
            escapes: false,
        };
        syn::visit::Visit::visit_block(&mut j, body);
        if !j.escapes {
            break;
        }
        nest.pop();
        dims.pop();
    }
    nest
}

/// Finds `break` or `continue` in the innermost body of a nest that a flattened iteration
/// could not express: any `break` of the innermost loop, any jump to an outer loop of the
/// nest. (`continue` of the innermost loop ends the iteration.)
struct Jumps<'a> {
    /// Labels of the nest's loops, outermost first.
    labels: &'a [Option<String>],
    /// Loops nested inside the body.
    depth: usize,
    escapes: bool,
}

impl<'ast> syn::visit::Visit<'ast> for Jumps<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        let (label, is_break) = match e {
            Expr::Break(b) => (Some(&b.label), true),
            Expr::Continue(c) => (Some(&c.label), false),
            _ => (None, false),
        };
        if let Some(label) = label {
            let innermost = self.labels.len() - 1;
            let target = match label {
                Some(l) => self
                    .labels
                    .iter()
                    .position(|x| x.as_deref() == Some(&l.ident.to_string())),
                None => (self.depth == 0).then_some(innermost),
            };
            match target {
                Some(t) if t < innermost || is_break => self.escapes = true,
                _ => {}
            }
        }
        match e {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.depth += 1;
                syn::visit::visit_expr(self, e);
                self.depth -= 1;
            }
            Expr::Closure(_) => {}
            _ => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// Whether a bound of an inner loop can be computed once before the loop: it reads no
/// index of the nest, no variable the function may change, and of arrays only their shape.
fn pure_bound(e: &Expr, arrays: &[ArrayVar], outer: &[OuterVar], bound: &[String]) -> bool {
    let pure = |e: &Expr| pure_bound(e, arrays, outer, bound);
    match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => match p.path.get_ident() {
            Some(i) => {
                let name = i.to_string();
                // Not an index, not an array's elements, not a variable that may change
                // (an unknown name is a constant or a static).
                !bound.contains(&name)
                    && !arrays.iter().any(|a| a.ident == name)
                    && !outer.iter().any(|o| o.ident == name && o.mutable)
            }
            // `usize::MAX`, a constant's path.
            None => p.qself.is_none(),
        },
        Expr::Paren(p) => pure(&p.expr),
        Expr::Group(g) => pure(&g.expr),
        Expr::Cast(c) => pure(&c.expr),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && pure(&u.expr),
        Expr::Binary(b) => {
            use syn::BinOp::*;
            matches!(
                b.op,
                Add(_)
                    | Sub(_)
                    | Mul(_)
                    | Div(_)
                    | Rem(_)
                    | Shl(_)
                    | Shr(_)
                    | BitAnd(_)
                    | BitOr(_)
                    | BitXor(_)
            ) && pure(&b.left)
                && pure(&b.right)
        }
        Expr::Field(f) => pure(&f.base),
        // `a.len()`, `a.shape()[0]` of an array: its shape, which the loop cannot change.
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "len" | "shape" | "nrows" | "ncols"
            ) =>
        {
            m.args.is_empty()
                && match &*m.receiver {
                    Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                        let name = i.to_string();
                        !bound.contains(&name)
                            && (arrays.iter().any(|a| a.ident == name)
                                || outer.iter().any(|o| o.ident == name && !o.mutable))
                    }),
                    r => pure(r),
                }
        }
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "min" | "max" | "saturating_sub" | "saturating_add"
            ) =>
        {
            pure(&m.receiver) && m.args.iter().all(pure)
        }
        Expr::Index(ix) => {
            matches!(&*ix.expr, Expr::MethodCall(m) if m.method == "shape")
                && pure(&ix.expr)
                && pure(&ix.index)
        }
        _ => false,
    }
}
