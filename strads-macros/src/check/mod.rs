//! The rules: one function per rule, each saying why it holds (serde_derive's
//! `internals/check.rs`). The walker and the analysis collect facts; these functions judge
//! them and report every violation at its own token.
//!
//! This file holds the two entry points, which call every rule in a fixed order (the order
//! of the errors); the rules live by family: `body.rs` (what the body does), `vars.rs` (the
//! variables and arrays it uses), `analysis.rs` (the analysis's result).

use strads_analysis::{Analysis, LoopSpec};

use crate::ctxt::Ctxt;
use crate::front::LoopFn;
use crate::walk::Walked;

mod analysis;
mod body;
mod vars;

use analysis::{check_expect, check_has_strategy, check_values_mut_static};
use body::{
    check_arrays_by_element, check_buffer_updates, check_index_shape, check_no_async,
    check_no_break, check_no_return, check_no_try, check_not_nested, check_outer_writes,
    check_update_outside_macros,
};
use vars::{check_arrays, check_captures, check_reductions};

/// What the analysis rules judge: the function, what the walker found, the spec built from
/// it and the analysis of that spec.
pub(crate) struct Model<'a> {
    pub(crate) f: &'a LoopFn,
    pub(crate) walked: &'a Walked,
    pub(crate) spec: &'a LoopSpec,
    pub(crate) analysis: &'a Analysis,
}

/// The rules on the body, before the analysis.
pub(crate) fn check(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    for fact in &walked.facts {
        check_no_break(cx, fact);
        check_no_return(cx, fact);
        check_no_try(cx, fact);
        check_no_async(cx, fact);
        check_not_nested(cx, f, fact);
        check_outer_writes(cx, fact);
        check_update_outside_macros(cx, fact);
        check_buffer_updates(cx, f, fact);
        check_index_shape(cx, f, fact);
        check_arrays_by_element(cx, f, fact);
    }
    check_reductions(cx, f, walked);
    check_captures(cx, f, walked);
    check_arrays(cx, f, walked);
}

/// The rules on the analysis's result.
pub(crate) fn check_analysis(cx: &Ctxt, m: &Model) {
    if !check_has_strategy(cx, m) {
        return;
    }
    check_expect(cx, m);
    check_values_mut_static(cx, m);
}
