//! `#[strads::main]`: a cluster job's worker ranks go straight to serving the driver's
//! calls, and the driver starts its workers before the program's first line (like
//! `#[tokio::main]`). A program run as one process runs `main` as written.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

/// Expands `#[strads::main]` on `item`.
pub(crate) fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    if !args.is_empty() {
        return syn::Error::new_spanned(args, "`#[strads::main]` takes no arguments")
            .to_compile_error();
    }
    let f: ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    let sig = &f.sig;
    if let Some(a) = &sig.asyncness {
        return syn::Error::new_spanned(
            a,
            "`#[strads::main]` goes on a plain `fn main`; with an async runtime, call \
             `strads::cluster::start()` first thing in `main` instead",
        )
        .to_compile_error();
    }
    if !sig.inputs.is_empty() || !sig.generics.params.is_empty() {
        return syn::Error::new_spanned(&sig.inputs, "`#[strads::main]` goes on `fn main()`")
            .to_compile_error();
    }
    let (attrs, vis, block) = (&f.attrs, &f.vis, &f.block);
    let ident = &sig.ident;
    let output = &sig.output;
    quote! {
        #(#attrs)*
        #vis fn #ident() #output {
            // A worker rank serves here and never returns; the driver has started its
            // workers (and stops them when the program ends).
            ::strads::cluster::start();
            #block
        }
    }
}
