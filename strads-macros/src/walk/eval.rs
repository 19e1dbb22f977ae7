//! Evaluation and symbols: what the walker knows of each local's value (`Sym`), the scopes
//! that bind them (the loop's key first), and the value of an expression as far as
//! subscripts go. A local is an affine form of the iteration only while the syntax proves it
//! (a `mut` binding the body may change, a narrowing cast, a call: `Sym::Opaque`).

use syn::punctuated::Punctuated;
use syn::{BinOp, Expr, ExprLit, Lit, Pat, UnOp};

use strads_analysis::{Affine, Subscript};

use super::Walker;
use crate::front::{KeyPat, SpaceSrc};
use crate::syntax::collect_idents;

/// What the walker knows of a local variable's value.
#[derive(Clone, Debug)]
pub(super) enum Sym {
    /// `sum(coeffs * p) + constant` of the iteration vector.
    Affine(Affine),
    /// Every index of an array dim (an inner serial loop's variable).
    Full,
    /// The whole iteration index `[p0, p1, ..]`.
    Key,
    /// A tuple `(a, b)` or an array `[a, b]` of known parts, read by `.0` or `[0]`.
    Tuple(Vec<Sym>),
    /// Something else: data, a function's result, a captured value.
    Opaque,
    /// `let g = buf.row_mut(e);` of a write-back buffer (by array index): a row that takes
    /// only `g[k] += ..` and `g[k] -= ..`.
    BufferRow(usize),
}

impl Walker<'_> {
    pub(super) fn n(&self) -> usize {
        self.f.n_dims
    }

    pub(super) fn bind(&mut self, name: String, sym: Sym) {
        self.scopes.last_mut().expect("a scope").insert(name, sym);
    }

    pub(super) fn bind_pat(&mut self, pat: &Pat, sym: Option<Sym>) {
        match (pat, sym) {
            // `let mut j = i; .. j += 1;`: the value at a subscript is not the initial one.
            (Pat::Ident(pi), Some(_))
                if pi.mutability.is_some() && self.mutated.contains(&pi.ident.to_string()) =>
            {
                self.bind(pi.ident.to_string(), Sym::Opaque)
            }
            (Pat::Ident(pi), Some(s)) if pi.subpat.is_none() => self.bind(pi.ident.to_string(), s),
            (Pat::Type(pt), s) => self.bind_pat(&pt.pat, s),
            (Pat::Paren(pp), s) => self.bind_pat(&pp.pat, s),
            // `let (a, b) = (e0, e1);` and `let [a, b] = p;` bind part by part.
            (Pat::Tuple(pt), Some(Sym::Tuple(parts))) if binds_n(&pt.elems, parts.len()) => {
                for (p, s) in pt.elems.iter().zip(parts) {
                    self.bind_pat(p, Some(s));
                }
            }
            (Pat::Slice(ps), Some(Sym::Tuple(parts))) if binds_n(&ps.elems, parts.len()) => {
                for (p, s) in ps.elems.iter().zip(parts) {
                    self.bind_pat(p, Some(s));
                }
            }
            // `let [u, i] = key;`
            (Pat::Slice(ps), Some(Sym::Key)) if binds_n(&ps.elems, self.n()) => {
                let n = self.n();
                for (d, p) in ps.elems.iter().enumerate() {
                    self.bind_pat(p, Some(var(n, d)));
                }
            }
            _ => {
                let mut names = Vec::new();
                collect_idents(pat, &mut names);
                for (i, _) in names {
                    self.bind(i.to_string(), Sym::Opaque);
                }
            }
        }
    }

    pub(super) fn bind_key(&mut self) {
        let n = self.n();
        // `for ([mut u, i], _) in ..` with `u += 1` in the body: `u` is not the index.
        let mut bound = Vec::new();
        for pat in self.f.nest_pats() {
            collect_idents(pat, &mut bound);
        }
        let changed: Vec<String> = bound
            .into_iter()
            .filter(|(i, m)| *m && self.mutated.contains(&i.to_string()))
            .map(|(i, _)| i.to_string())
            .collect();
        match &self.f.key {
            KeyPat::Elems(dims) => {
                for (d, i) in dims.iter().enumerate() {
                    if let Some(i) = i {
                        self.bind(i.to_string(), var(n, d));
                    }
                }
            }
            KeyPat::Whole(k) => self.bind(k.to_string(), Sym::Key),
            KeyPat::Ignored => {}
            KeyPat::Range(idents) => {
                let SpaceSrc::Range { dims } = &self.f.space else {
                    unreachable!("range keys go with range spaces")
                };
                for (d, (i, dim)) in idents.iter().zip(dims).enumerate() {
                    let Some(i) = i else { continue };
                    // `(a..b).step_by(s)`: the space's coordinate `t` counts the steps, and
                    // the index is `s * t + a` (affine when `s` and `a` are literals).
                    let sym = match (dim.literal_step(), dim.literal_start()) {
                        (Some(1), _) => var(n, d),
                        (Some(s), Some(a)) if s > 1 => {
                            Sym::Affine(Affine::var(n, d).scale(s).add(&Affine::constant(n, a)))
                        }
                        _ => Sym::Opaque,
                    };
                    self.bind(i.to_string(), sym);
                }
            }
        }
        if let Pat::Tuple(t) = &*self.f.for_loop.pat {
            if let Some(v) = t.elems.iter().nth(1) {
                self.bind_pat(v, None);
            }
        }
        for name in changed {
            self.bind(name, Sym::Opaque);
        }
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// The value of an expression, as far as subscripts go.
    pub(super) fn eval(&self, e: &Expr) -> Sym {
        let n = self.n();
        match e {
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }) => i
                .base10_parse::<i64>()
                .map_or(Sym::Opaque, |k| Sym::Affine(Affine::constant(n, k))),
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::Group(g) => self.eval(&g.expr),
            // A cast keeps an index's value only into a type that holds every index: a
            // narrow integer wraps, a float rounds large ones.
            Expr::Cast(c) if keeps_indices(&c.ty) => self.eval(&c.expr),
            Expr::Cast(_) => Sym::Opaque,
            Expr::Path(p) => match p.path.get_ident() {
                Some(i) => self.lookup(&i.to_string()).cloned().unwrap_or(Sym::Opaque),
                None => Sym::Opaque,
            },
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match self.eval(&u.expr) {
                Sym::Affine(f) => Sym::Affine(f.neg()),
                _ => Sym::Opaque,
            },
            Expr::Binary(b) => {
                let (l, r) = (self.eval(&b.left), self.eval(&b.right));
                let (Sym::Affine(l), Sym::Affine(r)) = (l, r) else {
                    return Sym::Opaque;
                };
                match b.op {
                    BinOp::Add(_) => Sym::Affine(l.add(&r)),
                    BinOp::Sub(_) => Sym::Affine(l.sub(&r)),
                    BinOp::Mul(_) => l.mul(&r).map_or(Sym::Opaque, Sym::Affine),
                    _ => Sym::Opaque,
                }
            }
            Expr::Tuple(t) => Sym::Tuple(t.elems.iter().map(|e| self.eval(e)).collect()),
            Expr::Array(a) => Sym::Tuple(a.elems.iter().map(|e| self.eval(e)).collect()),
            // `p.0` of a tuple.
            Expr::Field(fe) => match (&fe.member, self.eval(&fe.base)) {
                (syn::Member::Unnamed(i), Sym::Tuple(mut parts))
                    if (i.index as usize) < parts.len() =>
                {
                    parts.swap_remove(i.index as usize)
                }
                _ => Sym::Opaque,
            },
            // `key[0]` of the iteration index, `p[1]` of an array.
            Expr::Index(ix) => {
                let Expr::Lit(ExprLit {
                    lit: Lit::Int(i), ..
                }) = &*ix.index
                else {
                    return Sym::Opaque;
                };
                match (self.eval(&ix.expr), i.base10_parse::<usize>()) {
                    (Sym::Key, Ok(d)) if d < n => var(n, d),
                    (Sym::Tuple(mut parts), Ok(d)) if d < parts.len() => parts.swap_remove(d),
                    _ => Sym::Opaque,
                }
            }
            _ => Sym::Opaque,
        }
    }

    pub(super) fn subscript(&self, e: &Expr) -> Subscript {
        self.subscript_of(self.eval(e))
    }

    pub(super) fn subscript_of(&self, sym: Sym) -> Subscript {
        match sym {
            Sym::Affine(f) => Subscript::Affine(f),
            Sym::Full => Subscript::Full,
            Sym::Key | Sym::Tuple(_) | Sym::Opaque | Sym::BufferRow(_) => Subscript::Indirect,
        }
    }
}

/// Whether `pats` binds exactly `n` parts, one each (no `..`).
fn binds_n<P>(pats: &Punctuated<Pat, P>, n: usize) -> bool {
    pats.len() == n && !pats.iter().any(|p| matches!(p, Pat::Rest(_)))
}

/// Whether a cast to `ty` keeps every index's value: 64-bit (and wider) integers. A cast
/// to a narrower integer wraps large indices and one to a float rounds them, so the
/// result is no longer affine in the iteration.
fn keeps_indices(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(tp) => tp.path.get_ident().is_some_and(|i| {
            matches!(
                i.to_string().as_str(),
                "usize" | "isize" | "u64" | "i64" | "u128" | "i128"
            )
        }),
        syn::Type::Paren(p) => keeps_indices(&p.elem),
        syn::Type::Group(g) => keeps_indices(&g.elem),
        _ => false,
    }
}

pub(super) fn var(n: usize, d: usize) -> Sym {
    Sym::Affine(Affine::var(n, d))
}
