//! Array accesses: each index, `row`, `row_mut`, `get` or `get_mut` of an array becomes a
//! `FoundAccess` with one subscript per dim, except on write-back buffers, which take no
//! part in the analysis and take only updates that merge (another write is a `Fact` for
//! `check`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::Expr;
use syn::spanned::Spanned;
use syn::visit::Visit;

use strads_analysis::{AccessKind, Subscript};

use super::Walker;
use super::eval::{Sym, var};
use super::facts::Fact;
use crate::syntax::NUMBER_TYPES;

/// One access found in the body.
pub(crate) struct FoundAccess {
    pub(crate) array: usize,
    pub(crate) kind: AccessKind,
    pub(crate) subscripts: Vec<Subscript>,
    /// The source of each subscript, for errors about one of them.
    pub(crate) subscript_tokens: Vec<TokenStream>,
    /// The whole access, for errors about it.
    pub(crate) tokens: TokenStream,
    pub(crate) span: proc_macro2::Span,
}

/// Methods that read array metadata, not elements.
pub(super) const META_METHODS: &[&str] = &["shape", "len", "is_empty", "row_len", "nrows", "ncols"];

impl Walker<'_> {
    /// The array a path names, unless a local shadows it.
    pub(super) fn array_of(&self, e: &Expr) -> Option<usize> {
        let Expr::Path(p) = e else { return None };
        let ident = p.path.get_ident()?.to_string();
        if self.lookup(&ident).is_some() {
            return None;
        }
        self.f.array_index(&ident)
    }

    pub(super) fn record(
        &mut self,
        array: usize,
        kind: AccessKind,
        subscripts: Vec<Subscript>,
        subscript_tokens: Vec<TokenStream>,
        at: &impl ToTokens,
    ) {
        self.use_array(array, at);
        // Write-back buffers take no part in the dependence analysis; they only take
        // updates that can be merged.
        if self.f.attrs.buffered.contains(&array) {
            // A `sync` replica takes any write: replicas merge by their differences.
            if kind == AccessKind::Write && !self.additive && !self.f.attrs.sync {
                self.found.facts.push(Fact::BufferWrite {
                    array,
                    at: at.to_token_stream(),
                });
            }
            return;
        }
        if kind == AccessKind::Write && !self.additive {
            self.found.non_additive.insert(array);
        }

        self.found.accesses.push(FoundAccess {
            array,
            kind,
            subscripts,
            subscript_tokens,
            tokens: at.to_token_stream(),
            span: at.span(),
        });
    }

    /// The buffer `e` takes a row of, when `e` is `buf.row_mut(..)` of a write-back buffer.
    pub(super) fn buffer_row_mut(&self, e: &Expr) -> Option<usize> {
        let Expr::MethodCall(m) = e else { return None };
        let a = self.array_of(&m.receiver)?;
        (m.method == "row_mut" && self.f.attrs.buffered.contains(&a)).then_some(a)
    }

    /// The buffer whose row the local `e` names (`let g = buf.row_mut(..)`).
    pub(super) fn buffer_row_local(&self, e: &Expr) -> Option<usize> {
        let Expr::Path(p) = e else { return None };
        match self.lookup(&p.path.get_ident()?.to_string())? {
            Sym::BufferRow(a) => Some(*a),
            _ => None,
        }
    }

    pub(super) fn buffer_row_error(&mut self, a: usize, at: &impl ToTokens) {
        self.found.facts.push(Fact::BufferRow {
            array: a,
            at: at.to_token_stream(),
        });
    }

    /// Notes that the body names array `a` at `at`.
    pub(super) fn use_array(&mut self, a: usize, at: &impl ToTokens) {
        self.found.arrays_used.insert(a);
        self.found
            .first_use
            .entry(a)
            .or_insert_with(|| at.to_token_stream());
    }

    /// `a[[e0, e1]]` or `a[e]`.
    pub(super) fn index_access(
        &mut self,
        array: usize,
        index: &Expr,
        whole: &Expr,
        kind: AccessKind,
    ) {
        let rank = self.f.arrays[array].rank;
        let elems: Vec<&Expr> = match index {
            Expr::Array(a) => a.elems.iter().collect(),
            // `out[key]` with the loop's whole index: the identity subscript.
            e if rank == self.n() && matches!(self.eval(e), Sym::Key) => {
                let subs = (0..rank).map(|d| self.subscript_of(var(rank, d))).collect();
                let tokens = vec![e.to_token_stream(); rank];
                self.record(array, kind, subs, tokens, whole);
                return;
            }
            // `a[p]` with `let p = [i, j + 1];`: the parts are the subscripts.
            e if rank > 1 && matches!(self.eval(e), Sym::Tuple(ref p) if p.len() == rank) => {
                let Sym::Tuple(parts) = self.eval(e) else {
                    unreachable!("matched above")
                };
                let subs = parts.into_iter().map(|s| self.subscript_of(s)).collect();
                let tokens = vec![e.to_token_stream(); rank];
                self.record(array, kind, subs, tokens, whole);
                let saved = std::mem::replace(&mut self.write_ctx, false);
                self.visit_expr(e);
                self.write_ctx = saved;
                return;
            }
            e if rank == 1 => vec![e],
            e => {
                self.found.facts.push(Fact::IndexShape {
                    array,
                    at: e.to_token_stream(),
                    got: None,
                });
                return;
            }
        };
        if elems.len() != rank {
            self.found.facts.push(Fact::IndexShape {
                array,
                at: index.to_token_stream(),
                got: Some(elems.len()),
            });
            return;
        }
        let subs = elems.iter().map(|e| self.subscript(e)).collect();
        let tokens = elems.iter().map(|e| e.to_token_stream()).collect();
        self.record(array, kind, subs, tokens, whole);
        let saved = std::mem::replace(&mut self.write_ctx, false);
        for e in elems {
            self.visit_expr(e);
        }
        self.write_ctx = saved;
    }

    pub(super) fn elem_is_plain(&self, array: usize) -> bool {
        let syn::Type::Path(tp) = &self.f.arrays[array].elem else {
            return false;
        };
        tp.path.get_ident().is_some_and(|i| {
            // Numbers, `bool` and `char`: no method takes `&mut self`.
            let i = i.to_string();
            NUMBER_TYPES.contains(&i.as_str()) || i == "bool" || i == "char"
        })
    }
}
