//! The rewritten function: the original loop when serial, else one `Call` of the runtime
//! with the loop's spaces, arrays, buffers and reductions.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::arrays::Arrays;
use super::body::ReductionCode;
use super::captures::Captures;
use super::spec::lit;
use crate::front::{LoopFn, SpaceSrc};
use crate::walk::Walked;

/// The parts the function's new body is made of.
pub(super) struct Parts<'a, 'f> {
    pub(super) f: &'f LoopFn,
    pub(super) walked: &'a Walked,
    pub(super) captures: &'a Captures<'f>,
    pub(super) arrays: &'a Arrays,
    pub(super) red: &'a ReductionCode,
    pub(super) struct_name: &'a syn::Ident,
    /// `let __space = ..;`
    pub(super) space_init: &'a TokenStream,
    /// The loop struct's value.
    pub(super) init: &'a TokenStream,
    /// Whether the loop is planned by reconnaissance.
    pub(super) recon: bool,
}

/// The statements that replace the loop (serial or one call of the runtime), and, for a
/// loop that can run across processes, the statements a worker rank runs for the driver's
/// call (see `serve`).
pub(super) fn run(parts: Parts<'_, '_>) -> (TokenStream, Option<TokenStream>) {
    let Parts {
        f,
        walked,
        captures,
        arrays,
        red,
        struct_name,
        space_init,
        init,
        recon,
    } = parts;
    let private = quote!(::strads::__private);
    let Arrays {
        body_args: body_args_parallel,
        views,
        survey_views,
        buffers,
        shared,
        lent,
        ..
    } = arrays;
    let ReductionCode {
        begin: red_begin,
        block: red_block,
        push: red_push,
        end: red_end,
        ..
    } = red;
    let restore = &captures.restore;
    let captures = &captures.list;
    let shapes: Vec<TokenStream> = f
        .arrays
        .iter()
        .map(|a| {
            let i = &a.ident;
            quote!(&#i.shape())
        })
        .collect();
    let n_arrays = lit(f.arrays.len() as i128);
    let original_loop = &f.item.block.stmts[f.loop_index];
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
    // `sync = "hybrid"`: its process's replica, shared, whose rows each iteration commits.
    let buffer_views: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, _)| {
            if f.attrs.hybrid {
                quote!(let mut #ident = #buf.shared_view_in(&*__blk);)
            } else {
                quote!(let mut #ident = #buf.view_in(&*__blk);)
            }
        })
        .collect();
    let commits: Vec<TokenStream> = buffers
        .iter()
        .filter(|_| f.attrs.hybrid)
        .map(|(ident, _, _)| quote!(#ident.commit();))
        .collect();
    let space_ident = match f.space {
        SpaceSrc::Array(a) => Some(&f.arrays[a].ident),
        SpaceSrc::Range { .. } => None,
    };
    let step = if commits.is_empty() {
        quote!(__loop.body(__it, #(#body_args_parallel),*))
    } else {
        quote!({
            __loop.body(__it, #(#body_args_parallel),*);
            #(#commits)*
        })
    };
    // An ordered loop's exact reductions learn where each iteration comes in the serial
    // order.
    let parallel_body = match (f.values_mut, red.logged) {
        (true, false) => quote!(__blk.for_each_mut(__vals, |__it| #step);),
        (false, false) => quote!(__blk.for_each(|__it| #step);),
        (true, true) => quote! {
            __blk.for_each_mut_at(__vals, |__at, __it| {
                __red.__at(__at);
                #step
            });
        },
        (false, true) => quote! {
            __blk.for_each_at(|__at, __it| {
                __red.__at(__at);
                #step
            });
        },
    };
    let buffers_new: Vec<TokenStream> = buffers
        .iter()
        .map(|(ident, buf, src)| {
            let name = ident.to_string();
            let averaged = match (&f.attrs.merge, f.attrs.sync) {
                (Some(m), true) => Some(quote!(.merged(#m))),
                (None, true) => Some(quote!(.averaged())),
                _ => None,
            };
            let averaged = if f.attrs.hybrid {
                quote!(#averaged .hybrid())
            } else {
                quote!(#averaged)
            };
            quote!(let #buf = #private::Buffered::new(#src, __call.workers()).named(#name) #averaged;)
        })
        .collect();
    // Buffers with `apply = f(..)` hand their updates to `f`; the others are merged.
    let apply_fn = |ident: &syn::Ident| {
        f.attrs
            .applies
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
    for (ident, _, src) in buffers {
        if let Some(apply) = apply_of(ident) {
            let before = format_ident!("__{}_before", ident);
            serial_pre.push(quote!(let #before = #ident.clone();));
            serial_every.push(quote!(#private::Buffered::apply_serial(#src, &#before, #apply);));
            serial_post.push(quote!(#private::Buffered::apply_serial(#src, &#before, #apply);));
        }
    }
    let original_loop = match f.attrs.max_delay {
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
    // Across processes: every loop (reconnaissance runs the driver's recorded plan).
    let clustered = true;
    let ship = clustered.then(|| {
        let wire = f.arrays.iter().enumerate().map(|(k, a)| {
            let i = &a.ident;
            let lent_ident = format_ident!("__{}", i);
            // A buffered array crosses as its buffer, which borrows it for the call.
            if let Some((_, buf, _)) = buffers.iter().find(|(b, _, _)| b == i) {
                quote!(&#buf as &dyn #private::WireArray)
            } else if f.values_mut && space_ident == Some(i) {
                // The call borrows it mutably and puts its indices here.
                quote!(&#private::Iterated as &dyn #private::WireArray)
            } else if lent.contains(&k) {
                quote!(&#lent_ident as &dyn #private::WireArray)
            } else if a.owned {
                quote!(&#i as &dyn #private::WireArray)
            } else {
                quote!(&*#i as &dyn #private::WireArray)
            }
        });
        let name = struct_name.to_string();
        let space_arg = match f.space {
            SpaceSrc::Array(_) => quote!(::core::option::Option::None::<&()>),
            SpaceSrc::Range { .. } => quote!(::core::option::Option::Some(__space)),
        };
        let parts_arg = if red_push.is_empty() {
            quote!(::core::option::Option::None)
        } else {
            quote!(::core::option::Option::Some(&__parts))
        };
        quote! {
            .cluster(
                ::core::concat!(::core::module_path!(), "::", #name),
                || {
                    use #private::{ProbeNone as _, ProbeSerde as _};
                    (&#private::Probe(::core::option::Option::Some(&__loop))).encode()
                },
                #space_arg,
                &[#(#wire),*],
                #parts_arg,
            )
        }
    });
    // With buffers, the call applies them at the schedule's application points.
    let buffered_call =
        buffered.then(|| quote!(.buffered(&|__parked: &#private::Parked| { #(#buffers_apply)* })));
    let launch = if recon {
        // Indirect subscripts: a survey pass over the same body (stand-in values, no
        // writes) makes the plan on the first call with these contents.
        quote! {
            __call #buffered_call #ship .run_surveyed(
                __space,
                &__keys,
                &__captured,
                |__survey| {
                    #(#survey_views)*
                    #red_block
                    __survey.for_each(|__it| __loop.body(__it, #(#body_args_parallel),*));
                },
                #block_closure
            )
        }
    } else if f.values_mut {
        let elem = match f.space {
            SpaceSrc::Array(a) => &f.arrays[a].elem,
            SpaceSrc::Range { .. } => unreachable!("`iter_mut()` iterates an array"),
        };
        quote! {
            __call #buffered_call #ship .run_mut(
                &mut *#space_ident,
                {
                    use #private::{ProbeValuesNone as _, ProbeValuesSerde as _};
                    (&#private::ValuesProbe::<#elem>::new()).codec()
                },
                #block_closure
            )
        }
    } else {
        quote!(__call #buffered_call #ship .run(__space, #block_closure))
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
    // The workers' views live in a block of their own: buffers' apply functions, after
    // it, may update the arrays those views lent out, and the serial loop, when the call
    // hands the loop back to it (`Ran`), takes the arrays whole.
    let launch_scoped = quote!({ #(#shared)* #launch });
    // Buffers and reductions are finished only when the plan ran.
    let finish = (!buffers_finish.is_empty() || !red_end.is_empty()).then(|| {
        quote! {
            if __serial.is_none() {
                #(#buffers_finish)*
                #red_end
            }
        }
    });
    let run = quote! {
        // The space first: its bounds may read a capture that `__loop` then takes.
        #space_init
        let __loop = #init;
        #red_begin
        let __shapes: [&[usize]; #n_arrays] = [#(#shapes),*];
        let __call = #private::Call::new(&__STRADS_LOOP, &__shapes);
        #keys_stmt
        #(#buffers_new)*
        let __serial = #private::Ran::serial(#launch_scoped);
        #finish
        #struct_pat
    };
    // A worker rank: the loop struct, arrays and space come from the driver; reductions'
    // parts go back to it (the call sends them), so nothing is folded here.
    let serve = clustered.then(|| {
        let space_serve = match &f.space {
            SpaceSrc::Array(_) => quote!(#space_init),
            SpaceSrc::Range { dims } if dims.len() == 1 => {
                quote!(let __space = &__serve.space::<#private::RangeSpace>()?;)
            }
            SpaceSrc::Range { dims } => {
                let n = lit(dims.len() as i128);
                quote!(let __space = &__serve.space::<#private::GridSpace<#n>>()?;)
            }
        };
        quote! {
            #space_serve
            #red_begin
            let __shapes: [&[usize]; #n_arrays] = [#(#shapes),*];
            let __call = #private::Call::served(&__STRADS_LOOP, &__shapes, __serve.served());
            #keys_stmt
            #(#buffers_new)*
            // A worker rank runs the plan the driver chose to run.
            let _ = #launch_scoped;
            #(#buffers_finish)*
        }
    });
    // The original loop runs when the program asks for it, or when the call hands the
    // loop back because its plan cannot beat it (timed: the cost model learns from it).
    let serial = quote! {
        if let ::core::option::Option::Some(__serial) = __serial {
            #(#serial_pre)*
            #original_loop
            #(#serial_post)*
            __serial.finish();
        }
    };
    // Checkpoints (`STRADS_CHECKPOINT`): after the call, the arrays it names and its
    // reduction variables; a call skipped by fast re-execution gets them back instead.
    // An `iter_mut()` loop's values may be other than numbers: they go with their codec.
    let coded = f.values_mut.then(|| match f.space {
        SpaceSrc::Array(a) => a,
        SpaceSrc::Range { .. } => unreachable!("`iter_mut()` iterates an array"),
    });
    let codec_stmt = coded.map(|a| {
        let elem = &f.arrays[a].elem;
        quote! {
            let __codec = {
                use #private::{ProbeValuesNone as _, ProbeValuesSerde as _};
                (&#private::ValuesProbe::<#elem>::new()).codec()
            };
        }
    });
    let held = f.arrays.iter().enumerate().map(|(k, a)| {
        let i = &a.ident;
        if coded == Some(k) {
            let r = if a.owned { quote!(&mut #i) } else { quote!(&mut *#i) };
            return quote!(#private::resume::Held::Written(&mut #private::resume::Coded(#r, __codec)));
        }
        match (a.mutable, a.owned) {
            (true, true) => quote!(#private::resume::Held::Written(&mut #i)),
            (true, false) => quote!(#private::resume::Held::Written(&mut *#i)),
            (false, true) => quote!(#private::resume::Held::Read(&#i)),
            (false, false) => quote!(#private::resume::Held::Read(&*#i)),
        }
    });
    let logged = walked.reductions.iter().map(|r| {
        let x = &r.ident;
        quote!(__log.value(&mut #x);)
    });
    let end = quote! {
        #codec_stmt
        #private::resume::end(&__STRADS_LOOP, __begun, &mut [#(#held),*], |__log| {
            let _ = &__log;
            #(#logged)*
        });
    };
    let body = if restore.is_empty() {
        quote! {
            #state
            let __begun = #private::resume::begin(&__STRADS_LOOP);
            let __serial = if __begun.skipped() {
                ::core::option::Option::None
            } else if #private::serial_run(&__STRADS_LOOP) {
                ::core::option::Option::Some(#private::SerialRun::requested())
            } else {
                #run
                __serial
            };
            #serial
            #end
        }
    } else {
        quote! {
            #state
            let __begun = #private::resume::begin(&__STRADS_LOOP);
            #[allow(unused_variables, unused_mut)]
            let (__serial, #(#restore_pats,)*) = if __begun.skipped() {
                (::core::option::Option::None, #(#restore_idents,)*)
            } else if #private::serial_run(&__STRADS_LOOP) {
                (
                    ::core::option::Option::Some(#private::SerialRun::requested()),
                    #(#restore_idents,)*
                )
            } else {
                #run
                (__serial, #(#restore_idents,)*)
            };
            #serial
            #end
        }
    };
    (body, serve)
}
