//! Code generation: the loop's struct, its spec constant, its body as a method generic over
//! array access, and the function rewritten to call the runtime.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Type};

use strads_analysis::{AccessKind, LoopSpec, Space, Subscript};

use crate::front::{LoopFn, SpaceSrc, collect_idents};
use crate::walk::{FoundReduction, ReduceOp, Walked};

/// Element types that are `Copy` for certain: captured by value without ceremony.
const COPY_TYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "bool", "char",
];

pub(crate) fn emit(
    f: &LoopFn,
    walked: &Walked,
    spec: &LoopSpec,
    report: &str,
    recon: bool,
) -> TokenStream {
    let item = &f.item;
    let fn_name = &item.sig.ident;
    let vis = &item.vis;
    let struct_name = format_ident!("{}Loop", camel(&fn_name.to_string()));
    let private = quote!(::strads::__private);

    // Captured outer variables, in declaration order.
    let captures: Vec<_> = f
        .outer
        .iter()
        .filter(|o| walked.captures.contains(&o.ident.to_string()))
        .collect();
    let has_ref = captures
        .iter()
        .any(|c| matches!(c.ty, Some(Type::Reference(_))));
    let lt = has_ref.then(|| quote!(<'__a>));
    let mut fields = Vec::new();
    let mut inits = Vec::new();
    let mut bindings = Vec::new();
    let mut restore = Vec::new();
    // Captures that may not be serializable: a check with one clear error at the type, and
    // serde bounds that move the derives' own errors out of the way (see `serde_bounds`).
    let mut checks = Vec::new();
    let mut ser_bounds = Vec::new();
    let mut de_bounds = Vec::new();
    for c in &captures {
        let ident = &c.ident;
        let ty =
            c.ty.as_ref()
                .expect("checked: captured variables have types");
        match ty {
            Type::Reference(r) => {
                let elem = &r.elem;
                let field_ty = quote!(#private::Cow<'__a, #elem>);
                fields.push(quote!(#vis #ident: #field_ty));
                inits.push(quote!(#ident: #private::Cow::Borrowed(#ident)));
                bindings.push(quote!(let #ident = &*self.#ident;));
                if !is_copy_type(elem) {
                    checks.push(quote_spanned!(r.span()=> #private::captured_ref::<#elem>();));
                    ser_bounds.push(field_ty.clone());
                    de_bounds.push(field_ty);
                }
            }
            ty => {
                if !is_copy_type(ty) {
                    checks.push(quote_spanned!(ty.span()=> #private::captured::<#ty>();));
                    ser_bounds.push(ty.to_token_stream());
                    de_bounds.push(ty.to_token_stream());
                }
                fields.push(quote!(#vis #ident: #ty));
                inits.push(quote!(#ident));
                if is_copy_type(ty) {
                    bindings.push(quote!(let #ident = self.#ident;));
                } else {
                    bindings.push(quote!(let #ident = (&#private::Capture(&self.#ident)).get();));
                    let m = c.mutable.then(|| quote!(mut));
                    restore.push((quote!(#m #ident), ident.clone()));
                }
            }
        }
    }

    // The body method's array parameters: every array the body names.
    let space_array = match f.space {
        SpaceSrc::Array(a) => Some(a),
        SpaceSrc::Range { .. } => None,
    };
    let mut generics = Vec::new();
    let mut params = Vec::new();
    let mut body_args_parallel = Vec::new();
    let mut views = Vec::new();
    let mut rec_views = Vec::new();
    // (array, its `Buffered`, how to reach the array) of every write-back buffer.
    let mut buffers: Vec<(syn::Ident, syn::Ident, TokenStream)> = Vec::new();
    let mut shared = Vec::new();
    let apply_targets: HashSet<usize> = f
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
        if f.buffered.contains(&a) {
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
            rec_views.push(quote!(let mut #ident = #buf_ident.original().clone();));
            buffers.push((ident.clone(), buf_ident, src));
            // Blocks (and the replay) reach their worker's copy through a view.
            body_args_parallel.push(quote!(&mut #ident));
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
            views.push(quote!(let mut #ident = __blk.view_mut(&#shared_ident, #idx);));
            rec_views.push(quote!(let mut #ident = __rec.view_mut(&#shared_ident, #idx);));
            body_args_parallel.push(quote!(&mut #ident));
        } else {
            generics.push(quote!(#tp: #private::ArrayRef<#elem, #rank> #one_d));
            params.push(quote!(#ident: &#tp));
            let r = if arr.owned {
                quote!(&#ident)
            } else {
                quote!(&*#ident)
            };
            if matches!(arr.kind, crate::front::ArrayKind::Dense) {
                // Workers read it through its name: an index outside it names the array.
                let name = ident.to_string();
                let named = quote!(let #ident = #private::Named::new(#r, #name););
                views.push(named.clone());
                rec_views.push(named);
                body_args_parallel.push(quote!(&#ident));
            } else {
                body_args_parallel.push(r.clone());
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
        }
    }

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
                crate::front::ArrayKind::Sparse => quote!(#private::SparseArray<#elem, #rank>),
                crate::front::ArrayKind::Dense => quote!(#private::DistArray<#elem, #rank>),
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

    // The body, with `continue` of the parallel loop turned into `return` and reductions
    // redirected to the block's accumulators.
    let mut body = f.body_loop().body.clone();
    ContinueToReturn {
        label: f
            .body_loop()
            .label
            .as_ref()
            .map(|l| l.name.ident.to_string()),
        depth: 0,
    }
    .visit_block_mut(&mut body);
    let reds = &walked.reductions;
    if !reds.is_empty() {
        let mut loop_vars = Vec::new();
        for p in f.nest_pats() {
            collect_idents(p, &mut loop_vars);
        }
        RedirectReductions {
            names: reds.iter().map(|r| r.ident.to_string()).collect(),
            scopes: vec![loop_vars.into_iter().map(|(i, _)| i.to_string()).collect()],
        }
        .visit_block_mut(&mut body);
    }
    let body_stmts = &body.stmts;
    let red = reduction_code(reds, vis, fn_name);
    if !reds.is_empty() {
        body_args_parallel.insert(0, quote!(&mut __red));
    }
    let ReductionCode {
        item: red_item,
        param: red_param,
        begin: red_begin,
        block: red_block,
        push: red_push,
        end: red_end,
    } = red;

    // The spec constant.
    let spec_tokens = spec_tokens(spec);
    let shapes: Vec<TokenStream> = f
        .arrays
        .iter()
        .map(|a| {
            let i = &a.ident;
            quote!(&#i.shape())
        })
        .collect();
    let n_arrays = lit(f.arrays.len() as i128);

    let doc_intro = format!(" The `#[strads::parallel_for]` loop of [`{fn_name}`].");
    let mut doc_lines: Vec<String> = report.lines().map(|l| format!(" {l}")).collect();
    if !reds.is_empty() {
        let list: Vec<String> = reds
            .iter()
            .map(|r| format!("{} {}", r.ident, r.op.as_str()))
            .collect();
        doc_lines.push(format!(
            " reductions (per-block accumulators, folded in schedule order): {}",
            list.join(", ")
        ));
    }
    let fields_block = if fields.is_empty() {
        quote!(;)
    } else {
        quote!({ #(#fields,)* })
    };
    let init = if inits.is_empty() {
        quote!(#struct_name)
    } else {
        quote!(#struct_name { #(#inits,)* })
    };

    // The rewritten function.
    let stmts = &item.block.stmts;
    let pre = &stmts[..f.loop_index];
    // Functions, constants and imports declared before the loop: the body method is outside
    // the function, so it gets its own copy of them.
    let helpers = pre.iter().filter(|s| {
        matches!(
            s,
            syn::Stmt::Item(syn::Item::Fn(_) | syn::Item::Const(_) | syn::Item::Use(_))
        )
    });
    let post = &stmts[f.loop_index + 1..];
    let original_loop = &stmts[f.loop_index];
    let attrs = &item.attrs;
    let sig = &item.sig;
    let restore_pats: Vec<_> = restore.iter().map(|(p, _)| p).collect();
    let restore_idents: Vec<_> = restore.iter().map(|(_, i)| i).collect();
    let struct_pat = if restore_idents.is_empty() {
        quote!()
    } else {
        quote!(let #struct_name { #(#restore_idents,)* .. } = __loop;)
    };
    let state = quote! {
        static __STRADS_LOOP: #private::LoopState = #private::LoopState::new(#struct_name::SPEC);
    };
    let buffered = !buffers.is_empty();
    // Buffered arrays: a block (and a replayed round) reaches its worker's copy.
    let buffer_views: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, _)| quote!(let mut #ident = #buf.view_in(&*__blk);))
        .collect();
    let space_ident = match f.space {
        SpaceSrc::Array(a) => Some(&f.arrays[a].ident),
        SpaceSrc::Range { .. } => None,
    };
    let parallel_body = if f.values_mut {
        quote!(__blk.for_each_mut(__vals, |__it| __loop.body(__it, #(#body_args_parallel),*));)
    } else {
        quote!(__blk.for_each(|__it| __loop.body(__it, #(#body_args_parallel),*));)
    };
    let buffers_new: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, src)| {
            let name = ident.to_string();
            quote!(let #buf = #private::Buffered::new(#src, __call.workers()).named(#name);)
        })
        .collect();
    // Buffers with `apply = f(..)` hand their updates to `f`; the others are merged.
    let apply_fn = |ident: &syn::Ident| {
        f.applies
            .iter()
            .find(|(b, _, _)| &f.arrays[*b].ident == ident)
            .map(|(_, func, targets)| (func, targets))
    };
    let apply_of = |ident: &syn::Ident| {
        apply_fn(ident).map(|(func, targets)| {
            let targets = targets.iter().map(|&t| {
                let t = &f.arrays[t].ident;
                quote!(&mut #t.as_mut_slice()[__e])
            });
            quote!(|__e, __u| #func(__u, #(#targets),*))
        })
    };
    let buffers_finish: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, _)| match apply_of(ident) {
            Some(apply) => quote!(#buf.finish_apply(#apply);),
            None => quote!(#buf.finish();),
        })
        .collect();
    // Application points during the call: while every worker waits, through the arrays'
    // lent pointers (parallel run), or directly (replay, one thread).
    let buffers_apply: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, _)| match apply_fn(ident) {
            Some((func, targets)) => {
                let ex: Vec<_> = targets
                    .iter()
                    .map(|&t| format_ident!("__{}_ex", f.arrays[t].ident))
                    .collect();
                let lent = targets
                    .iter()
                    .map(|&t| format_ident!("__{}", f.arrays[t].ident));
                quote! {
                    #(let #ex = #lent.exclusive(__parked);)*
                    #buf.apply_with(__parked, |__e, __u| #func(__u, #(&mut #ex[__e]),*));
                }
            }
            None => quote!(#buf.apply(__parked);),
        })
        .collect();
    // The original loop updates a buffer with `apply` in place: hand the difference over
    // (every `max_delay` iterations as well, as the parallel run does).
    let mut serial_pre = Vec::new();
    let mut serial_post = Vec::new();
    let mut serial_every = Vec::new();
    for (ident, _, src) in &buffers {
        if let Some(apply) = apply_of(ident) {
            let before = format_ident!("__{}_before", ident);
            serial_pre.push(quote!(let #before = #ident.clone();));
            serial_every.push(quote!(#private::Buffered::apply_serial(#src, &#before, #apply);));
            serial_post.push(quote!(#private::Buffered::apply_serial(#src, &#before, #apply);));
        }
    }
    let original_loop = match f.max_delay {
        Some(n) if !serial_every.is_empty() => {
            let n = lit(n as i128);
            let mut counted = f.for_loop.clone();
            let tick: Vec<syn::Stmt> = syn::parse_quote! {
                if __strads_n > 0 && __strads_n % #n == 0 {
                    #(#serial_every)*
                }
                __strads_n += 1;
            };
            crate::front::innermost_body_mut(&mut counted, f.nest.len())
                .stmts
                .splice(0..0, tick);
            // The counter counts iterations the way `continue` cannot skip.
            counted
                .attrs
                .push(syn::parse_quote!(#[allow(clippy::explicit_counter_loop)]));
            serial_pre.push(quote!(let mut __strads_n: usize = 0;));
            quote!(#counted)
        }
        _ => quote!(#original_loop),
    };
    let block_closure = if f.values_mut {
        quote! {
            |__blk, __vals| {
                #(#views)*
                #(#buffer_views)*
                #red_block
                #parallel_body
                #red_push
            }
        }
    } else {
        quote! {
            |__blk| {
                #(#views)*
                #(#buffer_views)*
                #red_block
                #parallel_body
                #red_push
            }
        }
    };
    // With buffers, the call applies them at the schedule's application points.
    let buffered_call =
        buffered.then(|| quote!(.buffered(&|__parked: &#private::Parked| { #(#buffers_apply)* })));
    let launch = if recon {
        // Indirect subscripts: a survey pass over the same body (stand-in values, no
        // writes) makes the plan on the first call with these contents.
        quote! {
            __call #buffered_call .run_recorded(
                __space,
                &__keys,
                &__captured,
                |__rec| {
                    #(#rec_views)*
                    #red_block
                    __rec.for_each(|__it| __loop.body(__it, #(#body_args_parallel),*));
                },
                #block_closure
            );
        }
    } else if f.values_mut {
        quote!(__call #buffered_call .run_mut(&mut *#space_ident, #block_closure);)
    } else {
        quote!(__call #buffered_call .run(__space, #block_closure);)
    };
    // Read before the arrays are lent to the workers.
    let keys_stmt = recon.then(|| {
        let keys = f.arrays.iter().map(|a| {
            let i = &a.ident;
            quote!(#i.contents_key())
        });
        // Captured values that may steer the accesses key the plan too.
        let steer = captures
            .iter()
            .filter(|c| walked.steering.contains(&c.ident.to_string()))
            .map(|c| {
                let i = &c.ident;
                quote!(#private::capture_key(&__loop.#i, &mut __captured);)
            });
        quote! {
            let __keys: [(u64, u64); #n_arrays] = [#(#keys),*];
            #[allow(unused_mut)]
            let mut __captured: ::std::vec::Vec<u8> = ::std::vec::Vec::new();
            #(#steer)*
        }
    });
    // With buffers, the workers' views live in a block of their own: buffers' apply
    // functions, after it, may update the arrays those views lent out.
    let launch_scoped = if buffers_finish.is_empty() {
        quote!(#(#shared)* #launch)
    } else {
        quote!({ #(#shared)* #launch })
    };
    let run = quote! {
        // The space first: its bounds may read a capture that `__loop` then takes.
        #space_init
        let __loop = #init;
        #red_begin
        let __shapes: [&[usize]; #n_arrays] = [#(#shapes),*];
        let __call = #private::Call::new(&__STRADS_LOOP, &__shapes);
        #keys_stmt
        #(#buffers_new)*
        #launch_scoped
        #(#buffers_finish)*
        #red_end
        #struct_pat
    };
    let run = if restore.is_empty() {
        quote! {
            #state
            if #private::serial_run(&__STRADS_LOOP) {
                #(#serial_pre)*
                #original_loop
                #(#serial_post)*
            } else {
                #run
            }
        }
    } else {
        quote! {
            #state
            #[allow(unused_variables, unused_mut)]
            let (#(#restore_pats,)*) = if #private::serial_run(&__STRADS_LOOP) {
                #(#serial_pre)*
                #original_loop
                #(#serial_post)*
                (#(#restore_idents,)*)
            } else {
                #run
                (#(#restore_idents,)*)
            };
        }
    };

    let bounds = serde_bounds(&ser_bounds, &de_bounds);
    // Captured values must be serializable: one clear error at the type otherwise.
    let checks = (!checks.is_empty()).then(|| {
        quote! {
            const _: () = {
                #(#checks)*
            };
        }
    });

    quote! {
        #[doc = #doc_intro]
        #[doc = ""]
        #[doc = " ```text"]
        #(#[doc = #doc_lines])*
        #[doc = " ```"]
        #[derive(#private::serde::Serialize, #private::serde::Deserialize)]
        #[serde(crate = "::strads::__private::serde")]
        #bounds
        #vis struct #struct_name #lt #fields_block

        #checks

        #red_item

        impl #lt #struct_name #lt {
            /// The loop as the analysis saw it.
            #vis const SPEC: #private::LoopSpec = #spec_tokens;

            /// One iteration of the loop body, generic over how arrays are reached.
            #[inline(always)]
            #[allow(unused_variables, clippy::all)]
            #vis fn body<#(#generics),*>(&self, #pat: #item_ty, #red_param #(#params),*) {
                #[allow(unused_imports)]
                use #private::{ArrayMut as _, ArrayRef as _, CaptureByCopy as _, CaptureByRef as _};
                #(#helpers)*
                #(#bindings)*
                #(#body_stmts)*
            }
        }

        #(#attrs)*
        #vis #sig {
            #(#pre)*
            #run
            #(#post)*
        }
    }
}

/// `#[serde(bound(..))]` for the captures of types not known to be serializable.
///
/// Without it the derives require `T: Serialize` in their bodies, and a capture that is not
/// serializable gets four errors from inside serde's expansion. With it the requirement is
/// a where-clause of the impls: `T: Deserialize<'de>` names the impl's `'de`, and the
/// serialize bound is higher-ranked (`for<'__s>`), so neither is a trivially false bound
/// that rustc rejects; an impl whose bound fails simply does not apply. The `captured`
/// check reports the one error, at the capture's type.
fn serde_bounds(ser: &[TokenStream], de: &[TokenStream]) -> Option<TokenStream> {
    if ser.is_empty() && de.is_empty() {
        return None;
    }
    let serde = "::strads::__private::serde";
    let ser = ser
        .iter()
        .map(|t| format!("for<'__s> {}: {serde}::Serialize", tidy(t)))
        .collect::<Vec<_>>()
        .join(", ");
    let de = de
        .iter()
        .map(|t| format!("{}: {serde}::Deserialize<'de>", tidy(t)))
        .collect::<Vec<_>>()
        .join(", ");
    Some(quote!(#[serde(bound(serialize = #ser, deserialize = #de))]))
}

/// A type as source text without the token printer's extra spaces (`Vec<f32>`, not
/// `Vec < f32 >`), for the bound strings a user reads in `cargo expand`.
fn tidy(ty: &TokenStream) -> String {
    let mut s = ty.to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("& ", "&"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        ("( ", "("),
        (" )", ")"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// The code a loop's reductions add to the expansion; all empty when it has none.
#[derive(Default)]
struct ReductionCode {
    /// `struct <Fn>Reductions` with `identity` and `fold`.
    item: TokenStream,
    /// The body's `__red: &mut <Fn>Reductions,` parameter.
    param: TokenStream,
    /// Before the blocks run: the collector of the blocks' parts.
    begin: TokenStream,
    /// At the start of a block: its accumulators.
    block: TokenStream,
    /// At the end of a block: hand its part to the collector.
    push: TokenStream,
    /// After the blocks: fold the parts in schedule order, apply the total.
    end: TokenStream,
}

fn reduction_code(
    reds: &[FoundReduction],
    vis: &syn::Visibility,
    fn_name: &syn::Ident,
) -> ReductionCode {
    if reds.is_empty() {
        return ReductionCode::default();
    }
    let private = quote!(::strads::__private);
    let name = format_ident!("{}Reductions", camel(&fn_name.to_string()));
    let doc = format!(
        " Per-block accumulators of the reductions of [`{fn_name}`]: each block of a call \
         starts from `identity()`, and the parts are folded in schedule order."
    );
    let fields = reds.iter().map(|r| {
        let (x, ty) = (&r.ident, &r.ty);
        quote!(#vis #x: #ty)
    });
    let inits = reds.iter().map(|r| {
        let (x, ty) = (&r.ident, &r.ty);
        let id = match r.op {
            ReduceOp::Add => quote!(zero),
            ReduceOp::Mul => quote!(one),
            ReduceOp::Max => quote!(lowest),
            ReduceOp::Min => quote!(highest),
        };
        // At the declared type: a type that cannot be reduced is an error there.
        let value = quote_spanned!(ty.span()=> <#ty as #private::Reduce>::#id());
        quote!(#x: #value)
    });
    let folds = reds.iter().map(|r| {
        let x = &r.ident;
        combine(r.op, quote!(self.#x), quote!(part.#x))
    });
    let apply = reds.iter().map(|r| {
        let x = &r.ident;
        combine(r.op, quote!(#x), quote!(__total.#x))
    });
    ReductionCode {
        item: quote! {
            #[doc = #doc]
            #vis struct #name {
                #(#fields,)*
            }

            impl #name {
                /// Every accumulator at its operator's identity.
                #vis fn identity() -> Self {
                    #name { #(#inits,)* }
                }

                /// Combines a block's part into `self`, with each variable's operator.
                #vis fn fold(&mut self, part: &Self) {
                    #(#folds)*
                }
            }
        },
        param: quote!(__red: &mut #name,),
        begin: quote!(let __parts = #private::Parts::new();),
        block: quote!(let mut __red = #name::identity();),
        push: quote!(__parts.push(__blk.seq(), __red);),
        end: quote! {
            let __total = __parts.fold(#name::identity(), #name::fold);
            #(#apply)*
        },
    }
}

/// `acc op= part` for a reduction operator.
fn combine(op: ReduceOp, acc: TokenStream, part: TokenStream) -> TokenStream {
    match op {
        ReduceOp::Add => quote!(#acc += #part;),
        ReduceOp::Mul => quote!(#acc *= #part;),
        ReduceOp::Max => quote!(#acc = #acc.max(#part);),
        ReduceOp::Min => quote!(#acc = #acc.min(#part);),
    }
}

/// An integer literal without a type suffix: `2`, not `2usize`, for readable expansions.
fn lit(n: impl Into<i128>) -> proc_macro2::Literal {
    proc_macro2::Literal::i128_unsuffixed(n.into())
}

fn is_copy_type(ty: &Type) -> bool {
    match ty {
        Type::Path(tp) => tp
            .path
            .get_ident()
            .is_some_and(|i| COPY_TYPES.contains(&i.to_string().as_str())),
        Type::Tuple(t) => t.elems.iter().all(is_copy_type),
        Type::Array(a) => is_copy_type(&a.elem),
        _ => false,
    }
}

fn camel(s: &str) -> String {
    s.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// The spec as a constant expression. Every slice is its own `const`: a borrowed slice of
/// values with drop glue is only `'static` as the whole initializer of a constant.
fn spec_tokens(spec: &LoopSpec) -> TokenStream {
    let p = quote!(::strads::__private);
    let name = spec.name.as_ref();
    let dims = spec.dims.iter().map(|d| {
        let d = d.as_ref();
        quote!(#p::Cow::Borrowed(#d))
    });
    let space = match spec.space {
        Space::Array { array, sparse } => {
            quote!(#p::Space::Array { array: #array, sparse: #sparse })
        }
        Space::Range => quote!(#p::Space::Range),
    };
    let arrays = spec.arrays.iter().map(|a| {
        let (n, r, m) = (a.name.as_ref(), lit(a.rank as i128), a.mutable);
        let additive = a.additive.then(|| quote!(.additive()));
        let steers = a.steers.then(|| quote!(.steers()));
        quote!(#p::ArraySpec::new(#n, #r, #m) #additive #steers)
    });
    let mut sub_consts = Vec::new();
    let accesses: Vec<TokenStream> = spec
        .accesses
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let array = lit(a.array as i128);
            let kind = match a.kind {
                AccessKind::Read => quote!(#p::AccessKind::Read),
                AccessKind::Write => quote!(#p::AccessKind::Write),
            };
            let subs = a.subscripts.iter().map(|s| match s {
                Subscript::Affine(f) => {
                    let c = f.coeffs.iter().map(|&c| lit(c));
                    let k = lit(f.constant);
                    quote!(#p::Subscript::affine(&[#(#c),*], #k))
                }
                Subscript::Full => quote!(#p::Subscript::Full),
                Subscript::Indirect => quote!(#p::Subscript::Indirect),
            });
            let sub_name = format_ident!("SUBSCRIPTS_{}", i);
            sub_consts.push(quote!(const #sub_name: &[#p::Subscript] = &[#(#subs),*];));
            let line = lit(a.line);
            quote!(#p::Access::new(#array, #kind, #sub_name, #line))
        })
        .collect();
    let ordered = spec.ordered;
    let buffers = spec.buffers.iter().map(|b| {
        let array = lit(b.array as i128);
        match &b.apply {
            None => quote!(#p::BufferSpec::new(#array)),
            Some(ap) => {
                let func = ap.function.as_ref();
                let targets = ap.targets.iter().map(|&t| lit(t as i128));
                quote!(#p::BufferSpec::applied(#array, #func, &[#(#targets),*]))
            }
        }
    });
    let max_delay = match spec.max_delay {
        Some(n) => {
            let n = lit(n as i128);
            quote!(::core::option::Option::Some(#n))
        }
        None => quote!(::core::option::Option::None),
    };
    let reductions = spec.reductions.iter().map(|r| {
        let name = r.name.as_ref();
        let op = match r.op {
            strads_analysis::ReduceOp::Add => quote!(Add),
            strads_analysis::ReduceOp::Mul => quote!(Mul),
            strads_analysis::ReduceOp::Max => quote!(Max),
            strads_analysis::ReduceOp::Min => quote!(Min),
        };
        quote!(#p::ReductionSpec::new(#name, #p::ReduceOp::#op))
    });
    quote! {
        {
            const DIMS: &[#p::Cow<'static, str>] = &[#(#dims),*];
            const ARRAYS: &[#p::ArraySpec] = &[#(#arrays),*];
            #(#sub_consts)*
            const ACCESSES: &[#p::Access] = &[#(#accesses),*];
            const BUFFERS: &[#p::BufferSpec] = &[#(#buffers),*];
            const REDUCTIONS: &[#p::ReductionSpec] = &[#(#reductions),*];
            #p::LoopSpec {
                name: #p::Cow::Borrowed(#name),
                dims: #p::Cow::Borrowed(DIMS),
                space: #space,
                arrays: #p::Cow::Borrowed(ARRAYS),
                accesses: #p::Cow::Borrowed(ACCESSES),
                ordered: #ordered,
                buffers: #p::Cow::Borrowed(BUFFERS),
                max_delay: #max_delay,
                reductions: #p::Cow::Borrowed(REDUCTIONS),
            }
        }
    }
}

/// Turns `continue` of the parallel loop into `return` from the body method.
struct ContinueToReturn {
    label: Option<String>,
    /// Loops nested inside the body: an unlabelled `continue` there is theirs.
    depth: usize,
}

impl VisitMut for ContinueToReturn {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Continue(c) => {
                let ours = match &c.label {
                    Some(l) => Some(l.ident.to_string()) == self.label,
                    None => self.depth == 0,
                };
                if ours {
                    let span = c.continue_token.span;
                    *e = syn::parse_quote_spanned!(span=> return);
                }
            }
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.depth += 1;
                visit_mut::visit_expr_mut(self, e);
                self.depth -= 1;
            }
            // A closure's body is not the loop body.
            Expr::Closure(_) => {}
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Turns the reduction variables of the body into the block's accumulators: `sse += e`
/// becomes `__red.sse += e`. The walk has made sure these are their only uses; locals that
/// shadow a reduction variable are left alone.
struct RedirectReductions {
    names: HashSet<String>,
    /// Names bound inside the body, innermost scope last.
    scopes: Vec<HashSet<String>>,
}

impl RedirectReductions {
    fn bind(&mut self, pat: &syn::Pat) {
        let mut names = Vec::new();
        collect_idents(pat, &mut names);
        let scope = self.scopes.last_mut().expect("a scope");
        scope.extend(names.into_iter().map(|(i, _)| i.to_string()));
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashSet::new());
        f(self);
        self.scopes.pop();
    }

    fn is_reduction(&self, name: &str) -> bool {
        self.names.contains(name) && !self.scopes.iter().any(|s| s.contains(name))
    }
}

impl VisitMut for RedirectReductions {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e {
            if let Some(ident) = p.path.get_ident().filter(|_| p.qself.is_none()) {
                if self.is_reduction(&ident.to_string()) {
                    let ident = ident.clone();
                    *e = syn::parse_quote_spanned!(ident.span()=> __red.#ident);
                }
            }
            return;
        }
        visit_mut::visit_expr_mut(self, e);
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.scoped(|s| visit_mut::visit_block_mut(s, b));
    }

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        // The initializer does not see the names it binds.
        if let Some(init) = &mut l.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
        }
        self.bind(&l.pat);
    }

    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        self.scoped(|s| {
            for p in &c.inputs {
                s.bind(p);
            }
            s.visit_expr_mut(&mut c.body);
        });
    }

    fn visit_expr_for_loop_mut(&mut self, l: &mut syn::ExprForLoop) {
        self.visit_expr_mut(&mut l.expr);
        self.scoped(|s| {
            s.bind(&l.pat);
            s.visit_block_mut(&mut l.body);
        });
    }

    fn visit_expr_while_mut(&mut self, w: &mut syn::ExprWhile) {
        self.scoped(|s| {
            s.visit_expr_mut(&mut w.cond);
            s.visit_block_mut(&mut w.body);
        });
    }

    fn visit_expr_if_mut(&mut self, e: &mut syn::ExprIf) {
        // `if let` bindings live in the then-branch only.
        self.scoped(|s| {
            s.visit_expr_mut(&mut e.cond);
            s.visit_block_mut(&mut e.then_branch);
        });
        if let Some((_, els)) = &mut e.else_branch {
            self.visit_expr_mut(els);
        }
    }

    fn visit_expr_let_mut(&mut self, e: &mut syn::ExprLet) {
        self.visit_expr_mut(&mut e.expr);
        self.bind(&e.pat);
    }

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        self.scoped(|s| {
            s.bind(&arm.pat);
            if let Some((_, g)) = &mut arm.guard {
                s.visit_expr_mut(g);
            }
            s.visit_expr_mut(&mut arm.body);
        });
    }

    // Items see no outer variables; the walk rejects reductions inside macros.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    fn visit_macro_mut(&mut self, _: &mut syn::Macro) {}
}

#[cfg(test)]
mod tests {
    use super::camel;

    #[test]
    fn camel_case() {
        assert_eq!(camel("sgd_epoch"), "SgdEpoch");
        assert_eq!(camel("lda__sweep_2"), "LdaSweep2");
    }
}
