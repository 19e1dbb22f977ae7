//! The `#[strads::parallel_for]` attribute. User documentation lives in the `strads` crate;
//! this crate is a thin shim around `expand::parallel_for`, and all reasoning about
//! dependences lives in `strads-analysis`.

mod arrays;
mod attr;
mod bridge;
mod check;
mod ctxt;
mod emit;
mod expand;
mod front;
mod main_attr;
mod patterns;
mod plankey;
mod syntax;
#[cfg(test)]
mod tests;
mod walk;

use proc_macro::TokenStream;

/// See `strads::parallel_for`.
#[proc_macro_attribute]
pub fn parallel_for(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::parallel_for(args.into(), item.into()).into()
}

/// See `strads::main`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    main_attr::main(args.into(), item.into()).into()
}
