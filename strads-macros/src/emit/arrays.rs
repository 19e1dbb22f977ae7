//! The arrays: the body's generic parameters, and how blocks, the survey pass and apply
//! functions reach each array (views, buffers, lent arrays); and the iteration space.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use strads_analysis::LoopSpec;

use super::spec::lit;
use crate::front::{LoopFn, SpaceSrc};
use crate::walk::Walked;

/// What the arrays add to the expansion.
pub(super) struct Arrays {
    /// The body method's generic parameters and parameters.
    pub(super) generics: Vec<TokenStream>,
    pub(super) params: Vec<TokenStream>,
    /// The body's array arguments in a block (and the survey pass).
    pub(super) body_args: Vec<TokenStream>,
    /// A block's views.
    pub(super) views: Vec<TokenStream>,
    /// The survey pass's views.
    pub(super) survey_views: Vec<TokenStream>,
    /// (array, its `Buffered`, how to reach the array) of every write-back buffer.
    pub(super) buffers: Vec<(syn::Ident, syn::Ident, TokenStream)>,
    /// The arrays lent to the workers (`SharedMut`).
    pub(super) shared: Vec<TokenStream>,
    /// Which arrays (indices into `LoopFn::arrays`) are lent, as `__<name>`.
    pub(super) lent: Vec<usize>,
}

/// The arrays of loop `f`.
pub(super) fn arrays(f: &LoopFn, walked: &Walked, spec: &LoopSpec) -> Arrays {
    let private = quote!(::strads::__private);
    // The body method's array parameters: every array the body names.
    let space_array = match f.space {
        SpaceSrc::Array(a) => Some(a),
        SpaceSrc::Range { .. } => None,
    };
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut body_args = Vec::new();
    let mut views = Vec::new();
    let mut survey_views = Vec::new();
    // (array, its `Buffered`, how to reach the array) of every write-back buffer.
    let mut buffers: Vec<(syn::Ident, syn::Ident, TokenStream)> = Vec::new();
    let mut shared = Vec::new();
    let mut lent = Vec::new();
    let apply_targets: HashSet<usize> = f
        .attrs
        .applies
        .iter()
        .flat_map(|(_, _, t)| t.iter().copied())
        .collect();
    for &a in &walked.arrays_used {
        let arr = &f.arrays[a];
        let ident = &arr.ident;
        let tp = format_ident!("__{}", ident.to_string().to_uppercase());
        let elem = &arr.elem;
        let rank = lit(arr.rank as i128);
        let one_d = (arr.rank == 1).then(|| {
            if arr.mutable {
                quote!(+ ::core::ops::IndexMut<usize, Output = #elem>)
            } else {
                quote!(+ ::core::ops::Index<usize, Output = #elem>)
            }
        });
        let idx = lit(a as i128);
        if f.attrs.buffered.contains(&a) {
            // A write-back buffer: each worker runs on its own copy (see `Buffered`).
            generics.push(quote!(#tp: #private::ArrayMut<#elem, #rank> #one_d));
            params.push(quote!(#ident: &mut #tp));
            let buf_ident = format_ident!("__{}_buffer", ident);
            let src = if arr.owned {
                quote!(&mut #ident)
            } else {
                quote!(&mut *#ident)
            };
            // Recording must not touch the copies: it gets a throwaway one.
            survey_views.push(quote!(let mut #ident = #buf_ident.original().clone();));
            buffers.push((ident.clone(), buf_ident, src));
            // Blocks (and the replay) reach their worker's copy through a view.
            body_args.push(quote!(&mut #ident));
        } else if arr.mutable && Some(a) != space_array {
            generics.push(quote!(#tp: #private::ArrayMut<#elem, #rank> #one_d));
            params.push(quote!(#ident: &mut #tp));
            let shared_ident = format_ident!("__{}", ident);
            let src = if arr.owned {
                quote!(&mut #ident)
            } else {
                quote!(&mut *#ident)
            };
            // An array the loop never writes keeps its version: plans made from its
            // contents stay valid (unless an apply function updates it).
            let lend = if spec.writes(a) || apply_targets.contains(&a) {
                quote!(new)
            } else {
                quote!(new_unwritten)
            };
            shared.push(quote!(let #shared_ident = #private::SharedMut::#lend(#src);));
            lent.push(a);
            views.push(quote!(let mut #ident = __blk.view_mut(&#shared_ident, #idx);));
            survey_views.push(quote!(let mut #ident = __survey.view_mut(&#shared_ident, #idx);));
            body_args.push(quote!(&mut #ident));
        } else {
            generics.push(quote!(#tp: #private::ArrayRef<#elem, #rank> #one_d));
            params.push(quote!(#ident: &#tp));
            let r = if arr.owned {
                quote!(&#ident)
            } else {
                quote!(&*#ident)
            };
            if matches!(arr.kind, crate::arrays::ArrayKind::Dense) {
                // Workers read it through its name: an index outside it names the array.
                let name = ident.to_string();
                let named = quote!(let #ident = #private::Named::new(#r, #name););
                views.push(named.clone());
                survey_views.push(named);
                body_args.push(quote!(&#ident));
            } else {
                body_args.push(r.clone());
            }
        }
    }

    // Apply functions may update arrays the body never names: lend those too, so that the
    // buffers can be applied while the workers wait.
    let mut apply_targets: Vec<usize> = apply_targets.into_iter().collect();
    apply_targets.sort_unstable();
    for &t in &apply_targets {
        if !walked.arrays_used.contains(&t) {
            let arr = &f.arrays[t];
            let ident = &arr.ident;
            let shared_ident = format_ident!("__{}", ident);
            let src = if arr.owned {
                quote!(&mut #ident)
            } else {
                quote!(&mut *#ident)
            };
            shared.push(quote!(let #shared_ident = #private::SharedMut::new(#src);));
            lent.push(t);
        }
    }
    Arrays {
        generics,
        params,
        body_args,
        views,
        survey_views,
        buffers,
        shared,
        lent,
    }
}

/// The iteration: the body's item pattern and type, and the statement that makes the
/// space (`__space`).
pub(super) fn space(f: &LoopFn) -> (TokenStream, TokenStream, TokenStream) {
    let private = quote!(::strads::__private);
    // The iteration item: `(key, &value)` for arrays, the index for ranges, the indices
    // `[i, j, ..]` for a nest of ranges.
    let pat = if f.nest.is_empty() {
        let p = &f.for_loop.pat;
        quote!(#p)
    } else {
        let pats = f.nest_pats();
        quote!([#(#pats),*])
    };
    let (item_ty, space_init) = match &f.space {
        SpaceSrc::Array(a) => {
            let arr = &f.arrays[*a];
            let (elem, rank, ident) = (&arr.elem, lit(arr.rank as i128), &arr.ident);
            let ty = match arr.kind {
                crate::arrays::ArrayKind::Sparse => quote!(#private::SparseArray<#elem, #rank>),
                crate::arrays::ArrayKind::Dense => quote!(#private::DistArray<#elem, #rank>),
            };
            if f.values_mut {
                // `iter_mut()`: the values travel with `run_mut`; no shared space.
                (quote!(([usize; #rank], &mut #elem)), quote!())
            } else {
                (
                    quote!(([usize; #rank], &#elem)),
                    quote!(let __space: &#ty = &#ident;),
                )
            }
        }
        SpaceSrc::Range { dims } => {
            // `(constructor, arguments)` of one dim: `new(start, end)` or
            // `stepped(start, end, step)`.
            let dim = |d: &crate::front::RangeDim| {
                let (start, end) = (&d.start, &d.end);
                let end = if d.inclusive {
                    quote!((#end) + 1)
                } else {
                    quote!(#end)
                };
                match &d.step {
                    Some(step) => (quote!(stepped), quote!(#start, #end, #step)),
                    None => (quote!(new), quote!(#start, #end)),
                }
            };
            if let [d] = dims.as_slice() {
                let (ctor, args) = dim(d);
                (
                    quote!(usize),
                    quote!(let __space = &#private::RangeSpace::#ctor(#args);),
                )
            } else {
                // An inner loop's bounds are computed only when the loops around it run
                // (as in the serial nest, where `m - 1` is never computed for no `i`).
                let n = lit(dims.len() as i128);
                let names: Vec<_> = (0..dims.len()).map(|k| format_ident!("__r{}", k)).collect();
                let lets = dims.iter().enumerate().map(|(k, d)| {
                    let (ctor, args) = dim(d);
                    let name = &names[k];
                    let before = &names[..k];
                    if k == 0 {
                        quote!(let #name = #private::RangeDim::#ctor(#args);)
                    } else {
                        quote! {
                            let #name = if #(#before.is_empty())||* {
                                #private::RangeDim::new(0, 0)
                            } else {
                                #private::RangeDim::#ctor(#args)
                            };
                        }
                    }
                });
                (
                    quote!([usize; #n]),
                    quote! {
                        let __space = &{
                            #(#lets)*
                            #private::GridSpace::new([#(#names),*])
                        };
                    },
                )
            }
        }
    };
    (pat, item_ty, space_init)
}
