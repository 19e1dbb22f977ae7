//! The walk itself: `syn`'s visitor over the loop body, handing each expression, pattern
//! and macro to the walker's concerns (its evaluation, accesses, reductions, facts).

use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{BinOp, Expr, Pat};

use strads_analysis::{AccessKind, Subscript};

use super::Walker;
use super::accesses::META_METHODS;
use super::eval::Sym;
use super::facts::{Fact, is_compound};
use super::mutated::NestedParallelFor;
use super::reductions::{ReduceOp, max_min};
use crate::arrays::ArrayKind;

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.scoped(|w| visit::visit_block(w, b));
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        self.check_nested(&local.attrs);
        // `let g = buf.row_mut(e);`: the row takes only additive updates, checked at each.
        if let (Some(init), Pat::Ident(pi)) = (&local.init, &local.pat) {
            if let Some(a) = self.buffer_row_mut(&init.expr) {
                let saved = std::mem::replace(&mut self.additive, true);
                self.visit_expr(&init.expr);
                self.additive = saved;
                self.bind(pi.ident.to_string(), Sym::BufferRow(a));
                return;
            }
        }
        let sym = local.init.as_ref().map(|init| {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
            self.eval(&init.expr)
        });
        self.bind_pat(&local.pat, sym);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        self.check_nested(std::slice::from_ref(attr));
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        self.check_nested(&c.attrs);
        self.closures += 1;
        let saved_loops = std::mem::take(&mut self.inner_loops);
        self.scoped(|w| {
            for p in &c.inputs {
                w.bind_pat(p, None);
            }
            w.visit_expr(&c.body);
        });
        self.inner_loops = saved_loops;
        self.closures -= 1;
    }

    fn visit_expr_async(&mut self, a: &'ast syn::ExprAsync) {
        self.found.facts.push(Fact::Async(a.to_token_stream()));
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        // Items nested in the body (helper fns, consts) see no loop variables; only a nested
        // `#[parallel_for]` matters.
        NestedParallelFor { walker: self }.visit_item(item);
    }

    fn visit_expr_for_loop(&mut self, l: &'ast syn::ExprForLoop) {
        self.check_nested(&l.attrs);
        self.visit_expr(&l.expr);
        self.inner_loops += 1;
        self.scoped(|w| {
            // `for k in a..b` (or `(a..b).step_by(s)`) walks a whole dim at most: `Full`;
            // other patterns are opaque.
            let full = match &*l.expr {
                Expr::Range(_) => true,
                Expr::MethodCall(m) => {
                    m.method == "step_by"
                        && matches!(&*m.receiver, Expr::Paren(p) if matches!(&*p.expr, Expr::Range(_)))
                }
                _ => false,
            };
            w.bind_pat(&l.pat, full.then_some(Sym::Full));
            w.visit_block(&l.body);
        });
        self.inner_loops -= 1;
    }

    fn visit_expr_while(&mut self, l: &'ast syn::ExprWhile) {
        self.inner_loops += 1;
        self.scoped(|w| visit::visit_expr_while(w, l));
        self.inner_loops -= 1;
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.inner_loops += 1;
        visit::visit_expr_loop(self, l);
        self.inner_loops -= 1;
    }

    fn visit_expr_if(&mut self, e: &'ast syn::ExprIf) {
        // `if let` bindings live in the then-branch only.
        self.scoped(|w| {
            w.visit_expr(&e.cond);
            w.visit_block(&e.then_branch);
        });
        if let Some((_, els)) = &e.else_branch {
            self.visit_expr(els);
        }
    }

    fn visit_expr_let(&mut self, e: &'ast syn::ExprLet) {
        self.visit_expr(&e.expr);
        self.bind_pat(&e.pat, None);
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.scoped(|w| {
            w.bind_pat(&arm.pat, None);
            if let Some((_, g)) = &arm.guard {
                w.visit_expr(g);
            }
            w.visit_expr(&arm.body);
        });
    }

    fn visit_expr_break(&mut self, b: &'ast syn::ExprBreak) {
        let targets_outer = match &b.label {
            Some(l) => Some(l.ident.to_string()) == self.outer_label,
            None => self.inner_loops == 0,
        };
        if targets_outer && self.closures == 0 {
            self.found.facts.push(Fact::Break(b.to_token_stream()));
        }
        visit::visit_expr_break(self, b);
    }

    fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
        if self.closures == 0 {
            self.found.facts.push(Fact::Return(r.to_token_stream()));
        }
        visit::visit_expr_return(self, r);
    }

    fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
        if self.closures == 0 {
            self.found.facts.push(Fact::Try(t.question_token.span()));
        }
        visit::visit_expr_try(self, t);
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        if let Some(name) = self.outer_scalar(&a.left) {
            let saved = std::mem::replace(&mut self.write_ctx, false);
            // `x = x.max(e)`: a reduction; anything else assigns the outer variable.
            match max_min(&a.right, &|e| self.outer_scalar(e).as_ref() == Some(&name)) {
                Some((op, e)) => {
                    self.update(name, op, a);
                    self.visit_expr(e);
                }
                None => {
                    self.assign_error(&name, a);
                    self.visit_expr(&a.right);
                }
            }
            self.write_ctx = saved;
            return;
        }
        self.check_place_write(&a.left);
        let saved = std::mem::replace(&mut self.write_ctx, true);
        self.visit_expr(&a.left);
        self.write_ctx = false;
        self.visit_expr(&a.right);
        self.write_ctx = saved;
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        let compound = is_compound(&b.op);
        if compound {
            if let Some(name) = self.outer_scalar(&b.left) {
                let (left, op) = (&b.left, &b.op);
                match b.op {
                    BinOp::AddAssign(_) => self.update(name, ReduceOp::Add, quote!(#left #op)),
                    BinOp::MulAssign(_) => self.update(name, ReduceOp::Mul, quote!(#left #op)),
                    _ => self.found.facts.push(Fact::OuterCompound {
                        name,
                        op: op.to_token_stream().to_string(),
                        at: quote!(#left #op),
                    }),
                }
                let saved = std::mem::replace(&mut self.write_ctx, false);
                self.visit_expr(&b.right);
                self.write_ctx = saved;
                return;
            }
            self.check_place_write(&b.left);
        }
        let saved = std::mem::replace(&mut self.write_ctx, compound);
        let saved_add = std::mem::replace(
            &mut self.additive,
            matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)),
        );
        self.visit_expr(&b.left);
        self.write_ctx = false;
        self.additive = false;
        self.visit_expr(&b.right);
        self.write_ctx = saved;
        self.additive = saved_add;
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.check_place_write(&r.expr);
        }
        let saved = std::mem::replace(&mut self.write_ctx, r.mutability.is_some());
        self.visit_expr(&r.expr);
        self.write_ctx = saved;
    }

    fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
        // `a[[i]].x = ..` writes the element: keep the write context for the base.
        self.visit_expr(&f.base);
    }

    fn visit_expr_paren(&mut self, p: &'ast syn::ExprParen) {
        self.visit_expr(&p.expr);
    }

    fn visit_expr_index(&mut self, ix: &'ast syn::ExprIndex) {
        if let Some(a) = self.array_of(&ix.expr) {
            let kind = if self.write_ctx {
                AccessKind::Write
            } else {
                AccessKind::Read
            };
            self.index_access(a, &ix.index, &syn::Expr::Index(ix.clone()), kind);
            return;
        }
        if let Some(a) = self.buffer_row_local(&ix.expr) {
            if self.write_ctx && !self.additive {
                self.buffer_row_error(a, ix);
            }
            let saved = std::mem::replace(&mut self.write_ctx, false);
            self.visit_expr(&ix.index);
            self.write_ctx = saved;
            return;
        }
        // Indexing something else (a slice from `row_mut`): the base keeps the context.
        self.visit_expr(&ix.expr);
        let saved = std::mem::replace(&mut self.write_ctx, false);
        self.visit_expr(&ix.index);
        self.write_ctx = saved;
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let saved = std::mem::replace(&mut self.write_ctx, false);
        if let Some(a) = self.array_of(&m.receiver) {
            if self.f.arrays[a].kind == ArrayKind::Sparse {
                // No method reaches a sparse array's elements: `check_arrays` reports the use.
                self.use_array(a, &m.receiver);
                for arg in &m.args {
                    self.visit_expr(arg);
                }
                self.write_ctx = saved;
                return;
            }
            let rank = self.f.arrays[a].rank;
            let method = m.method.to_string();
            let n = self.n();
            match method.as_str() {
                "row" | "row_mut" => {
                    let kind = if method == "row" {
                        AccessKind::Read
                    } else {
                        AccessKind::Write
                    };
                    if m.args.len() == 1 {
                        let mut subs = vec![self.subscript(&m.args[0])];
                        subs.extend((1..rank).map(|_| Subscript::Full));
                        let tokens = vec![m.args[0].to_token_stream(); rank];
                        self.record(a, kind, subs, tokens, m);
                    } else {
                        self.found.facts.push(Fact::MethodArity {
                            array: a,
                            method,
                            at: m.to_token_stream(),
                        });
                    }
                }
                "get" | "get_mut" => {
                    let kind = if method == "get" {
                        AccessKind::Read
                    } else {
                        AccessKind::Write
                    };
                    match m.args.first() {
                        Some(idx) if m.args.len() == 1 => {
                            let whole = Expr::MethodCall(m.clone());
                            self.index_access(a, idx, &whole, kind);
                        }
                        _ => self.found.facts.push(Fact::MethodArity {
                            array: a,
                            method,
                            at: m.to_token_stream(),
                        }),
                    }
                }
                meta if META_METHODS.contains(&meta) => {
                    self.use_array(a, &m.receiver);
                }
                _ => self.found.facts.push(Fact::OpaqueMethod {
                    array: a,
                    method: m.method.clone(),
                }),
            }
            let _ = n;
            for arg in &m.args {
                self.visit_expr(arg);
            }
            self.write_ctx = saved;
            return;
        }
        if let Some(a) = self.buffer_row_local(&m.receiver) {
            // `g.len()`, `g.iter()`: reads; anything else might write the row.
            let method = m.method.to_string();
            if !matches!(method.as_str(), "len" | "is_empty" | "iter") {
                self.buffer_row_error(a, m);
            }
            for arg in &m.args {
                self.visit_expr(arg);
            }
            self.write_ctx = saved;
            return;
        }
        // A method on an element (`a[[i]].abs()`): it may take `&mut self` unless the element
        // is a plain number.
        if let Expr::Index(ix) = &*m.receiver {
            if let Some(a) = self.array_of(&ix.expr) {
                self.write_ctx = !self.elem_is_plain(a);
            }
        }
        self.visit_expr(&m.receiver);
        self.write_ctx = false;
        for arg in &m.args {
            self.visit_expr(arg);
        }
        self.write_ctx = saved;
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        let Some(ident) = p.path.get_ident() else {
            return;
        };
        let name = ident.to_string();
        if let Some(Sym::BufferRow(a)) = self.lookup(&name) {
            // Handed on whole (to a function, another binding): its writes could not be
            // checked.
            self.buffer_row_error(*a, p);
            return;
        }
        if self.lookup(&name).is_some() {
            return;
        }
        if let Some(a) = self.f.array_index(&name) {
            self.use_array(a, p);
            self.found.facts.push(Fact::ArrayWhole {
                array: a,
                at: p.to_token_stream(),
            });
        } else if self.f.outer_var(&name).is_some() {
            if !self.write_ctx {
                self.found.reads.push((name.clone(), p.span()));
            }
            self.found.captures.insert(name);
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let tokens = m.tokens.clone();
        self.in_macro += 1;
        self.visit_macro_tokens(&tokens, m);
        self.in_macro -= 1;
    }
}
