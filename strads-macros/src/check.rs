//! The rules: one function per rule, each saying why it holds (serde_derive's
//! `internals/check.rs`). The walker and the analysis collect facts; these functions judge
//! them and report every violation at its own token.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;
use strads_analysis::{Analysis, LoopSpec, StrategyKind, Subscript, describe, format_dist};

use crate::attr::{Args, Expect};
use crate::ctxt::Ctxt;
use crate::front::{ArrayKind, LoopFn, SpaceSrc, for_span};
use crate::walk::Walked;

/// What the analysis rules judge: the function, what the walker found, the spec built from
/// it and the analysis of that spec.
pub(crate) struct Model<'a> {
    pub(crate) f: &'a LoopFn,
    pub(crate) walked: &'a Walked,
    pub(crate) args: &'a Args,
    pub(crate) spec: &'a LoopSpec,
    pub(crate) analysis: &'a Analysis,
}

/// The rules on the body, before the analysis.
pub(crate) fn check(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
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

/// A value the loop uses is stored in the loop's struct, which may be sent to other
/// workers: it needs a type, and may be neither a closure nor a `&mut`.
fn check_captures(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    for name in &walked.captures {
        let Some(var) = f.outer_var(name) else {
            continue;
        };
        match &var.ty {
            None if var.closure => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a closure used inside the parallel loop; strads stores what the \
                     loop uses in the loop's struct, which may be sent to other workers, and a \
                     closure cannot be stored or sent: write it as a function item, `fn \
                     {name}(..) -> .. {{ .. }}`, in this function before the loop or outside \
                     it, passing what the closure captured as arguments"
                ),
            ),
            None => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is used inside the parallel loop, so strads stores it in the \
                     loop's struct and needs its type: write `let {name}: Type = ..;`, or give \
                     the value an evident type (`0u64`, `0.0f64`, `x as f32`, `f64::MIN`)"
                ),
            ),
            Some(syn::Type::Reference(r)) if r.mutability.is_some() => cx.error_spanned_by(
                r,
                format!(
                    "`{name}` is a `&mut` reference used inside the parallel loop; loop \
                     iterations may only read outer variables: pass it as `&` (or make it a \
                     `DistArray` the loop writes by index)"
                ),
            ),
            Some(_) => {}
        }
    }
}

/// A sparse array is only iterated, never indexed; the iterated array is only read, since
/// its entries are handed to workers as the iteration space.
fn check_arrays(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    let space = match f.space {
        SpaceSrc::Array(a) => Some(a),
        SpaceSrc::Range { .. } => None,
    };
    for &a in &walked.arrays_used {
        let arr = &f.arrays[a];
        if arr.kind == ArrayKind::Sparse {
            let name = &arr.ident;
            let why = if Some(a) == space {
                "its entries reach the body through the loop pattern"
            } else {
                "a sparse array can only be iterated"
            };
            let at = walked
                .first_use
                .get(&a)
                .map_or_else(|| quote!(#name), Clone::clone);
            cx.error_spanned_by(
                at,
                format!(
                    "the loop body names the sparse array `{name}`; {why}: read what the loop \
                     needs from it before the loop (`let n: usize = {name}.len();`)"
                ),
            );
        }
    }
    if let Some(a) = space {
        for acc in &walked.accesses {
            if acc.array == a && acc.kind == strads_analysis::AccessKind::Write {
                cx.syn_error(syn::Error::new_spanned(
                    &acc.tokens,
                    format!(
                        "the loop writes `{}`, the array it iterates over; write results to \
                         another array",
                        f.arrays[a].ident
                    ),
                ));
            }
        }
    }
}

/// An ordered loop runs its iterations in order; without a static plan reconnaissance would
/// run the dependence chains one after another, so it is refused. Each access that takes
/// part in a defeating dependence is named at its token.
fn check_has_strategy(cx: &Ctxt, m: &Model) -> bool {
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
fn check_expect(cx: &Ctxt, m: &Model) {
    let Some((expect, span)) = m.args.expect else {
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
    // Say which subscripts send the loop to run time, or else which accesses conflict.
    if recon && report_indirect(cx, m, RECON_SUBSCRIPT) {
        return;
    }
    if recon && !spec.has_indirect() {
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
fn check_values_mut_static(cx: &Ctxt, m: &Model) {
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
fn location(tokens: &TokenStream) -> (usize, usize, String) {
    let start = tokens
        .clone()
        .into_iter()
        .next()
        .map(|t| t.span().start())
        .map_or((0, 0), |s| (s.line, s.column));
    (start.0, start.1, tokens.to_string())
}

/// One error at every subscript read from data; whether there was any.
fn report_indirect(cx: &Ctxt, m: &Model, msg: &str) -> bool {
    let mut at: BTreeMap<(usize, usize, String), &TokenStream> = BTreeMap::new();
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
    let mut at: BTreeMap<(usize, usize, String), (usize, Vec<String>)> = BTreeMap::new();
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
