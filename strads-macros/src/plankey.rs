//! Which captured values and which written arrays a reconnaissance plan depends on.
//!
//! Reconnaissance records the elements every iteration touches with the captured values of
//! that call; a later call may reuse the plan only if they would be touched again. That
//! holds when every captured value that can reach a subscript or decide which accesses run
//! (a condition, a loop's bounds, a `match`, the left side of `&&`/`||`, a method taking a
//! closure) is the same. This module finds those values, over-approximating: it follows
//! values by name (shadowing is ignored) through `let`s, assignments, `&mut` borrows and
//! method calls on a variable, to a fixed point. Values that only flow into array elements
//! (a learning rate) are left out, so changing them does not re-record the loop.
//!
//! The same question asked of the arrays the loop writes finds those whose element values
//! steer its accesses (`counts[assign[i]] -= 1`): the recording reads them as they are and
//! the plan is keyed by them (`ArraySpec::steers`). The length of a row (`w.row_mut(u)`)
//! is the array's shape, not its values: `for k in 0..wu.len()` steers nothing.

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
    let mut rows = RowBindings::default();
    rows.visit_block(body);
    let mut c = Collect {
        roots: BTreeSet::new(),
        flows: Vec::new(),
        arrays,
        rows: rows.rows.difference(&rows.others).cloned().collect(),
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
    /// Names bound only to rows of arrays (`let (wu, hi) = (w.row_mut(u), h.row(i))`).
    rows: BTreeSet<String>,
}

/// The names the body binds to rows of arrays, and those it binds to anything else.
#[derive(Default)]
struct RowBindings {
    rows: BTreeSet<String>,
    others: BTreeSet<String>,
}

fn is_row(e: &Expr) -> bool {
    matches!(e, Expr::MethodCall(m) if (m.method == "row" || m.method == "row_mut")
        && matches!(&*m.receiver, Expr::Path(_)))
}

impl RowBindings {
    fn bind(&mut self, pat: &Pat, init: Option<&Expr>) {
        match (pat, init) {
            (Pat::Ident(pi), Some(e)) if pi.subpat.is_none() && is_row(e) => {
                self.rows.insert(pi.ident.to_string());
            }
            (Pat::Tuple(pt), Some(Expr::Tuple(t))) if pt.elems.len() == t.elems.len() => {
                for (p, e) in pt.elems.iter().zip(&t.elems) {
                    self.bind(p, Some(e));
                }
            }
            (Pat::Type(pt), init) => self.bind(&pt.pat, init),
            (p, _) => self.others.extend(pat_idents(p)),
        }
    }
}

impl<'ast> Visit<'ast> for RowBindings {
    fn visit_local(&mut self, l: &'ast syn::Local) {
        self.bind(&l.pat, l.init.as_ref().map(|i| &*i.expr));
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if let Some((_, els)) = &init.diverge {
                self.visit_expr(els);
            }
        }
    }

    fn visit_pat(&mut self, p: &'ast Pat) {
        // Every other binding (closure parameters, `for` and `match` patterns, `if let`).
        if let Pat::Ident(pi) = p {
            self.others.insert(pi.ident.to_string());
        }
        syn::visit::visit_pat(self, p);
    }
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
    /// The names `e`'s value depends on: [`idents`], but the shape of an array or of a
    /// row (`a.shape()`, `wu.len()`) depends on no element's value.
    fn value_idents(&self, e: &Expr) -> BTreeSet<String> {
        struct Values<'c> {
            rows: &'c BTreeSet<String>,
            arrays: &'c BTreeSet<String>,
            out: BTreeSet<String>,
        }
        impl<'e> Visit<'e> for Values<'_> {
            fn visit_expr_method_call(&mut self, m: &'e syn::ExprMethodCall) {
                let of = |names: &BTreeSet<String>| {
                    matches!(&*m.receiver, Expr::Path(p)
                        if p.path.get_ident().is_some_and(|i| names.contains(&i.to_string())))
                };
                let shape = match m.method.to_string().as_str() {
                    "len" | "is_empty" => of(self.rows) || of(self.arrays),
                    "shape" | "row_len" | "nrows" | "ncols" => of(self.arrays),
                    _ => false,
                };
                if !shape {
                    self.visit_expr(&m.receiver);
                }
                m.args.iter().for_each(|a| self.visit_expr(a));
            }
            fn visit_ident(&mut self, i: &'e proc_macro2::Ident) {
                self.out.insert(i.to_string());
            }
            fn visit_macro(&mut self, m: &'e syn::Macro) {
                token_idents(m.tokens.clone(), &mut self.out);
            }
        }
        let mut v = Values {
            rows: &self.rows,
            arrays: self.arrays,
            out: BTreeSet::new(),
        };
        v.visit_expr(e);
        v.out
    }

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
                let ix = self.value_idents(&i.index);
                self.roots.extend(ix);
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                // `a.row(e)`, `a.get([..])`: the receiver is the array itself, not one of
                // its elements (`a[[i]].min(x)` takes a value).
                let receiver_is_array = matches!(&*m.receiver, Expr::Path(p)
                    if p.path.get_ident().is_some_and(|i| self.arrays.contains(&i.to_string())));
                if receiver_is_array
                    || matches!(name.as_str(), "row" | "row_mut" | "get" | "get_mut")
                {
                    // Subscripts given to an array's methods.
                    for a in &m.args {
                        self.roots.extend(self.value_idents(a));
                    }
                }
                if has_closure(m.args.iter()) {
                    // How often, and with what, the closure runs.
                    self.roots.extend(self.value_idents(&m.receiver));
                    for a in m.args.iter().filter(|a| !matches!(a, Expr::Closure(_))) {
                        self.roots.extend(self.value_idents(a));
                    }
                }
                // A method may update its receiver from its arguments (`v.push(x)`).
                let mut sources = BTreeSet::new();
                for a in &m.args {
                    sources.extend(self.value_idents(a));
                }
                self.root_flow(&m.receiver, sources);
                self.mut_borrows(m, e);
            }
            Expr::Call(c) => {
                if has_closure(c.args.iter()) {
                    self.roots.extend(self.value_idents(&c.func));
                    for a in c.args.iter().filter(|a| !matches!(a, Expr::Closure(_))) {
                        self.roots.extend(self.value_idents(a));
                    }
                }
                self.mut_borrows(c, e);
            }
            Expr::If(i) => {
                let v = self.value_idents(&i.cond);
                self.roots.extend(v);
            }
            Expr::While(w) => {
                let v = self.value_idents(&w.cond);
                self.roots.extend(v);
            }
            Expr::ForLoop(f) => {
                let v = self.value_idents(&f.expr);
                self.roots.extend(v.iter().cloned());
                self.flows.push((idents(&f.pat), v));
            }
            Expr::Match(m) => {
                self.roots.extend(self.value_idents(&m.expr));
                for arm in &m.arms {
                    if let Some((_, g)) = &arm.guard {
                        self.roots.extend(self.value_idents(g));
                    }
                    self.flows
                        .push((idents(&arm.pat), self.value_idents(&m.expr)));
                }
            }
            Expr::Let(l) => {
                self.roots.extend(self.value_idents(&l.expr));
                self.flows
                    .push((idents(&l.pat), self.value_idents(&l.expr)));
            }
            Expr::Binary(b) => {
                use syn::BinOp::*;
                match b.op {
                    And(_) | Or(_) => self.roots.extend(self.value_idents(&b.left)),
                    AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
                    | BitXorAssign(_) | BitAndAssign(_) | BitOrAssign(_) | ShlAssign(_)
                    | ShrAssign(_) => {
                        let mut sources = self.value_idents(&b.right);
                        sources.extend(self.value_idents(&b.left));
                        self.root_flow(&b.left, sources);
                    }
                    _ => {}
                }
            }
            Expr::Assign(a) => {
                let mut sources = self.value_idents(&a.right);
                sources.extend(self.value_idents(&a.left));
                self.root_flow(&a.left, sources);
                self.mut_borrows(a, &a.right);
            }
            Expr::Try(t) => self.roots.extend(self.value_idents(&t.expr)),
            Expr::Macro(m) => self.roots.extend(idents(&m.mac.tokens)),
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            let targets = pat_idents(&l.pat);
            self.flows.push((targets, self.value_idents(&init.expr)));
            if init.diverge.is_some() {
                // `let .. else`: the pattern decides whether the iteration goes on.
                self.roots.extend(self.value_idents(&init.expr));
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

    /// Asked of the arrays: those whose element values reach a subscript (directly,
    /// through locals, through a local assigned or borrowed later), a condition, an inner
    /// loop's range or a `match`; not those only read into stored values, nor a row whose
    /// length bounds a loop.
    #[test]
    fn arrays_that_steer_the_accesses() {
        let arrays: BTreeSet<String> = ["assign", "counts", "w", "v", "b", "c", "d", "e", "out"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let steer = |body: &str| {
            let body: syn::Block = syn::parse_str(body).unwrap();
            steering(&body, &arrays, &arrays)
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            steer("{ counts[assign[i] as usize] -= 1; w[i] = v[i] * 2.0; }"),
            ["assign"]
        );
        assert_eq!(
            steer(
                "{ let mut j = 0; j += assign[i] as usize; out[j] += 1.0; \
                   if b[i] > 0.0 { out[i] += 1.0; } let x = c[i]; out[i] = x; \
                   for k in 0..d[i] as usize { out[k] += 1.0; } \
                   match e[i] { 0 => continue, _ => {} } }"
            ),
            ["assign", "b", "d", "e"]
        );
        assert_eq!(
            steer("{ let mut j = 0; set(&mut j, v[i]); out[j] += 1.0; }"),
            ["v"]
        );
        // A row's length is the shape; its values still steer when they reach a subscript.
        assert_eq!(
            steer(
                "{ let (wu, hi) = (w.row_mut(u), out.row_mut(i)); \
                   for k in 0..wu.len() { wu[k] += hi[k]; } }"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            steer("{ let wu = w.row(u); counts[wu[0] as usize] += 1; }"),
            ["w"]
        );
        // Shapes are not values.
        assert_eq!(
            steer(
                "{ for j in (1..out.shape()[1] - 1).step_by(2) { out[[i, j.min(w.len() - 1)]] = 0.0; } }"
            ),
            Vec::<String>::new()
        );
        // A method of an element takes a value, not a subscript.
        assert_eq!(
            steer(
                "{ let best = out[[i, j + 1]].min(out[[i + 1, j]]); out[[i + 1, j + 1]] = best; }"
            ),
            Vec::<String>::new()
        );
        // A name also bound to something else is not a row.
        assert_eq!(
            steer("{ let wu = w.row(u); let wu = v.row(i); for k in 0..wu.len() {} }"),
            Vec::<String>::new()
        );
        assert_eq!(
            steer("{ let wu = w.row(u); { let wu = c.clone(); for k in 0..wu.len() {} } }"),
            ["c", "w"]
        );
    }
}
