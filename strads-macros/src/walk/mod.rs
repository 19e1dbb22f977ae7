//! Walks the loop body: finds every array access with its subscripts as affine forms of
//! the iteration dims, every captured outer variable, every reduction into an outer
//! variable, and every construct that cannot run as one iteration of a parallel loop (as
//! [`Fact`]s, which `check` judges). One pass; the walker reports nothing itself.
//!
//! This file holds what the walk finds (`Walked`) and the walker's state; the walker's
//! work is split by concern: `eval.rs` (symbols, scopes and the value of expressions),
//! `accesses.rs` (array accesses and write-back buffers' rows), `reductions.rs`,
//! `facts.rs` (the facts and the notes at writes to outer variables), `macros.rs` (names
//! inside macros), `mutated.rs` (the pre-pass finding the locals the body may change),
//! `visitor.rs` (syn's visitor over the body, which calls them all), `tests.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use proc_macro2::{Span, TokenStream};
use syn::visit::Visit;

use crate::front::LoopFn;

mod accesses;
mod eval;
mod facts;
mod macros;
mod mutated;
mod reductions;
mod visitor;

use accesses::FoundAccess;
use eval::Sym;
pub(crate) use facts::Fact;
use mutated::Mutated;
pub(crate) use reductions::{FoundReduction, ReduceOp};

/// What the walk found.
pub(crate) struct Walked {
    pub(crate) accesses: Vec<FoundAccess>,
    /// What the body does that the rules in `check` judge, in source order.
    pub(crate) facts: Vec<Fact>,
    /// Reduction updates of outer variables by name: the operator and where it is.
    pub(crate) updates: BTreeMap<String, Vec<(ReduceOp, TokenStream)>>,
    /// Reads of outer variables: the name and where.
    pub(crate) reads: Vec<(String, Span)>,
    /// Outer (non-array) variables the body reads, by name; reductions are not among them.
    pub(crate) captures: BTreeSet<String>,
    /// Outer variables the body updates only by `+=`, `*=`, `max` or `min`, in declaration
    /// order.
    pub(crate) reductions: Vec<FoundReduction>,
    /// Arrays the body names, by index.
    pub(crate) arrays_used: BTreeSet<usize>,
    /// Where the body first names each array, for errors about the array as a whole.
    pub(crate) first_use: BTreeMap<usize, TokenStream>,
    /// Arrays the body writes other than by `a[..] += e` or `a[..] -= e`.
    pub(crate) non_additive: BTreeSet<usize>,
    /// Outer variables and arrays whose values may steer which elements the body touches
    /// ([`crate::plankey::steering`]): they key reconnaissance plans.
    pub(crate) steering: BTreeSet<String>,
}

/// Walks the loop body: its accesses, captures, reductions and the [`Fact`]s the rules in
/// `check` judge. Reports nothing itself.
pub(crate) fn walk(f: &LoopFn) -> Walked {
    let mut mutated = Mutated::default();
    mutated.visit_block(&f.for_loop.body);
    let mut w = Walker {
        f,
        mutated: mutated.names,

        scopes: vec![HashMap::new()],
        found: Walked {
            accesses: Vec::new(),
            facts: Vec::new(),
            updates: BTreeMap::new(),
            reads: Vec::new(),
            captures: BTreeSet::new(),
            reductions: Vec::new(),
            arrays_used: BTreeSet::new(),
            first_use: BTreeMap::new(),
            non_additive: BTreeSet::new(),
            steering: BTreeSet::new(),
        },
        write_ctx: false,
        additive: false,
        inner_loops: 0,
        closures: 0,
        in_macro: 0,
        outer_label: f
            .body_loop()
            .label
            .as_ref()
            .map(|l| l.name.ident.to_string()),
    };
    w.bind_key();
    w.visit_block(&f.body_loop().body);
    w.finish_reductions();
    let arrays: BTreeSet<String> = f.arrays.iter().map(|a| a.ident.to_string()).collect();
    let mut candidates: BTreeSet<String> = f.outer.iter().map(|o| o.ident.to_string()).collect();
    candidates.extend(arrays.iter().cloned());
    w.found.steering = crate::plankey::steering(&f.for_loop.body, &candidates, &arrays);
    w.found
}

struct Walker<'a> {
    f: &'a LoopFn,
    /// Names the body may change after binding them (see [`Mutated`]): a `mut` binding of
    /// one of them is not an affine form of the iteration, whatever its initial value.
    mutated: HashSet<String>,
    scopes: Vec<HashMap<String, Sym>>,
    found: Walked,
    /// The expression being visited is the place an assignment writes.
    write_ctx: bool,
    /// That assignment is `+=` or `-=` (the updates a write-back buffer takes).
    additive: bool,
    /// Depth of loops nested in the body (`break` there is fine).
    inner_loops: usize,
    /// Depth of closures (`return` and `?` there are fine).
    closures: usize,
    /// Depth of macro arguments being walked (their tokens are not rewritten).
    in_macro: usize,
    outer_label: Option<String>,
}

impl Walker<'_> {
    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::new());
        f(self);
        self.scopes.pop();
    }
}

#[cfg(test)]
mod tests;
