//! Code generation: the loop's struct, its spec constant, its body as a method generic over
//! array access, and the function rewritten to call the runtime.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Type};

use strads_analysis::{AccessKind, LoopSpec, Space, Subscript};

use crate::front::{LoopFn, SpaceSrc};
use crate::walk::Walked;

/// Element types that are `Copy` for certain: captured by value without ceremony.
const COPY_TYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "bool", "char",
];

pub(crate) fn emit(f: &LoopFn, walked: &Walked, spec: &LoopSpec, report: &str) -> TokenStream {
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
    for c in &captures {
        let ident = &c.ident;
        let ty =
            c.ty.as_ref()
                .expect("checked: captured variables have types");
        match ty {
            Type::Reference(r) => {
                let elem = &r.elem;
                fields.push(quote!(#vis #ident: #private::Cow<'__a, #elem>));
                inits.push(quote!(#ident: #private::Cow::Borrowed(#ident)));
                bindings.push(quote!(let #ident = &*self.#ident;));
            }
            ty => {
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
    let mut body_args_serial = Vec::new();
    let mut views = Vec::new();
    let mut shared = Vec::new();
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
        if arr.mutable && Some(a) != space_array {
            generics.push(quote!(#tp: #private::ArrayMut<#elem, #rank> #one_d));
            params.push(quote!(#ident: &mut #tp));
            let shared_ident = format_ident!("__{}", ident);
            let src = if arr.owned {
                quote!(&mut #ident)
            } else {
                quote!(&mut *#ident)
            };
            shared.push(quote!(let #shared_ident = #private::SharedMut::new(#src);));
            views.push(quote!(let mut #ident = __blk.view_mut(&#shared_ident, #idx);));
            body_args_parallel.push(quote!(&mut #ident));
            body_args_serial.push(src);
        } else {
            generics.push(quote!(#tp: #private::ArrayRef<#elem, #rank> #one_d));
            params.push(quote!(#ident: &#tp));
            let r = if arr.owned {
                quote!(&#ident)
            } else {
                quote!(&*#ident)
            };
            body_args_parallel.push(r.clone());
            body_args_serial.push(r);
        }
    }

    // The iteration item: `(key, &value)` for arrays, the index for ranges.
    let pat = &f.for_loop.pat;
    let (item_ty, space_init) = match &f.space {
        SpaceSrc::Array(a) => {
            let arr = &f.arrays[*a];
            let (elem, rank, ident) = (&arr.elem, lit(arr.rank as i128), &arr.ident);
            let ty = match arr.kind {
                crate::front::ArrayKind::Sparse => quote!(#private::SparseArray<#elem, #rank>),
                crate::front::ArrayKind::Dense => quote!(#private::DistArray<#elem, #rank>),
            };
            (
                quote!(([usize; #rank], &#elem)),
                quote!(let __space: &#ty = &#ident;),
            )
        }
        SpaceSrc::Range {
            start,
            end,
            inclusive,
        } => {
            let end = if *inclusive {
                quote!((#end) + 1)
            } else {
                quote!(#end)
            };
            (
                quote!(usize),
                quote!(let __space = &#private::RangeSpace::new(#start, #end);),
            )
        }
    };

    // The body, with `continue` of the parallel loop turned into `return`.
    let mut body = f.for_loop.body.clone();
    ContinueToReturn {
        label: f.for_loop.label.as_ref().map(|l| l.name.ident.to_string()),
        depth: 0,
    }
    .visit_block_mut(&mut body);
    let body_stmts = &body.stmts;

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
    let doc_lines: Vec<String> = report.lines().map(|l| format!(" {l}")).collect();
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
    let run = quote! {
        static __STRADS_LOOP: #private::LoopState = #private::LoopState::new(#struct_name::SPEC);
        // The space first: its bounds may read a capture that `__loop` then takes.
        #space_init
        let __loop = #init;
        if let ::core::option::Option::Some(__blocks) = #private::replay_blocks(&__STRADS_LOOP, __space) {
            for __blk in &__blocks {
                for __it in __blk.items() {
                    __loop.body(__it, #(#body_args_serial),*);
                }
            }
        } else {
            let __shapes: [&[usize]; #n_arrays] = [#(#shapes),*];
            #(#shared)*
            #private::run(&__STRADS_LOOP, __space, &__shapes, |__blk| {
                #(#views)*
                __blk.for_each(|__it| __loop.body(__it, #(#body_args_parallel),*));
            });
        }
        #struct_pat
    };
    let run = if restore.is_empty() {
        quote! {
            if #private::serial_requested() {
                #original_loop
            } else {
                #run
            }
        }
    } else {
        quote! {
            #[allow(unused_variables, unused_mut)]
            let (#(#restore_pats,)*) = if #private::serial_requested() {
                #original_loop
                (#(#restore_idents,)*)
            } else {
                #run
                (#(#restore_idents,)*)
            };
        }
    };

    quote! {
        #[doc = #doc_intro]
        #[doc = ""]
        #[doc = " ```text"]
        #(#[doc = #doc_lines])*
        #[doc = " ```"]
        #[derive(#private::serde::Serialize, #private::serde::Deserialize)]
        #[serde(crate = "::strads::__private::serde")]
        #vis struct #struct_name #lt #fields_block

        impl #lt #struct_name #lt {
            /// The loop as the analysis saw it.
            #vis const SPEC: #private::LoopSpec = #spec_tokens;

            /// One iteration of the loop body, generic over how arrays are reached.
            #[inline(always)]
            #[allow(unused_variables, clippy::all)]
            #vis fn body<#(#generics),*>(&self, #pat: #item_ty, #(#params),*) {
                #[allow(unused_imports)]
                use #private::{ArrayMut as _, ArrayRef as _, CaptureByCopy as _, CaptureByRef as _};
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
        quote!(#p::ArraySpec::new(#n, #r, #m))
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
    quote! {
        {
            const DIMS: &[#p::Cow<'static, str>] = &[#(#dims),*];
            const ARRAYS: &[#p::ArraySpec] = &[#(#arrays),*];
            #(#sub_consts)*
            const ACCESSES: &[#p::Access] = &[#(#accesses),*];
            #p::LoopSpec::new(#name, DIMS, #space, ARRAYS, ACCESSES, #ordered)
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

#[cfg(test)]
mod tests {
    use super::camel;

    #[test]
    fn camel_case() {
        assert_eq!(camel("sgd_epoch"), "SgdEpoch");
        assert_eq!(camel("lda__sweep_2"), "LdaSweep2");
    }
}
