//! The rules on the analysis's result: an ordered loop needs a plan, `expect = ".."` must
//! hold, a loop over `iter_mut()` needs a static plan. Besides the sentence at the loop or
//! the option, each names the subscripts read from data and the conflicting accesses at
//! their own tokens, once per token.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use strads_analysis::{StrategyKind, Subscript, describe, format_dist};

use super::Model;
use crate::attr::Expect;
use crate::ctxt::Ctxt;
use crate::syntax::for_span;

/// An ordered loop runs its iterations in order; without a static plan reconnaissance would
/// run the dependence chains one after another, so it is refused. Each access that takes
/// part in a defeating dependence is named at its token.
pub(super) fn check_has_strategy(cx: &Ctxt, m: &Model) -> bool {
    if m.analysis.kind().is_some() {
        return true;
    }
    // Only ordered loops get here: an unordered one falls back to reconnaissance.
    cx.syn_error(syn::Error::new(
        for_span(&m.f.for_loop),
        format!(
            "strads cannot run this ordered loop in parallel: {}; every iteration must \
             wait for the one before it. Drop `ordered` if any order of the iterations \
             will do (strads then records the accesses at run time and runs \
             non-conflicting iterations side by side), or change the accesses so that \
             iterations that differ in one index (1D) or in two (2D) touch different \
             elements",
            m.analysis
                .reason
                .as_deref()
                .unwrap_or("no strategy applies")
        ),
    ));
    report_conflicts(
        cx,
        m,
        StrategyKind::Unimodular,
        "so this ordered loop cannot run in parallel",
    );
    false
}

/// `expect = ".."` pins the strategy, so a change to the accesses that loses it fails the
/// build instead of slowing the program down.
pub(super) fn check_expect(cx: &Ctxt, m: &Model) {
    let Some((expect, span)) = m.f.attrs.expect else {
        return;
    };
    let kind = m.analysis.kind();
    if expect.holds(kind) {
        return;
    }
    let spec = m.spec;
    let proved = m.analysis.candidates[0].strategy;
    let why = match expect {
        Expect::Kind(k) => m
            .analysis
            .why_not(spec, k)
            .map(|w| format!(": {w}"))
            .unwrap_or_default(),
        Expect::Static => String::new(),
    };
    let recon = kind == Some(StrategyKind::Reconnaissance);
    let or_static = if expect == Expect::Static || recon {
        ""
    } else {
        " (or `\"static\"` to accept any strategy proved at compile time)"
    };
    cx.syn_error(syn::Error::new(
        span,
        format!(
            "expected strategy {} but the analysis proved {}{why}; write \
             `expect = \"{}\"`{or_static}, or change the accesses",
            expect.as_str(),
            describe(spec, proved),
            kind.map_or("none", StrategyKind::as_str),
        ),
    ));
    // Say which subscripts send the loop to run time, or else why it falls back, and which
    // accesses conflict.
    if recon && !report_indirect(cx, m, RECON_SUBSCRIPT) {
        let fallback = strads_analysis::fallback_note(spec, m.analysis);
        cx.syn_error(syn::Error::new(
            for_span(&m.f.for_loop),
            format!(
                "this loop falls back to reconnaissance: {}",
                fallback.as_deref().unwrap_or("no static strategy")
            ),
        ));
    }
    // Conflicts only explain a kind that comes before the proved one in Orion's order: a
    // later one is merely not chosen.
    let wanted = match expect {
        Expect::Kind(k) => k,
        Expect::Static => StrategyKind::Unimodular,
    };
    let rule = match expect {
        Expect::Kind(k) => format!("which rules out {k}"),
        Expect::Static => "which rules out every static strategy".to_string(),
    };
    let rank = |k: StrategyKind| StrategyKind::ALL.iter().position(|&x| x == k);
    if kind.is_some_and(|k| rank(wanted) < rank(k)) && !spec.has_indirect() {
        report_conflicts(cx, m, wanted, &rule);
    }
}

/// Entries of `iter_mut()` are updated in place by the worker that owns them, which only a
/// plan proved at compile time assigns.
pub(super) fn check_values_mut_static(cx: &Ctxt, m: &Model) {
    if !m.f.values_mut || m.analysis.kind() != Some(StrategyKind::Reconnaissance) {
        return;
    }
    let fallback = strads_analysis::fallback_note(m.spec, m.analysis);
    cx.syn_error(syn::Error::new(
        for_span(&m.f.for_loop),
        format!(
            "a loop over `iter_mut()` needs a strategy proved at compile time, but {}: \
             compute the indices before the loop, or iterate with `iter()` and keep the \
             per-entry state in a `DistArray`",
            fallback.as_deref().unwrap_or("it needs reconnaissance")
        ),
    ));
    report_indirect(
        cx,
        m,
        "this subscript is read from data or computed, so the analysis cannot prove a \
         strategy at compile time, which a loop over `iter_mut()` needs",
    );
}

const RECON_SUBSCRIPT: &str = "this subscript is read from data or computed, so the analysis \
     cannot prove a strategy at compile time: strads records the loop's accesses at run time \
     instead (reconnaissance)";

/// Where a token sits in the source, for errors at the same token only once (a compound
/// `a[i] += x` is a read and a write through the same tokens).
/// The span's `Debug` text tells apart tokens where a compiler reports no line.
fn location(tokens: &TokenStream) -> Location {
    let span = tokens.clone().into_iter().next().map(|t| t.span());
    let start = span.map_or((0, 0), |s| (s.start().line, s.start().column));
    (start.0, start.1, format!("{span:?}"), tokens.to_string())
}

type Location = (usize, usize, String, String);

/// One error at every subscript read from data; whether there was any.
fn report_indirect(cx: &Ctxt, m: &Model, msg: &str) -> bool {
    let mut at: BTreeMap<Location, &TokenStream> = BTreeMap::new();
    for (a, found) in m.spec.accesses.iter().zip(&m.walked.accesses) {
        for (s, tokens) in a.subscripts.iter().zip(&found.subscript_tokens) {
            if matches!(s, Subscript::Indirect) {
                at.entry(location(tokens)).or_insert(tokens);
            }
        }
    }
    for tokens in at.values() {
        cx.error_spanned_by(tokens, msg);
    }
    !at.is_empty()
}

/// One error at every access that takes part in a dependence keeping strategies of `kind`
/// off, naming the other access and the dependence vector; `rule` ends the sentence.
fn report_conflicts(cx: &Ctxt, m: &Model, kind: StrategyKind, rule: &str) {
    let spec = m.spec;
    let mut at: BTreeMap<Location, (usize, Vec<String>)> = BTreeMap::new();
    for v in m.analysis.conflicts(spec, kind) {
        let dist = format_dist(&v.dist);
        let ends = if v.src == v.dst {
            vec![(v.src, v.src)]
        } else {
            vec![(v.src, v.dst), (v.dst, v.src)]
        };
        for (this, other) in ends {
            let Some(found) = m.walked.accesses.get(this) else {
                continue;
            };
            let what = if this == other {
                format!("itself (dependence vector {dist})")
            } else {
                format!(
                    "{} (dependence vector {dist})",
                    spec.accesses[other].display(spec)
                )
            };
            let entry = at
                .entry(location(&found.tokens))
                .or_insert_with(|| (this, Vec::new()));
            if !entry.1.contains(&what) {
                entry.1.push(what);
            }
        }
    }
    for (this, others) in at.values() {
        let found = &m.walked.accesses[*this];
        cx.error_spanned_by(
            &found.tokens,
            format!(
                "{} touches the same element as {} in another iteration, {rule}",
                spec.accesses[*this].display(spec),
                others.join(", and as "),
            ),
        );
    }
}
