//! What a worker rank of a cluster job runs for the driver's call of the loop: the loop
//! struct and arrays from the driver's message, then the same call as the driver's
//! (`Call::cluster` sends this rank's results back). Registered at link time under the
//! struct's name (`linkme`), so a worker finds it by the name the driver sends.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::spec::lit;
use crate::arrays::ArrayKind;
use crate::front::LoopFn;

/// The serve function of loop `f` (statements `run` after the arrays are bound) and its
/// registration.
pub(super) fn serve(
    f: &LoopFn,
    struct_name: &syn::Ident,
    has_lifetime: bool,
    run: &TokenStream,
) -> TokenStream {
    let private = quote!(::strads::__private);
    let (ty, path) = if has_lifetime {
        (
            quote!(#struct_name<'static>),
            quote!(#struct_name::<'static>),
        )
    } else {
        (quote!(#struct_name), quote!(#struct_name))
    };
    let mut takes = Vec::new();
    let mut binds = Vec::new();
    let mut puts = Vec::new();
    for (k, a) in f.arrays.iter().enumerate() {
        let (elem, rank, ident) = (&a.elem, lit(a.rank as i128), &a.ident);
        let idx = lit(k as i128);
        let take = match a.kind {
            ArrayKind::Dense => quote!(__serve.dense::<#elem, #rank>(#idx)?),
            ArrayKind::Sparse => quote!(__serve.sparse::<#elem, #rank>(#idx)?),
        };
        if a.owned {
            takes.push(quote!(let mut #ident = #take;));
            puts.push(quote!(__serve.put(#idx, #ident)?;));
        } else {
            let held = format_ident!("__held_{}", ident);
            takes.push(quote!(let mut #held = #take;));
            binds.push(if a.mutable {
                quote!(let #ident = &mut #held;)
            } else {
                quote!(let #ident = &#held;)
            });
            puts.push(quote!(__serve.put(#idx, #held)?;));
        }
    }
    let name = struct_name.to_string();
    let slot = format_ident!("__STRADS_REMOTE_{}", name.to_uppercase());
    quote! {
        impl #ty {
            /// Runs this rank's part of the driver's call (a cluster worker).
            #[doc(hidden)]
            #[allow(unused_variables, unused_mut, unused_braces, clippy::all)]
            fn __strads_serve(
                __serve: &mut #private::Serve<'_>,
            ) -> ::core::result::Result<(), ::std::string::String> {
                static __STRADS_LOOP: #private::LoopState = #private::LoopState::new(#path::SPEC);
                let __loop: #ty = {
                    use #private::{ProbeNone as _, ProbeSerde as _};
                    (&#private::Probe::<#ty>(::core::option::Option::None))
                        .decode(__serve.captured_bytes(), __serve.name())?
                };
                #(#takes)*
                {
                    #(#binds)*
                    #run
                }
                #(#puts)*
                ::core::result::Result::Ok(())
            }
        }

        #[#private::linkme::distributed_slice(#private::LOOPS)]
        #[linkme(crate = #private::linkme)]
        #[doc(hidden)]
        static #slot: #private::RemoteLoop = #private::RemoteLoop {
            name: ::core::concat!(::core::module_path!(), "::", #name),
            spec: || #path::SPEC,
            serve: #path::__strads_serve,
        };
    }
}
