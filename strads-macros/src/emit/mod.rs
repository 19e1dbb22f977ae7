//! Code generation: the loop's struct, its spec constant, its body as a method generic over
//! array access, and the function rewritten to call the runtime.
//!
//! - `captures`: the struct's fields (captured values) and their serializability checks;
//! - `arrays`: the body's array parameters, views, buffers, lent arrays; the space;
//! - `body`: the body method (`continue` as `return`, reductions redirected);
//! - `spec`: the `LoopSpec` constant;
//! - `call`: the function's new body (the original loop, or one runtime `Call`);
//! - `serve`: what a worker rank runs for the driver's call, registered by name.

mod arrays;
mod body;
pub(crate) use body::{exact_reduction, logged};
mod call;
mod captures;
mod serve;
mod spec;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use strads_analysis::LoopSpec;

use crate::front::LoopFn;
use crate::walk::Walked;

/// The expansion of loop `f`.
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
    let struct_name = format_ident!("{}Loop", spec::camel(&fn_name.to_string()));
    let private = quote!(::strads::__private);
    let caps = captures::captures(f, walked);
    let mut arrays = arrays::arrays(f, walked, spec);
    let (pat, item_ty, space_init) = arrays::space(f);
    let (body, red) = body::body(f, walked, spec.ordered);
    let reds = &walked.reductions;
    if !reds.is_empty() {
        arrays.body_args.insert(0, quote!(&mut __red));
    }
    let body_stmts = &body.stmts;
    let integers: Vec<bool> = walked.reductions.iter().map(body::integer).collect();
    let spec_tokens = spec::spec_tokens(spec, &integers);
    let doc_intro = format!(" The `#[strads::parallel_for]` loop of [`{fn_name}`].");
    let doc_lines: Vec<String> = report.lines().map(|l| format!(" {l}")).collect();
    let fields = &caps.fields;
    let inits = &caps.inits;
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
    let attrs = &item.attrs;
    let sig = &item.sig;
    let (run, serve) = call::run(call::Parts {
        f,
        walked,
        captures: &caps,
        arrays: &arrays,
        red: &red,
        struct_name: &struct_name,
        space_init: &space_init,
        init: &init,
        recon,
    });
    let serve = serve.map(|run| serve::serve(f, &struct_name, caps.lt.is_some(), &run));
    let captures::Captures {
        lt,
        bindings,
        checks,
        bounds,
        ..
    } = caps;
    let arrays::Arrays {
        generics, params, ..
    } = arrays;
    let body::ReductionCode {
        item: red_item,
        param: red_param,
        ..
    } = red;
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

        #serve

        #(#attrs)*
        #vis #sig {
            #(#pre)*
            #run
            #(#post)*
        }
    }
}
