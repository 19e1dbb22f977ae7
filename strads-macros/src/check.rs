//! The rules: one function per rule, each saying why it holds (serde_derive's
//! `internals/check.rs`). The walker and the analysis collect facts; these functions judge
//! them and report every violation at its own token.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;
use strads_analysis::{Analysis, LoopSpec, StrategyKind, Subscript, describe, format_dist};

use crate::arrays::ArrayKind;
use crate::attr::Expect;
use crate::ctxt::Ctxt;
use crate::front::{LoopFn, SpaceSrc};
use crate::patterns::Fix;
use crate::syntax::for_span;
use crate::walk::{Fact, ReduceOp, Walked};

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

/// Iterations run on several workers at once: none can end the loop for the others.
fn check_no_break(cx: &Ctxt, fact: &Fact) {
    if let Fact::Break(at) = fact {
        cx.error_spanned_by(
            at,
            "`break` would leave the parallel loop early, but its iterations are spread \
             over workers that run at the same time; filter the iterations instead \
             (`if !wanted { continue; }`), or run this loop serially",
        );
    }
}

/// Nor can one iteration return from the function while others still run.
fn check_no_return(cx: &Ctxt, fact: &Fact) {
    if let Fact::Return(at) = fact {
        cx.error_spanned_by(
            at,
            "`return` would leave the parallel loop from one iteration while others run \
             on other workers; use `continue` to end this iteration, and compute the \
             function's result after the loop",
        );
    }
}

/// `?` is a `return` too.
fn check_no_try(cx: &Ctxt, fact: &Fact) {
    if let Fact::Try(span) = fact {
        cx.syn_error(syn::Error::new(
            *span,
            "`?` would return from the function in the middle of the parallel loop; handle \
             the error inside the iteration (`match`, `unwrap_or`), or validate the data \
             before the loop",
        ));
    }
}

/// Workers run the body synchronously; nothing would poll a future.
fn check_no_async(cx: &Ctxt, fact: &Fact) {
    if let Fact::Async(at) = fact {
        cx.error_spanned_by(
            at,
            "`async` blocks cannot run inside a `#[parallel_for]` loop body",
        );
    }
}

/// The body already runs in parallel, one iteration on one worker.
fn check_not_nested(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    if let Fact::Nested(attr) = fact {
        cx.error_spanned_by(
            attr,
            format!(
                "`#[parallel_for]` cannot be nested: this code is inside the parallel \
                 loop of `{}`, where each iteration runs on one worker; remove this \
                 attribute (the inner loop then runs serially within each iteration), \
                 or move the inner loop into its own `#[parallel_for]` function and \
                 call it outside this loop",
                f.item.sig.ident
            ),
        );
    }
}

/// Every worker has its own copy of an outer variable: a write would be lost, unless it is
/// a reduction update strads combines after the loop.
fn check_outer_writes(cx: &Ctxt, fact: &Fact) {
    match fact {
        Fact::OuterWrite { name, place } => cx.error_spanned_by(
            place,
            format!(
                "the loop writes `{name}`, a variable from outside the loop; iterations run \
                 on several workers, so outer variables are read-only inside a \
                 `#[parallel_for]` loop: keep per-iteration values in a local, or store \
                 results in a `DistArray` indexed by the iteration"
            ),
        ),
        Fact::OuterAssign { name, at, like } => {
            let msg = match like {
                Some((op, left)) => {
                    let written = if *left {
                        format!("{name} = {name} {op} ..")
                    } else {
                        format!("{name} = .. {op} {name}")
                    };
                    format!(
                        "`{written}` is not recognised as a reduction; write `{name} {op}= ..`, \
                         so that each worker accumulates its own part and strads combines the \
                         parts after the loop"
                    )
                }
                None => format!(
                    "the loop assigns `{name}`, a variable from outside the loop; iterations \
                     run on several workers, so inside a `#[parallel_for]` loop an outer \
                     variable is either read-only or a reduction updated only by `{name} += \
                     e`, `{name} *= e`, `{name} = {name}.max(e)` or `{name} = {name}.min(e)`: \
                     keep per-iteration values in a local, or store results in a `DistArray` \
                     indexed by the iteration"
                ),
            };
            cx.error_spanned_by(at, msg);
        }
        Fact::OuterCompound { name, op, at } if op == "-=" => cx.error_spanned_by(
            at,
            format!(
                "`{name} -= ..` on a variable from outside the loop cannot be split \
                 across workers: strads combines per-worker parts of `+=`, `*=`, \
                 `max` and `min` only; write `{name} += -(..)` to accumulate a \
                 difference"
            ),
        ),
        Fact::OuterCompound { name, op, at } => cx.error_spanned_by(
            at,
            format!(
                "`{name} {op} ..` on a variable from outside the loop cannot be split \
                 across workers: strads combines per-worker parts of `+=`, `*=`, \
                 `max` and `min` only; keep per-iteration values in a local, or \
                 store results in a `DistArray` indexed by the iteration"
            ),
        ),
        _ => {}
    }
}

/// The macro rewrites a reduction update into an update of the worker's accumulator, which
/// it cannot do inside another macro's tokens.
fn check_update_outside_macros(cx: &Ctxt, fact: &Fact) {
    if let Fact::UpdateInMacro { name, op, at } = fact {
        cx.error_spanned_by(
            at,
            format!(
                "strads cannot rewrite the reduction update of `{name}` inside a macro; \
                 move it out of the macro, as its own statement `{}`",
                match op {
                    ReduceOp::Add | ReduceOp::Mul => format!("{name} {} ..;", op.as_str()),
                    ReduceOp::Max | ReduceOp::Min => {
                        format!("{name} = {name}.{}(..);", op.as_str())
                    }
                }
            ),
        );
    }
}

/// Each worker updates its own copy of a write-back buffer, and the copies' differences are
/// added up: only `+=` and `-=` merge that way.
fn check_buffer_updates(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::BufferWrite { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "`{name}` is a write-back buffer of this loop (`buffer({name})`): update \
                     it only with `{name}[..] += e` or `{name}[..] -= e`, since each worker \
                     updates its own copy and the copies' differences are added to `{name}` \
                     after the loop"
                ),
            );
        }
        Fact::BufferRow { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "this is a row of `{name}`, a write-back buffer of this loop \
                     (`buffer({name})`): update it only with `row[k] += e` or `row[k] -= e` and \
                     read it by index, since each worker updates its own copy and the copies' \
                     differences are added to `{name}` at fixed points"
                ),
            );
        }
        _ => {}
    }
}

/// The analysis needs one subscript per dim of every access.
fn check_index_shape(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::IndexShape { array, at, got } => {
            let (name, rank) = (&f.arrays[*array].ident, f.arrays[*array].rank);
            let msg = match got {
                None => format!(
                    "`{name}` has {rank} dims; index it with one subscript per dim: \
                     `{name}[[i, j{}]]`",
                    ", ..".repeat(rank.saturating_sub(2).min(1))
                ),
                Some(got) => format!("`{name}` has {rank} dims but this index has {got}"),
            };
            cx.error_spanned_by(at, msg);
        }
        Fact::MethodArity { array, method, at } => {
            let name = &f.arrays[*array].ident;
            let arg = if method.starts_with("row") {
                "i"
            } else {
                "[..]"
            };
            cx.error_spanned_by(at, format!("`{name}.{method}({arg})` takes one index"));
        }
        _ => {}
    }
}

/// The analysis sees an array only through its accesses: every use must be an element or a
/// row it can follow.
fn check_arrays_by_element(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::ArrayInMacro { array, span } => {
            let name = &f.arrays[*array].ident;
            cx.syn_error(syn::Error::new(
                *span,
                format!(
                    "array `{name}` is used inside a macro strads cannot read; read the element \
                     into a local first (`let x = {name}[[..]];`) and use the local"
                ),
            ));
        }
        Fact::OpaqueMethod { array, method } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                method,
                format!(
                    "strads cannot analyse `{name}.{method}(..)` inside a parallel loop; \
                     reach elements through `{name}[[..]]`, `{name}.row(i)`, \
                     `{name}.row_mut(i)`, `{name}.get([..])` or `{name}.get_mut([..])`"
                ),
            );
        }
        Fact::ArrayWhole { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "strads cannot follow array `{name}` here; inside a parallel loop reach its \
                     elements directly: `{name}[[..]]`, `{name}.row(i)`, `{name}.row_mut(i)`, \
                     `{name}.get([..])`"
                ),
            );
        }
        _ => {}
    }
}

/// A reduction combines per-worker parts with one operator after the loop: so one
/// operator, no reads inside the loop (a worker holds only its part), a `mut` variable and
/// a declared type for the accumulators.
fn check_reductions(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    for var in &f.outer {
        let name = var.ident.to_string();
        let Some(ups) = walked.updates.get(&name) else {
            continue;
        };
        let op = ups[0].0;
        for (other, at) in &ups[1..] {
            if *other != op {
                cx.error_spanned_by(
                    at,
                    format!(
                        "`{name}` is updated with `{}` elsewhere in the loop and with `{}` \
                         here; a reduction combines the workers' parts with one operator: \
                         use one operator for `{name}`, or accumulate the other into a \
                         second variable",
                        op.as_str(),
                        other.as_str()
                    ),
                );
            }
        }
        for (read, span) in &walked.reads {
            if *read == name {
                cx.syn_error(syn::Error::new(
                    *span,
                    format!(
                        "`{name}` is a reduction of this loop (updated with `{}`): inside the \
                         loop each worker holds only a partial {}, so it cannot be read \
                         here; read it after the loop, or keep what this iteration needs in \
                         a local",
                        op.as_str(),
                        op.partial()
                    ),
                ));
            }
        }
        if !var.mutable {
            cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a reduction of this loop (updated with `{}`), so it must be \
                     mutable: declare it `mut {name}`",
                    op.as_str()
                ),
            );
        }
        if var.ty.is_none() {
            let advice = var.fix.advice(
                &name,
                true,
                " (`f32`, `f64` or an integer type)",
                "`0u64`, `0.0f64`, `f64::MIN`",
            );
            cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a reduction of this loop (updated with `{}`); strads keeps a \
                     per-worker accumulator of its type, so it needs the type: {advice}",
                    op.as_str()
                ),
            );
        }
    }
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
            None if matches!(var.fix, Fix::Array { .. }) => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a strads array bound by a pattern and used inside the \
                     parallel loop; {}",
                    var.fix.advice(name, false, "", "")
                ),
            ),
            None => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is used inside the parallel loop, so strads stores it in the \
                     loop's struct and needs its type: {}",
                    var.fix.advice(
                        name,
                        var.mutable,
                        "",
                        "`0u64`, `0.0f64`, `x as f32`, `f64::MIN`"
                    )
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
