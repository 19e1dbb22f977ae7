//! The pipeline: parse → model → walk → analyse → check → emit. On any error the original
//! function is emitted unchanged beside the errors, so later code and the IDE keep working.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use strads_analysis::{
    Access, ApplySpec, ArraySpec, BufferSpec, LoopSpec, ReductionSpec, SpaceKind, StrategyKind,
    SyncReport, analyze, buffers_report, reductions_report, report,
};

use crate::arrays::ArrayKind;
use crate::check;
use crate::ctxt::Ctxt;
use crate::emit;
use crate::front::{LoopFn, SpaceSrc};
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
    // Parameters of the types programs hold (`Vec`, slices, ndarray) are `DistArray`s to
    // the loop, lent by a wrapper with the signature as written.
    let split = crate::bridge::split(&cx, &item);
    let loop_fn = split.as_ref().map_or(&item, |s| &s.inner);
    // A parameter of a type the loop cannot take is its only error.
    let ok = !cx.has_errors();
    let out = ok
        .then(|| LoopFn::from_syn(&cx, loop_fn, args))
        .flatten()
        .and_then(|f| expand(&cx, &f))
        .map(|expanded| match &split {
            Some(s) => s.wrap(&item, expanded),
            None => expanded,
        });
    match cx.check() {
        Ok(()) => out.unwrap_or_else(|| quote!(#item)),
        Err(e) => {
            let err = e.to_compile_error();
            quote!(#item #err)
        }
    }
}

fn expand(cx: &Ctxt, f: &LoopFn) -> Option<TokenStream> {
    let walked = walk(f);
    check::check(cx, f, &walked);
    let spec = build_spec(f, &walked);
    if cx.has_errors() {
        return None;
    }
    let analysis = analyze(&spec);
    check::check_analysis(
        cx,
        &check::Model {
            f,
            walked: &walked,
            spec: &spec,
            analysis: &analysis,
        },
    );
    if cx.has_errors() {
        return None;
    }
    let kind = analysis.kind();
    // The report: the analysis's, then the buffers' or replicas' line, then the reductions'.
    let merge = f.attrs.merge.as_ref().map(path_text);
    let sync = f.attrs.sync.then_some(SyncReport {
        hybrid: f.attrs.hybrid,
        merge: merge.as_deref(),
    });
    let kept: Vec<bool> = walked
        .reductions
        .iter()
        .map(|r| emit::logged(r, f.attrs.ordered))
        .collect();
    let mut text = report(&spec, &analysis);
    text.push_str(&buffers_report(&spec, sync));
    text.push_str(&reductions_report(&spec, &kept));
    Some(emit::emit(
        f,
        &walked,
        &spec,
        &text,
        kind == Some(StrategyKind::Reconnaissance),
    ))
}

fn build_spec(f: &LoopFn, walked: &Walked) -> LoopSpec {
    let dims: Vec<_> = f.dim_names().into_iter().map(Into::into).collect();
    let space = match f.space {
        SpaceSrc::Array(array) => SpaceKind::Array {
            array,
            sparse: f.arrays[array].kind == ArrayKind::Sparse,
        },
        SpaceSrc::Range { .. } => SpaceKind::Range,
    };
    let arrays: Vec<ArraySpec> = f
        .arrays
        .iter()
        .enumerate()
        .map(|(id, a)| {
            // A buffer's updates go to per-worker copies: to the analysis it is read-only.
            let mutable = a.mutable && !f.attrs.buffered.contains(&id);
            let written = walked
                .accesses
                .iter()
                .any(|acc| acc.array == id && acc.kind == strads_analysis::AccessKind::Write);
            ArraySpec {
                name: a.ident.to_string().into(),
                rank: a.rank,
                mutable,
                additive: mutable && written && !walked.non_additive.contains(&id),
                // Read-only arrays too: a plan is keyed by the contents of those whose
                // values steer the accesses, and by no other (PageRank's ranks, k-means'
                // centroids reach no subscript).
                steers: walked.steering.contains(&a.ident.to_string()),
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
        ordered: f.attrs.ordered,
        buffers: f
            .attrs
            .buffered
            .iter()
            .map(|&array| BufferSpec {
                array,
                average: f.attrs.sync,
                shared: f.attrs.hybrid,
                stale: f.attrs.stale,
                merge: f.attrs.merge.as_ref().map(|m| path_text(m).into()),
                apply: f.attrs.applies.iter().find(|(b, _, _)| *b == array).map(
                    |(_, func, targets)| ApplySpec {
                        function: path_text(func).into(),
                        targets: targets.clone().into(),
                    },
                ),
            })
            .collect::<Vec<_>>()
            .into(),
        max_delay: f.attrs.max_delay,
        reductions: walked
            .reductions
            .iter()
            .map(|r| ReductionSpec {
                name: r.ident.to_string().into(),
                op: r.op.ir(),
                exact: crate::emit::exact_reduction(r, f.attrs.ordered),
            })
            .collect::<Vec<_>>()
            .into(),
    }
}

/// A path as written, without spaces (`strads::merge::sum`): how the spec and the report
/// name a function.
fn path_text(p: &syn::Path) -> String {
    quote::ToTokens::to_token_stream(p)
        .to_string()
        .replace(' ', "")
}
