//! The body method: the loop body with `continue` turned into `return` and reduction
//! updates redirected to the block's accumulators, and the reductions' code.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::spec::camel;
use syn::Expr;
use syn::visit_mut::{self, VisitMut};

use crate::front::LoopFn;
use crate::syntax::collect_idents;
use crate::walk::{FoundReduction, ReduceOp, Walked};

/// The body's statements and the reductions' code.
pub(super) fn body(f: &LoopFn, walked: &Walked, ordered: bool) -> (syn::Block, ReductionCode) {
    let vis = &f.item.vis;
    let fn_name = &f.item.sig.ident;
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
    (body, reduction_code(reds, vis, fn_name, ordered))
}

/// Whether an `ordered` loop keeps reduction `r`'s terms to fold them in the serial order:
/// a `+=` or `*=` of a type that is not an integer (floats round, so the order of the
/// terms shows in the bits; integer sums and products do not).
pub(crate) fn logged(r: &FoundReduction, ordered: bool) -> bool {
    ordered && matches!(r.op, ReduceOp::Add | ReduceOp::Mul) && !integer(r)
}

/// Whether the reduction's declared type is a primitive integer.
pub(super) fn integer(r: &FoundReduction) -> bool {
    const INTEGERS: [&str; 12] = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
    ];
    matches!(&r.ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| INTEGERS.contains(&i.to_string().as_str())))
}

/// Whether a `+=`/`*=` reduction's parts give the serial loop's result in any order: an
/// integer's (sums and products of integers do not round; the spec then says so only
/// where overflow does not panic, see `spec.rs`), or an `ordered` loop's kept terms.
pub(crate) fn exact_reduction(r: &FoundReduction, ordered: bool) -> bool {
    matches!(r.op, ReduceOp::Add | ReduceOp::Mul) && (integer(r) || ordered)
}

/// The code a loop's reductions add to the expansion; all empty when it has none.
#[derive(Default)]
pub(super) struct ReductionCode {
    /// `struct <Fn>Reductions` with `identity` and `fold`.
    pub(super) item: TokenStream,
    /// The body's `__red: &mut <Fn>Reductions,` parameter.
    pub(super) param: TokenStream,
    /// Before the blocks run: the collector of the blocks' parts.
    pub(super) begin: TokenStream,
    /// At the start of a block: its accumulators.
    pub(super) block: TokenStream,
    /// At the end of a block: hand its part to the collector.
    pub(super) push: TokenStream,
    /// After the blocks: fold the parts in schedule order, apply the total.
    pub(super) end: TokenStream,
    /// Whether some reduction keeps its terms (an `ordered` loop's float `+=`/`*=`): each
    /// iteration then says where it comes in the serial order (`__red.__at(..)`).
    pub(super) logged: bool,
}

fn reduction_code(
    reds: &[FoundReduction],
    vis: &syn::Visibility,
    fn_name: &syn::Ident,
    ordered: bool,
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
        if logged(r, ordered) {
            quote!(#vis #x: #private::Terms<#ty>)
        } else {
            quote!(#vis #x: #ty)
        }
    });
    let inits = reds.iter().map(|r| {
        let (x, ty) = (&r.ident, &r.ty);
        if logged(r, ordered) {
            let value = quote_spanned!(ty.span()=> #private::Terms::<#ty>::new());
            return quote!(#x: #value);
        }
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
        if logged(r, ordered) {
            return quote!(self.#x.absorb(part.#x););
        }
        combine(r.op, quote!(self.#x), quote!(part.#x))
    });
    let apply = reds.iter().map(|r| {
        let x = &r.ident;
        match (logged(r, ordered), r.op) {
            (true, ReduceOp::Mul) => quote!(#x = __total.#x.mul_into(#x);),
            (true, _) => quote!(#x = __total.#x.add_into(#x);),
            (false, op) => combine(op, quote!(#x), quote!(__total.#x)),
        }
    });
    let logged_any = reds.iter().any(|r| logged(r, ordered));
    let ats = reds.iter().filter(|r| logged(r, ordered)).map(|r| {
        let x = &r.ident;
        quote!(self.#x.at(__position);)
    });
    let at_fn = logged_any.then(|| {
        quote! {
            /// The terms that follow belong to the iteration at `__position` in the
            /// serial order.
            #[inline(always)]
            #vis fn __at(&mut self, __position: u128) {
                #(#ats)*
            }
        }
    });
    ReductionCode {
        item: quote! {
            #[doc = #doc]
            #[derive(#private::serde::Serialize, #private::serde::Deserialize)]
            #[serde(crate = "::strads::__private::serde")]
            #vis struct #name {
                #(#fields,)*
            }

            impl #name {
                /// Every accumulator at its operator's identity.
                #vis fn identity() -> Self {
                    #name { #(#inits,)* }
                }

                /// Combines a block's part into `self`, with each variable's operator.
                #vis fn fold(&mut self, part: Self) {
                    #(#folds)*
                }
                #at_fn
            }
        },
        param: quote!(__red: &mut #name,),
        begin: quote!(let __parts = #private::Parts::new();),
        block: quote!(let mut __red = #name::identity();),
        push: quote!(__parts.push(__blk.seq(), __red);),
        end: quote! {
            let __total = __parts.fold_owned(#name::identity(), #name::fold);
            #(#apply)*
        },
        logged: logged_any,
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
