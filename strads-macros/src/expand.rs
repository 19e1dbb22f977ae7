//! The pipeline: parse → model → walk → analyse → check → emit. On any error the original
//! function is emitted unchanged beside the errors, so later code and the IDE keep working.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use strads_analysis::{
    Access, Analysis, ArraySpec, LoopSpec, Space, StrategyKind, Subscript, analyze, describe,
    report,
};

use crate::attr::{Args, Expect};
use crate::ctxt::Ctxt;
use crate::emit;
use crate::front::{ArrayKind, LoopFn, SpaceSrc, for_span};
use crate::walk::{Walked, walk};

pub(crate) fn parallel_for(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(e) => {
            // The error first: appended after an expression it would glue onto it.
            let mut out = syn::Error::new(
                e.span(),
                format!("`#[parallel_for]` goes on a function: {e}"),
            )
            .to_compile_error();
            out.extend(input);
            return out;
        }
    };
    let cx = Ctxt::new();
    let args = Args::from_tokens(&cx, args);
    let out = LoopFn::from_syn(&cx, &item).and_then(|mut f| {
        f.buffered = buffered_arrays(&cx, &args, &f);
        f.applies = apply_targets(&cx, &args, &f);
        f.max_delay = args.max_delay.map(|(n, _)| n);
        expand(&cx, &args, &f)
    });
    match cx.check() {
        Ok(()) => out.unwrap_or_else(|| quote!(#item)),
        Err(e) => {
            let err = e.to_compile_error();
            quote!(#item #err)
        }
    }
}

fn expand(cx: &Ctxt, args: &Args, f: &LoopFn) -> Option<TokenStream> {
    let walked = walk(cx, f);
    check_captures(cx, f, &walked);
    check_arrays(cx, f, &walked);
    let spec = build_spec(f, &walked, args);
    if cx.has_errors() {
        return None;
    }
    let analysis = analyze(&spec);
    let kind = analysis.kind();
    if kind.is_none() {
        // Only ordered loops get here: an unordered one falls back to reconnaissance.
        cx.syn_error(syn::Error::new(
            for_span(&f.for_loop),
            format!(
                "strads cannot run this ordered loop in parallel: {}; every iteration must \
                 wait for the one before it. Drop `ordered` if any order of the iterations \
                 will do (strads then records the accesses at run time and runs \
                 non-conflicting iterations side by side), or change the accesses so that \
                 iterations that differ in one index (1D) or in two (2D) touch different \
                 elements",
                analysis.reason.as_deref().unwrap_or("no strategy applies")
            ),
        ));
        return None;
    }
    let fallback = strads_analysis::fallback_note(&spec, &analysis);
    if let Some((expect, span)) = args.expect {
        let ok = expect.holds(kind);
        if !ok {
            let proved = &analysis.candidates[0].strategy;
            let why = match expect {
                Expect::Kind(StrategyKind::OneD) => format!(": {}", why_not_1d(&spec, &analysis)),
                _ => String::new(),
            };
            let or_static =
                if expect == Expect::Static || kind == Some(StrategyKind::Reconnaissance) {
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
                    describe(&spec, *proved),
                    kind.map_or("none", StrategyKind::as_str),
                ),
            ));
            // Say which subscript sends the loop to run time.
            if kind == Some(StrategyKind::Reconnaissance) {
                let indirect = spec
                    .accesses
                    .iter()
                    .zip(&walked.accesses)
                    .find_map(|(a, found)| {
                        let pos = a
                            .subscripts
                            .iter()
                            .position(|s| matches!(s, Subscript::Indirect))?;
                        found.subscript_tokens.get(pos)
                    });
                match indirect {
                    Some(tokens) => cx.syn_error(syn::Error::new_spanned(
                        tokens,
                        "this subscript is read from data or computed, so the analysis cannot \
                         prove a strategy at compile time: strads records the loop's accesses \
                         at run time instead (reconnaissance)",
                    )),
                    None => cx.syn_error(syn::Error::new(
                        for_span(&f.for_loop),
                        format!(
                            "this loop falls back to reconnaissance: {}",
                            fallback.as_deref().unwrap_or("no static strategy")
                        ),
                    )),
                }
            }
            return None;
        }
    }
    if f.values_mut && kind == Some(StrategyKind::Reconnaissance) {
        cx.syn_error(syn::Error::new(
            for_span(&f.for_loop),
            format!(
                "a loop over `iter_mut()` needs a strategy proved at compile time, but {}: \
                 compute the indices before the loop, or iterate with `iter()` and keep the \
                 per-entry state in a `DistArray`",
                fallback.as_deref().unwrap_or("it needs reconnaissance")
            ),
        ));
        return None;
    }
    let mut text = report(&spec, &analysis);
    if !f.buffered.is_empty() {
        let names: Vec<String> = f
            .buffered
            .iter()
            .map(|&a| format!("`{}`", f.arrays[a].ident))
            .collect();
        let every = f
            .max_delay
            .map(|n| format!(", every {n} iterations of each worker"))
            .unwrap_or_default();
        text.push_str(&format!(
            "buffered: {} (exempt from the analysis: each worker updates its own copy with \
             `+=`/`-=`; the copies' differences are applied in worker order at the end of \
             every step{every} and of the loop)\n",
            names.join(", ")
        ));
    }
    Some(emit::emit(
        f,
        &walked,
        &spec,
        &text,
        kind == Some(StrategyKind::Reconnaissance),
    ))
}

/// For each dim, a dependence that crosses it: why no dim can be split alone.
fn why_not_1d(spec: &LoopSpec, analysis: &Analysis) -> String {
    let crossings: Vec<String> = (0..spec.dims.len())
        .filter_map(|d| {
            let v = analysis.vectors.iter().find(|v| !v.dist[d].is_zero())?;
            let (src, dst) = (
                spec.accesses[v.src].display(spec).to_string(),
                spec.accesses[v.dst].display(spec).to_string(),
            );
            let through = if src == dst {
                src
            } else {
                format!("{src} and {dst}")
            };
            Some(format!(
                "iterations with different `{}` touch the same element through {through}",
                spec.dims[d]
            ))
        })
        .collect();
    format!("no dim can be split alone: {}", crossings.join(", and "))
}

/// The arrays named in `buffer(..)`, each a `&mut DistArray` parameter of the function.
fn buffered_arrays(cx: &Ctxt, args: &Args, f: &LoopFn) -> Vec<usize> {
    let mut out = Vec::new();
    for name in &args.buffers {
        match f.array_index(&name.to_string()) {
            Some(a) if f.arrays[a].mutable && f.arrays[a].kind == ArrayKind::Dense => out.push(a),
            _ => cx.error_spanned_by(
                name,
                format!(
                    "`buffer({name})` names no array the loop may write: buffers are \
                     `&mut DistArray` parameters"
                ),
            ),
        }
    }
    out
}

/// `buffer(g, apply = f(w, ..))`: the targets are `&mut DistArray` parameters other than
/// the buffer itself.
fn apply_targets(cx: &Ctxt, args: &Args, f: &LoopFn) -> Vec<(usize, syn::Path, Vec<usize>)> {
    let mut out = Vec::new();
    for (buf, func, targets) in &args.applies {
        let Some(b) = f.array_index(&buf.to_string()) else {
            continue; // reported by `buffered_arrays`
        };
        let mut ids = Vec::new();
        for t in targets {
            match f.array_index(&t.to_string()) {
                Some(a)
                    if a != b
                        && f.arrays[a].mutable
                        && f.arrays[a].kind == ArrayKind::Dense
                        && !f.buffered.contains(&a) =>
                {
                    ids.push(a)
                }
                _ => cx.error_spanned_by(
                    t,
                    format!(
                        "`{t}` is not an array the apply function can update: name `&mut \
                         DistArray` parameters other than the buffer `{buf}`"
                    ),
                ),
            }
        }
        out.push((b, func.clone(), ids));
    }
    out
}

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

fn build_spec(f: &LoopFn, walked: &Walked, args: &Args) -> LoopSpec {
    let dims: Vec<_> = f.dim_names().into_iter().map(Into::into).collect();
    let space = match f.space {
        SpaceSrc::Array(array) => Space::Array {
            array,
            sparse: f.arrays[array].kind == ArrayKind::Sparse,
        },
        SpaceSrc::Range { .. } => Space::Range,
    };
    let arrays: Vec<ArraySpec> = f
        .arrays
        .iter()
        .enumerate()
        .map(|(id, a)| {
            // A buffer's updates go to per-worker copies: to the analysis it is read-only.
            let mutable = a.mutable && !f.buffered.contains(&id);
            let written = walked
                .accesses
                .iter()
                .any(|acc| acc.array == id && acc.kind == strads_analysis::AccessKind::Write);
            ArraySpec {
                name: a.ident.to_string().into(),
                rank: a.rank,
                mutable,
                additive: mutable && written && !walked.non_additive.contains(&id),
                steers: mutable && written && walked.steering.contains(&a.ident.to_string()),
            }
        })
        .collect();
    let accesses: Vec<Access> = walked
        .accesses
        .iter()
        .map(|a| Access {
            array: a.array,
            kind: a.kind,
            subscripts: a.subscripts.clone().into(),
            line: a.span.start().line as u32,
        })
        .collect();
    LoopSpec {
        name: f.item.sig.ident.to_string().into(),
        dims: dims.into(),
        space,
        arrays: arrays.into(),
        accesses: accesses.into(),
        ordered: args.ordered,
    }
}
