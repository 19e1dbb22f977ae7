//! The loop IR as a `const`, and small token helpers.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use strads_analysis::{AccessKind, LoopSpec, SpaceKind, Subscript};

pub(super) fn lit(n: impl Into<i128>) -> proc_macro2::Literal {
    proc_macro2::Literal::i128_unsuffixed(n.into())
}

pub(super) fn camel(s: &str) -> String {
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
/// `integers[k]`: reduction `k` is of a primitive integer type.
pub(super) fn spec_tokens(spec: &LoopSpec, integers: &[bool]) -> TokenStream {
    let p = quote!(::strads::__private);
    let name = spec.name.as_ref();
    let dims = spec.dims.iter().map(|d| {
        let d = d.as_ref();
        quote!(#p::Cow::Borrowed(#d))
    });
    let space = match spec.space {
        SpaceKind::Array { array, sparse } => {
            quote!(#p::SpaceKind::Array { array: #array, sparse: #sparse })
        }
        SpaceKind::Range => quote!(#p::SpaceKind::Range),
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
            None if b.average => {
                let shared = b.shared.then(|| quote!(.shared()));
                let ssp = (b.stale > 0).then(|| {
                    let s = lit(b.stale as i128);
                    quote!(.ssp(#s))
                });
                match &b.merge {
                    None => quote!(#p::BufferSpec::new(#array).averaged() #shared #ssp),
                    Some(m) => {
                        let m = m.as_ref();
                        quote!(#p::BufferSpec::merged_by(#array, #m) #shared #ssp)
                    }
                }
            }
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
    let reductions = spec.reductions.iter().enumerate().map(|(k, r)| {
        let name = r.name.as_ref();
        let op = match r.op {
            strads_analysis::ReduceOp::Add => quote!(Add),
            strads_analysis::ReduceOp::Mul => quote!(Mul),
            strads_analysis::ReduceOp::Max => quote!(Max),
            strads_analysis::ReduceOp::Min => quote!(Min),
        };
        // An integer's parts are exact only where overflow wraps: in the user's build
        // without debug assertions (which turn overflow checks on by default).
        let exact = match (r.exact, integers.get(k).copied().unwrap_or(false)) {
            (false, _) => None,
            (true, true) => Some(quote!(.exact_if(!::core::cfg!(debug_assertions)))),
            (true, false) => Some(quote!(.exact())),
        };
        quote!(#p::ReductionSpec::new(#name, #p::ReduceOp::#op) #exact)
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

#[cfg(test)]
mod tests {
    use super::camel;

    #[test]
    fn camel_case() {
        assert_eq!(camel("sgd_epoch"), "SgdEpoch");
        assert_eq!(camel("lda__sweep_2"), "LdaSweep2");
    }
}
