//! Which captured values a reconnaissance plan depends on.
//!
//! Reconnaissance records the elements every iteration touches with the captured values of
//! that call; a later call may reuse the plan only if they would be touched again. That
//! holds when every captured value that can reach a subscript or decide which accesses run
//! (a condition, a loop's bounds, a `match`, the left side of `&&`/`||`, a method taking a
//! closure) is the same. This module finds those values, over-approximating: it follows
//! values by name (shadowing is ignored) through `let`s, assignments, `&mut` borrows and
//! method calls on a variable, to a fixed point. Values that only flow into array elements
//! (a learning rate) are left out, so changing them does not re-record the loop.

use std::collections::BTreeSet;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;
use syn::{Expr, Pat};

/// The names in `candidates` (captured values) that may steer the accesses of `body`.
/// `arrays` are the loop's arrays: what is written into their elements steers nothing
/// here (their contents are keyed apart).
pub(crate) fn steering(
    body: &syn::Block,
    candidates: &BTreeSet<String>,
    arrays: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut c = Collect {
        roots: BTreeSet::new(),
        flows: Vec::new(),
        arrays,
    };
    c.visit_block(body);
    let mut tainted = c.roots;
    loop {
        let before = tainted.len();
        for (targets, sources) in &c.flows {
            if targets.iter().any(|t| tainted.contains(t)) {
                tainted.extend(sources.iter().cloned());
            }
        }
        if tainted.len() == before {
            break;
        }
    }
    candidates.intersection(&tainted).cloned().collect()
}

struct Collect<'a> {
    /// Names whose values reach a subscript or decide control flow directly.
    roots: BTreeSet<String>,
    /// `(targets, sources)`: when any target steers accesses, so do the sources.
    flows: Vec<(BTreeSet<String>, BTreeSet<String>)>,
    arrays: &'a BTreeSet<String>,
}

/// Every identifier in `tokens` (macro bodies included).
fn token_idents(tokens: TokenStream, out: &mut BTreeSet<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            TokenTree::Group(g) => token_idents(g.stream(), out),
            _ => {}
        }
    }
}

fn idents(e: &impl quote::ToTokens) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    token_idents(e.to_token_stream(), &mut out);
    out
}

/// The variable a place expression lives in: `v` of `v`, `v.0`, `v[k]`, `*v`, `v.f(..)`.
fn root(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        Expr::Field(f) => root(&f.base),
        Expr::Index(i) => root(&i.expr),
        Expr::Unary(u) => root(&u.expr),
        Expr::Paren(p) => root(&p.expr),
        Expr::MethodCall(m) => root(&m.receiver),
        Expr::Reference(r) => root(&r.expr),
        _ => None,
    }
}

impl Collect<'_> {
    fn root_flow(&mut self, place: &Expr, sources: BTreeSet<String>) {
        if let Some(r) = root(place)
            && !self.arrays.contains(&r)
        {
            self.flows.push((BTreeSet::from([r]), sources));
        }
    }

    /// `&mut e` inside `within`: whatever `within` computes may be written into `e`.
    fn mut_borrows(&mut self, within: &impl quote::ToTokens, e: &Expr) {
        struct Borrows<'e>(Vec<&'e Expr>);
        impl<'e> Visit<'e> for Borrows<'e> {
            fn visit_expr_reference(&mut self, r: &'e syn::ExprReference) {
                if r.mutability.is_some() {
                    self.0.push(&r.expr);
                }
                syn::visit::visit_expr_reference(self, r);
            }
        }
        let mut b = Borrows(Vec::new());
        b.visit_expr(e);
        let all = idents(within);
        for place in b.0 {
            self.root_flow(place, all.clone());
        }
    }
}

fn has_closure<'e>(mut args: impl Iterator<Item = &'e Expr>) -> bool {
    args.any(|a| matches!(a, Expr::Closure(_)))
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Index(i) => {
                let ix = idents(&i.index);
                self.roots.extend(ix);
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                let receiver_is_array = root(&m.receiver).is_some_and(|r| self.arrays.contains(&r));
                if receiver_is_array
                    || matches!(name.as_str(), "row" | "row_mut" | "get" | "get_mut")
                {
                    // Subscripts given to an array's methods.
                    for a in &m.args {
                        self.roots.extend(idents(a));
                    }
                }
                if has_closure(m.args.iter()) {
                    // How often, and with what, the closure runs.
                    self.roots.extend(idents(&m.receiver));
                    for a in m.args.iter().filter(|a| !matches!(a, Expr::Closure(_))) {
                        self.roots.extend(idents(a));
                    }
                }
                // A method may update its receiver from its arguments (`v.push(x)`).
                let mut sources = BTreeSet::new();
                for a in &m.args {
                    sources.extend(idents(a));
                }
                self.root_flow(&m.receiver, sources);
                self.mut_borrows(m, e);
            }
            Expr::Call(c) => {
                if has_closure(c.args.iter()) {
                    self.roots.extend(idents(&c.func));
                    for a in c.args.iter().filter(|a| !matches!(a, Expr::Closure(_))) {
                        self.roots.extend(idents(a));
                    }
                }
                self.mut_borrows(c, e);
            }
            Expr::If(i) => self.roots.extend(idents(&i.cond)),
            Expr::While(w) => self.roots.extend(idents(&w.cond)),
            Expr::ForLoop(f) => {
                self.roots.extend(idents(&f.expr));
                self.flows.push((idents(&f.pat), idents(&f.expr)));
            }
            Expr::Match(m) => {
                self.roots.extend(idents(&m.expr));
                for arm in &m.arms {
                    if let Some((_, g)) = &arm.guard {
                        self.roots.extend(idents(g));
                    }
                    self.flows.push((idents(&arm.pat), idents(&m.expr)));
                }
            }
            Expr::Let(l) => {
                self.roots.extend(idents(&l.expr));
                self.flows.push((idents(&l.pat), idents(&l.expr)));
            }
            Expr::Binary(b) => {
                use syn::BinOp::*;
                match b.op {
                    And(_) | Or(_) => self.roots.extend(idents(&b.left)),
                    AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
                    | BitXorAssign(_) | BitAndAssign(_) | BitOrAssign(_) | ShlAssign(_)
                    | ShrAssign(_) => {
                        let mut sources = idents(&b.right);
                        sources.extend(idents(&b.left));
                        self.root_flow(&b.left, sources);
                    }
                    _ => {}
                }
            }
            Expr::Assign(a) => {
                let mut sources = idents(&a.right);
                sources.extend(idents(&a.left));
                self.root_flow(&a.left, sources);
                self.mut_borrows(a, &a.right);
            }
            Expr::Try(t) => self.roots.extend(idents(&t.expr)),
            Expr::Macro(m) => self.roots.extend(idents(&m.mac.tokens)),
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            let targets = pat_idents(&l.pat);
            self.flows.push((targets, idents(&init.expr)));
            if init.diverge.is_some() {
                // `let .. else`: the pattern decides whether the iteration goes on.
                self.roots.extend(idents(&init.expr));
            }
            self.mut_borrows(l, &init.expr);
        }
        syn::visit::visit_local(self, l);
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.roots.extend(idents(&m.mac.tokens));
        syn::visit::visit_stmt_macro(self, m);
    }
}

fn pat_idents(p: &Pat) -> BTreeSet<String> {
    idents(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steer(body: &str, caps: &[&str]) -> Vec<String> {
        let body: syn::Block = syn::parse_str(body).unwrap();
        let caps = caps.iter().map(|s| s.to_string()).collect();
        let arrays = ["a", "w", "idx"].iter().map(|s| s.to_string()).collect();
        steering(&body, &caps, &arrays).into_iter().collect()
    }

    #[test]
    fn values_reaching_subscripts_or_control_flow_steer() {
        let caps = ["lr", "offset", "n", "c", "t"];
        // Only into elements: nothing steers.
        assert_eq!(
            steer("{ w[idx[i] as usize] -= lr * 2.0; }", &caps),
            Vec::<String>::new()
        );
        // Directly and through a `let`.
        assert_eq!(
            steer("{ let j = idx[i] as usize + offset; a[j] += lr; }", &caps),
            ["offset"]
        );
        // Through a mutated local, a condition, a loop bound, `&&`.
        assert_eq!(
            steer(
                "{ let mut j = 0; j += offset; if c > 1.0 && t { a[j] = 1.0; } }",
                &caps
            ),
            ["c", "offset", "t"]
        );
        assert_eq!(steer("{ for k in 0..n { a[k] += lr; } }", &caps), ["n"]);
        // Through a `&mut` borrow and a method call on a local.
        assert_eq!(
            steer("{ let mut j = 0; set(&mut j, offset); a[j] = lr; }", &caps),
            ["offset"]
        );
        assert_eq!(
            steer(
                "{ let mut v = Vec::new(); v.push(offset); a[v[0]] = lr; }",
                &caps
            ),
            ["offset"]
        );
        // A macro's tokens count as control flow.
        assert_eq!(steer("{ assert!(n > 0); a[i] = lr; }", &caps), ["n"]);
    }
}
