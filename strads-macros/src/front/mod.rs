//! Front end: the annotated function as a model strads can reason about.
//!
//! This file builds `LoopFn` from the function: its arrays and outer variables (the
//! parameters and the `let`s before the loop, typed through `patterns`), its one loop, and
//! the attribute's options resolved against those arrays (`attr::Attrs`), so no later
//! stage reads the attribute again; `space.rs` reads the iteration space and key pattern,
//! `nest.rs` the perfect nests of range loops that become dims. A `LoopFn` exists only for
//! a function the later stages can handle: every problem found here is reported, and
//! `from_syn` then gives `None`.

use proc_macro2::TokenStream;
use syn::{Expr, ExprForLoop, FnArg, ItemFn, Pat, Stmt, Type};

use crate::arrays::{ArrayKind, ArrayVar, array_type};
use crate::attr::{Args, Attrs};
use crate::ctxt::Ctxt;
use crate::patterns::{self, Fix};
use crate::syntax::{for_span, strip_group};

mod nest;
mod space;

pub(crate) use nest::innermost_body_mut;
use nest::perfect_nest;
pub(crate) use space::{KeyPat, RangeDim, SpaceSrc};
use space::{is_iter_mut, key_of_array, key_of_range, space_of};

/// A non-array variable defined outside the loop: a parameter or a local before the loop.
pub(crate) struct OuterVar {
    pub(crate) ident: syn::Ident,
    /// The declared type, or the evident type of an unannotated local's value
    /// (`patterns/evident.rs`); `None` when neither is known.
    pub(crate) ty: Option<Type>,
    /// Declared with `mut`.
    pub(crate) mutable: bool,
    /// An unannotated local bound to a closure.
    pub(crate) closure: bool,
    /// What to write when `ty` is `None`.
    pub(crate) fix: Fix,
}

/// The annotated function, split around its loop.
pub(crate) struct LoopFn {
    pub(crate) item: ItemFn,
    pub(crate) arrays: Vec<ArrayVar>,
    pub(crate) outer: Vec<OuterVar>,
    pub(crate) loop_index: usize,
    pub(crate) for_loop: ExprForLoop,
    /// The loops perfectly nested in `for_loop` that are dims of the iteration space
    /// (outermost first); the body of an iteration is the last one's (or `for_loop`'s).
    pub(crate) nest: Vec<ExprForLoop>,
    pub(crate) space: SpaceSrc,
    pub(crate) key: KeyPat,
    pub(crate) n_dims: usize,
    /// `for (k, v) in a.iter_mut()`: each iteration owns its entry's value.
    pub(crate) values_mut: bool,
    /// The attribute's options, resolved against the arrays above.
    pub(crate) attrs: Attrs,
}

impl LoopFn {
    /// Parses the function and the attribute's arguments `args`, resolved against the
    /// function's arrays (as serde_derive's `Container::from_ast` takes
    /// `attr::Container::from_ast`); `None` after reporting errors when it cannot be
    /// modelled.
    pub(crate) fn from_syn(cx: &Ctxt, item: &ItemFn, args: TokenStream) -> Option<LoopFn> {
        // The arguments first: their errors come before the function's.
        let args = Args::from_tokens(cx, args);
        check_signature(cx, item);
        let mut arrays = Vec::new();
        let mut outer = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(r) => cx.error_spanned_by(
                    r,
                    "`#[parallel_for]` goes on a free function; move the loop into a function \
                     that takes the fields it needs as parameters",
                ),
                FnArg::Typed(pt) => {
                    let Pat::Ident(pi) = &*pt.pat else {
                        cx.error_spanned_by(
                            &pt.pat,
                            "parameters of a `#[parallel_for]` function must be plain names; \
                             destructure inside the body instead",
                        );
                        continue;
                    };
                    match array_type(cx, &pt.ty) {
                        Some((kind, elem, rank, mutable, owned)) => {
                            if owned {
                                cx.error_spanned_by(
                                    &pt.ty,
                                    "take arrays by reference: `&DistArray<..>`, \
                                     `&mut DistArray<..>` or `&SparseArray<..>`",
                                );
                            }
                            arrays.push(ArrayVar {
                                ident: pi.ident.clone(),
                                kind,
                                elem,
                                rank,
                                mutable,
                                owned: false,
                            })
                        }
                        None => outer.push(OuterVar {
                            ident: pi.ident.clone(),
                            ty: Some((*pt.ty).clone()),
                            mutable: pi.mutability.is_some(),
                            closure: false,
                            fix: Fix::Single,
                        }),
                    }
                }
            }
        }

        let stmts = &item.block.stmts;
        let loops: Vec<usize> = stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Stmt::Expr(Expr::ForLoop(_), _)))
            .map(|(i, _)| i)
            .collect();
        let loop_index = match loops.as_slice() {
            [i] => *i,
            [] => {
                cx.error_spanned_by(
                    &item.sig.ident,
                    "`#[parallel_for]` needs one top-level `for` loop in the function body; \
                     that loop is run in parallel",
                );
                return None;
            }
            [_, second, ..] => {
                let Stmt::Expr(Expr::ForLoop(l), _) = &stmts[*second] else {
                    unreachable!("filtered above");
                };
                cx.syn_error(syn::Error::new(
                    for_span(l),
                    "the function holds several top-level `for` loops; put each loop to \
                     parallelize in its own `#[parallel_for]` function",
                ));
                return None;
            }
        };
        for stmt in &stmts[..loop_index] {
            if let Stmt::Local(local) = stmt {
                bind_local(cx, local, &mut arrays, &mut outer);
            }
        }

        let Stmt::Expr(Expr::ForLoop(for_loop), _) = &stmts[loop_index] else {
            unreachable!("found above");
        };
        let for_loop = for_loop.clone();
        let values_mut = is_iter_mut(&for_loop.expr);
        let mut space = space_of(cx, &for_loop.expr, &arrays)?;
        let mut nest = Vec::new();
        if let SpaceSrc::Range { dims } = &mut space {
            nest = perfect_nest(&for_loop, &arrays, &outer, dims);
        }
        if values_mut {
            if let SpaceSrc::Array(a) = space {
                let arr = &arrays[a];
                if arr.kind != ArrayKind::Sparse || !arr.mutable || arr.owned {
                    cx.error_spanned_by(
                        &for_loop.expr,
                        "`iter_mut()` in a `#[parallel_for]` loop iterates a `&mut SparseArray` \
                         parameter, giving each iteration its entry's value to update",
                    );
                    return None;
                }
            }
        }
        let (key, n_dims) = match &space {
            SpaceSrc::Array(a) => key_of_array(cx, &for_loop.pat, arrays[*a].rank)?,
            SpaceSrc::Range { dims } => {
                let mut keys = vec![key_of_range(cx, &for_loop.pat)?];
                for l in &nest {
                    keys.push(key_of_range(cx, &l.pat)?);
                }
                (KeyPat::Range(keys), dims.len())
            }
        };
        let attrs = Attrs::from_args(cx, &args, &arrays);
        Some(LoopFn {
            item: item.clone(),
            arrays,
            outer,
            loop_index,
            for_loop,
            nest,
            space,
            key,
            n_dims,
            values_mut,
            attrs,
        })
    }

    /// Index of the array named `name`.
    pub(crate) fn array_index(&self, name: &str) -> Option<usize> {
        self.arrays.iter().position(|a| a.ident == name)
    }

    /// The outer variable named `name`.
    pub(crate) fn outer_var(&self, name: &str) -> Option<&OuterVar> {
        self.outer.iter().find(|o| o.ident == name)
    }

    /// Dim names for the report: the pattern's idents, `key[0]` for a whole key.
    pub(crate) fn dim_names(&self) -> Vec<String> {
        match &self.key {
            KeyPat::Elems(v) => v
                .iter()
                .enumerate()
                .map(|(d, i)| i.as_ref().map_or(format!("_{d}"), |i| i.to_string()))
                .collect(),
            KeyPat::Whole(k) => (0..self.n_dims).map(|d| format!("{k}[{d}]")).collect(),
            KeyPat::Ignored => (0..self.n_dims).map(|d| format!("_{d}")).collect(),
            // A stepped range's dim counts its steps: `i_step` (the index is
            // `step * i_step + start`).
            KeyPat::Range(v) => v
                .iter()
                .enumerate()
                .map(|(d, i)| {
                    let name = i.as_ref().map_or(format!("_{d}"), |i| i.to_string());
                    match &self.space {
                        SpaceSrc::Range { dims } if dims[d].literal_step() != Some(1) => {
                            format!("{name}_step")
                        }
                        _ => name,
                    }
                })
                .collect(),
        }
    }

    /// The loop whose body is one iteration: the innermost loop of the nest.
    pub(crate) fn body_loop(&self) -> &ExprForLoop {
        self.nest.last().unwrap_or(&self.for_loop)
    }

    /// Every pattern of the nest's loops, outermost first.
    pub(crate) fn nest_pats(&self) -> impl Iterator<Item = &Pat> {
        std::iter::once(&*self.for_loop.pat).chain(self.nest.iter().map(|l| &*l.pat))
    }
}

/// Adds the names `local` binds: one name annotated with an array type is an array, every
/// other name an outer variable typed by [`patterns::bindings`]. A name shadows an earlier
/// one of the same name.
fn bind_local(
    cx: &Ctxt,
    local: &syn::Local,
    arrays: &mut Vec<ArrayVar>,
    outer: &mut Vec<OuterVar>,
) {
    let (pat, ty) = match &local.pat {
        Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
        p => (p, None),
    };
    if let (Pat::Ident(pi), Some(ty)) = (pat, ty) {
        if let Some((kind, elem, rank, _, owned)) = array_type(cx, ty) {
            shadow(&pi.ident, arrays, outer);
            arrays.push(ArrayVar {
                ident: pi.ident.clone(),
                kind,
                elem,
                rank,
                mutable: pi.mutability.is_some(),
                owned,
            });
            return;
        }
    }
    let init = local.init.as_ref().map(|i| strip_group(&i.expr));
    let closure = matches!(pat, Pat::Ident(_)) && matches!(init, Some(Expr::Closure(_)));
    // Typed against the variables before this `let`: `let n = n * 2;` reads the earlier `n`.
    let known = |name: &str| {
        outer
            .iter()
            .rev()
            .find(|v| v.ident == name)
            .and_then(|v| v.ty.clone())
    };
    for b in patterns::bindings(local, &known) {
        shadow(&b.ident, arrays, outer);
        outer.push(OuterVar {
            ident: b.ident,
            ty: b.ty,
            mutable: b.mutable,
            closure,
            fix: b.fix,
        });
    }
}

/// Forgets the array or outer variable named `ident`, which a new binding shadows.
fn shadow(ident: &syn::Ident, arrays: &mut Vec<ArrayVar>, outer: &mut Vec<OuterVar>) {
    arrays.retain(|a| a.ident != *ident);
    outer.retain(|o| o.ident != *ident);
}

fn check_signature(cx: &Ctxt, item: &ItemFn) {
    let sig = &item.sig;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "generic `#[parallel_for]` functions are not supported yet; write the loop for \
             concrete element types",
        );
    }
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(a, "`#[parallel_for]` functions cannot be `async`");
    }
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, "`#[parallel_for]` functions cannot be `const`");
    }
}
