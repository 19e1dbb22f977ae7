//! The captured outer variables: the loop struct's fields, how the body binds them, and
//! the checks that they are serializable.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::Type;
use syn::spanned::Spanned;

use crate::front::{LoopFn, OuterVar};
use crate::walk::Walked;

/// Element types that are `Copy` for certain: captured by value without ceremony.
const COPY_TYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "bool", "char",
];

/// What the captured variables add to the expansion.
pub(super) struct Captures<'f> {
    /// The captured variables, in declaration order.
    pub(super) list: Vec<&'f OuterVar>,
    /// `<'__a>` when a capture is a reference.
    pub(super) lt: Option<TokenStream>,
    pub(super) fields: Vec<TokenStream>,
    pub(super) inits: Vec<TokenStream>,
    pub(super) bindings: Vec<TokenStream>,
    /// Non-`Copy` values moved into the struct and back out after the loop.
    pub(super) restore: Vec<(TokenStream, syn::Ident)>,
    /// `const _` checks, one per capture not known to be serializable.
    pub(super) checks: Vec<TokenStream>,
    /// `#[serde(bound(..))]`, see [`serde_bounds`].
    pub(super) bounds: Option<TokenStream>,
}

/// The captures of loop `f`.
pub(super) fn captures<'f>(f: &'f LoopFn, walked: &Walked) -> Captures<'f> {
    let vis = &f.item.vis;
    let private = quote!(::strads::__private);
    // Captured outer variables, in declaration order.
    let captures: Vec<&OuterVar> = f
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
    Captures {
        lt,
        fields,
        inits,
        bindings,
        restore,
        checks,
        bounds: serde_bounds(&ser_bounds, &de_bounds),
        list: captures,
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
