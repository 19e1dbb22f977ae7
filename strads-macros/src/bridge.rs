//! Loop arrays of the types programs already hold (`strads_runtime::bridge`): a parameter
//! `&[T]`, `&mut [T]`, `&Vec<T>`, `&mut Vec<T>`, or an ndarray array or view, is a
//! `DistArray` to the loop. The function is expanded as if it took `DistArray`s (the same
//! analysis, errors, plans and report), nested inside a wrapper with the signature the
//! user wrote, which lends each such argument as a `DistArray` for the call and gives it
//! back after.
//!
//! Only a parameter the function uses element by element (`x[i]`, `m[[i, j]]`) and for its
//! shape (`len()`, `nrows()`, ..) is lent: one it uses whole anywhere in its body
//! (`dot(w.row(u), q)`, `history.push(loss)`, `x[a..b]`) stays what it was before, and so
//! does a read-only one whose values are subscripts of another array (`w[ids[k] as usize]`:
//! as a captured value its bytes key the loop's run-time plan, which a new array each call
//! would make again).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, ItemFn, Pat, PathArguments, Type};

use crate::ctxt::Ctxt;

/// How an argument is lent to the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// `&mut Vec<T>`: the buffer moves.
    Vec,
    /// `&mut [T]`: copied in and back.
    Slice,
    /// `&[T]`, `&Vec<T>`: copied in.
    ReadSlice,
    /// `&mut Array<T, D>`: lent (the buffer moves in standard layout).
    NdOwned,
    /// `ArrayViewMut<T, D>` (by value or `&mut`): copied in and back.
    NdView,
    /// `&Array<T, D>`, `ArrayView<T, D>` (by value or `&`): copied in.
    NdRead,
}

/// One argument lent to the loop.
struct Lent {
    ident: syn::Ident,
    how: How,
    elem: Type,
    rank: usize,
    /// The parameter is the view itself, not a reference to it.
    by_value: bool,
    span: Span,
}

/// The function with its bridged parameters written as `DistArray`s (to expand as usual),
/// and what the wrapper needs; `None` when no parameter needs bridging.
pub(crate) struct Split {
    pub(crate) inner: ItemFn,
    lent: Vec<Lent>,
}

pub(crate) fn split(cx: &Ctxt, item: &ItemFn) -> Option<Split> {
    let mut inner = item.clone();
    let mut lent = Vec::new();
    for arg in inner.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = arg else { continue };
        let Pat::Ident(pi) = &mut *pt.pat else {
            continue;
        };
        let Some(found) = classify(&pt.ty) else {
            continue;
        };
        let uses = uses(&item.block, &pi.ident);
        if !uses.elementwise() {
            continue;
        }
        // Indexed as an array: a type the loop cannot take as one says what to write.
        let (how, elem, rank, by_value) = match found {
            Ok(found) => found,
            Err(message) => {
                cx.error_spanned_by(&pt.ty, message);
                continue;
            }
        };
        if matches!(how, How::ReadSlice | How::NdRead) && uses.steering > 0 {
            continue;
        }
        let span = pt.ty.span();
        let mutable = matches!(how, How::Vec | How::Slice | How::NdOwned | How::NdView);
        let lit = syn::LitInt::new(&rank.to_string(), span);
        *pt.ty = if mutable {
            syn::parse_quote_spanned!(span=> &mut ::strads::__private::DistArray<#elem, #lit>)
        } else {
            syn::parse_quote_spanned!(span=> &::strads::__private::DistArray<#elem, #lit>)
        };
        pi.mutability = None;
        lent.push(Lent {
            ident: pi.ident.clone(),
            how,
            elem,
            rank,
            by_value,
            span,
        });
    }
    if lent.is_empty() {
        return None;
    }
    // The loop's own function: nested in the wrapper, under the same name.
    inner.attrs.clear();
    inner.vis = syn::Visibility::Inherited;
    Some(Split { inner, lent })
}

impl Split {
    /// The wrapper: `item`'s signature, the expanded loop function nested inside, each
    /// bridged argument lent for the call.
    pub(crate) fn wrap(&self, item: &ItemFn, expanded: TokenStream) -> TokenStream {
        let mut outer = item.clone();
        let name = &item.sig.ident;
        // The wrapper only passes its arguments on: a view taken by value is lent through
        // `&mut`, no other needs `mut`; one named as the function would hide the nested
        // function, so it is renamed.
        let renamed = format_ident!("__strads_arg_{}", name);
        for arg in outer.sig.inputs.iter_mut() {
            if let FnArg::Typed(pt) = arg
                && let Pat::Ident(pi) = &mut *pt.pat
            {
                let view = self
                    .lent
                    .iter()
                    .any(|l| l.ident == pi.ident && l.how == How::NdView && l.by_value);
                pi.mutability = view.then(|| syn::token::Mut(pi.ident.span()));
                if pi.ident == *name {
                    pi.ident = renamed.clone();
                }
            }
        }
        let bridge = quote!(::strads::__private::bridge);
        let mut lets = Vec::new();
        let mut args = Vec::new();
        for arg in &item.sig.inputs {
            let FnArg::Typed(pt) = arg else { continue };
            let Pat::Ident(pi) = &*pt.pat else { continue };
            let i = if pi.ident == *name {
                &renamed
            } else {
                &pi.ident
            };
            let Some(l) = self.lent.iter().find(|l| l.ident == pi.ident) else {
                args.push(quote!(#i));
                continue;
            };
            let (elem, span) = (&l.elem, l.span);
            let rank = syn::LitInt::new(&l.rank.to_string(), span);
            let name = format_ident!("__strads_lent_{}", i);
            let src = if l.by_value {
                quote!(&mut #i)
            } else {
                quote!(#i)
            };
            let read_src = if l.by_value { quote!(&#i) } else { quote!(#i) };
            let (made, mutable) = match l.how {
                How::Vec => (quote_spanned!(span=> #bridge::lend_vec(#i)), true),
                How::Slice => (quote_spanned!(span=> #bridge::lend_slice(#i)), true),
                How::ReadSlice => (quote_spanned!(span=> #bridge::read_slice(#i)), false),
                How::NdOwned => (
                    quote_spanned!(span=> #bridge::NdLend::<#elem, #rank>::lend_nd(#i)),
                    true,
                ),
                How::NdView => (
                    quote_spanned!(span=> #bridge::NdLendView::<#elem, #rank>::lend_view(#src)),
                    true,
                ),
                How::NdRead => (
                    quote_spanned!(span=> #bridge::NdRead::<#elem, #rank>::read_nd(#read_src)),
                    false,
                ),
            };
            if mutable {
                lets.push(quote!(let mut #name = #made;));
                args.push(quote!(&mut *#name));
            } else {
                lets.push(quote!(let #name = #made;));
                args.push(quote!(&#name));
            }
        }
        let attrs = &outer.attrs;
        let vis = &outer.vis;
        let sig = &outer.sig;
        quote! {
            #(#attrs)*
            #vis #sig {
                #expanded
                // Each argument above is lent to the loop as a `DistArray` for this call,
                // and goes back when the lending drops (after the call, or as it unwinds).
                #(#lets)*
                #name(#(#args),*)
            }
        }
    }
}

/// How a function's body uses a name.
struct Uses {
    /// Every use.
    all: usize,
    /// Uses element by element (`name[i]`, `name[[i, j]]`, not a range) or for the shape
    /// (`len`, `is_empty`, `shape`, `nrows`, `ncols`).
    elementwise: usize,
    /// Uses inside another index expression (`w[name[k] as usize]`).
    steering: usize,
}

impl Uses {
    /// Used, and only element by element or for its shape.
    fn elementwise(&self) -> bool {
        self.all > 0 && self.all == self.elementwise
    }
}

/// How `block` uses `name`.
fn uses(block: &syn::Block, name: &syn::Ident) -> Uses {
    use syn::visit::Visit;
    struct Walk<'n> {
        name: &'n syn::Ident,
        uses: Uses,
        /// Depth of index expressions being visited.
        in_index: usize,
    }
    impl Walk<'_> {
        fn is_name(&self, e: &syn::Expr) -> bool {
            matches!(e, syn::Expr::Path(p) if p.path.is_ident(self.name))
        }
    }
    impl<'a> Visit<'a> for Walk<'_> {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if p.path.is_ident(self.name) {
                self.uses.all += 1;
                if self.in_index > 0 {
                    self.uses.steering += 1;
                }
            }
        }
        fn visit_expr_index(&mut self, ix: &'a syn::ExprIndex) {
            let range = matches!(crate::syntax::strip_group(&ix.index), syn::Expr::Range(_));
            if self.is_name(&ix.expr) && !range {
                self.uses.elementwise += 1;
            }
            self.visit_expr(&ix.expr);
            self.in_index += 1;
            self.visit_expr(&ix.index);
            self.in_index -= 1;
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            let meta = matches!(
                m.method.to_string().as_str(),
                "len" | "is_empty" | "shape" | "nrows" | "ncols"
            );
            if meta && self.is_name(&m.receiver) {
                self.uses.elementwise += 1;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            // Inside another macro's tokens: a use the loop cannot see into.
            fn count(t: proc_macro2::TokenStream, name: &syn::Ident, n: &mut usize) {
                for tt in t {
                    match tt {
                        proc_macro2::TokenTree::Ident(i) if i == *name => *n += 1,
                        proc_macro2::TokenTree::Group(g) => count(g.stream(), name, n),
                        _ => {}
                    }
                }
            }
            count(m.tokens.clone(), self.name, &mut self.uses.all);
        }
    }
    let mut walk = Walk {
        name,
        uses: Uses {
            all: 0,
            elementwise: 0,
            steering: 0,
        },
        in_index: 0,
    };
    walk.visit_block(block);
    walk.uses
}

/// A parameter's type as a bridged array: how it is lent, its element type, its rank, and
/// whether the parameter is the view itself (not a reference to it).
type Found = (How, Type, usize, bool);

/// `(how, element type, rank, by value)` when `ty` is a type the loop takes as a bridged
/// array; the error to say when it is an ndarray type the loop cannot take; `None` for any
/// other type.
fn classify(ty: &Type) -> Option<Result<Found, &'static str>> {
    let (inner, reference, mutable) = match ty {
        Type::Reference(r) => (&*r.elem, true, r.mutability.is_some()),
        t => (t, false, false),
    };
    match inner {
        Type::Slice(s) if reference => {
            let how = if mutable { How::Slice } else { How::ReadSlice };
            Some(Ok((how, (*s.elem).clone(), 1, false)))
        }
        Type::Path(tp) if tp.qself.is_none() => {
            let seg = tp.path.segments.last()?;
            let name = seg.ident.to_string();
            if name == "Vec" && reference {
                let elem = first_type(&seg.arguments)?;
                let how = if mutable { How::Vec } else { How::ReadSlice };
                return Some(Ok((how, elem, 1, false)));
            }
            let nd = ndarray_kind(&name)?;
            let elem = first_type(&seg.arguments)?;
            let rank = match nd.1 {
                Some(r) => Some(r),
                None => dim_rank(&seg.arguments),
            };
            let Some(rank) = rank else {
                return Some(Err(
                    "a `#[parallel_for]` loop needs the rank of an ndarray array in its type: \
                     write `Array2<f32>`, `ArrayView1<f64>` or `Array<f32, Ix3>`, not a dynamic \
                     dimension",
                ));
            };
            let how = match (nd.0, reference, mutable) {
                (Nd::Owned, true, true) => How::NdOwned,
                (Nd::Owned, true, false) => How::NdRead,
                (Nd::View, ..) => How::NdRead,
                (Nd::ViewMut, false, _) | (Nd::ViewMut, true, true) => How::NdView,
                (Nd::ViewMut, true, false) => How::NdRead,
                (Nd::Owned, false, _) => {
                    return Some(Err(
                        "take an ndarray array by reference: `&Array2<f32>` to read it, \
                         `&mut Array2<f32>` to update it",
                    ));
                }
                (Nd::Shared, ..) => {
                    return Some(Err(
                        "a `#[parallel_for]` loop takes ndarray's `Array` (by `&` or `&mut`) \
                         and its views (`ArrayView`, `ArrayViewMut`); pass `arr.view()` or \
                         `arr.view_mut()`",
                    ));
                }
            };
            Some(Ok((how, elem, rank, !reference)))
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Nd {
    Owned,
    View,
    ViewMut,
    Shared,
}

/// An ndarray array type's kind and its rank when its name says it (`Array2`).
fn ndarray_kind(name: &str) -> Option<(Nd, Option<usize>)> {
    let (kind, rest) = if let Some(r) = name.strip_prefix("ArrayViewMut") {
        (Nd::ViewMut, r)
    } else if let Some(r) = name.strip_prefix("ArrayView") {
        (Nd::View, r)
    } else if let Some(r) = name.strip_prefix("ArcArray") {
        (Nd::Shared, r)
    } else if let Some(r) = name.strip_prefix("CowArray") {
        (Nd::Shared, r)
    } else if let Some(r) = name.strip_prefix("Array") {
        (Nd::Owned, r)
    } else {
        return None;
    };
    match rest {
        "" => Some((kind, None)),
        "D" => Some((kind, None)),
        r => {
            let n: usize = r.parse().ok().filter(|n| (1..=6).contains(n))?;
            Some((kind, Some(n)))
        }
    }
}

/// The first type argument (after lifetimes).
fn first_type(args: &PathArguments) -> Option<Type> {
    let PathArguments::AngleBracketed(a) = args else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// The rank of `Array<T, D>`'s `D`: `Ix1`..`Ix6`, `Dim<[usize; N]>`.
fn dim_rank(args: &PathArguments) -> Option<usize> {
    let PathArguments::AngleBracketed(a) = args else {
        return None;
    };
    let d = a
        .args
        .iter()
        .filter_map(|g| match g {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)?;
    let Type::Path(tp) = d else { return None };
    let seg = tp.path.segments.last()?;
    let name = seg.ident.to_string();
    if let Some(n) = name.strip_prefix("Ix") {
        return n.parse().ok().filter(|n| (1..=6).contains(n));
    }
    if name == "Dim"
        && let Some(Type::Array(arr)) = first_type(&seg.arguments)
        && let syn::Expr::Lit(l) = &arr.len
        && let syn::Lit::Int(i) = &l.lit
    {
        return i.base10_parse().ok().filter(|n| (1..=6).contains(n));
    }
    None
}
