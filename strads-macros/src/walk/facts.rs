//! Facts: what the body does that a rule in `check` judges (`Fact`), and the notes taken at
//! writes to outer variables (reduction updates, assignments, writes through places) and at
//! nested `#[parallel_for]` attributes. The walker only records; it reports nothing.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{BinOp, Expr, UnOp};

use super::Walker;
use super::reductions::ReduceOp;
use crate::syntax::strip_group;

/// Something the body does that a rule in `check` judges.
pub(crate) enum Fact {
    /// A `break` that leaves the parallel loop.
    Break(TokenStream),
    /// A `return` outside closures.
    Return(TokenStream),
    /// A `?` outside closures, at its token.
    Try(Span),
    /// An `async` block.
    Async(TokenStream),
    /// A `#[parallel_for]` attribute inside the body.
    Nested(TokenStream),
    /// A write to a place rooted at outer variable `name` (`v[0] = ..`, `s.x += ..`).
    OuterWrite { name: String, place: TokenStream },
    /// `name = e` of an outer variable that is no reduction update, at `name =`; `like` when
    /// `e` is `name + ..`, `.. + name`, `name * ..` or `.. * name`: the operator and
    /// whether `name` is on its left.
    OuterAssign {
        name: String,
        at: TokenStream,
        like: Option<(&'static str, bool)>,
    },
    /// `name op= e` of an outer variable with an operator reductions do not take, at
    /// `name op=`.
    OuterCompound {
        name: String,
        op: String,
        at: TokenStream,
    },
    /// A reduction update inside a macro's arguments.
    UpdateInMacro {
        name: String,
        op: ReduceOp,
        at: TokenStream,
    },
    /// A write to write-back buffer `array` other than `+=` or `-=`.
    BufferWrite { array: usize, at: TokenStream },
    /// A row of write-back buffer `array` used other than by `row[k] += e`, `row[k] -= e`
    /// or a read by index.
    BufferRow { array: usize, at: TokenStream },
    /// An index of `array` with `got` subscripts (`None`: not a list `[..]`) where the
    /// array has another number of dims.
    IndexShape {
        array: usize,
        at: TokenStream,
        got: Option<usize>,
    },
    /// `array.row(..)`, `.get(..)` (`method`) with other than one argument.
    MethodArity {
        array: usize,
        method: String,
        at: TokenStream,
    },
    /// Array `array` named inside a macro the walker cannot parse.
    ArrayInMacro { array: usize, span: Span },
    /// A method of `array` that reaches no element the walker can follow.
    OpaqueMethod { array: usize, method: syn::Ident },
    /// Array `array` named other than by element (handed on whole).
    ArrayWhole { array: usize, at: TokenStream },
}

impl Walker<'_> {
    /// A reduction update of outer variable `name` at `at`.
    pub(super) fn update(&mut self, name: String, op: ReduceOp, at: impl ToTokens) {
        if self.in_macro > 0 {
            self.found.facts.push(Fact::UpdateInMacro {
                name: name.clone(),
                op,
                at: at.to_token_stream(),
            });
        }
        self.found
            .updates
            .entry(name)
            .or_default()
            .push((op, at.to_token_stream()));
    }

    /// `x = ..` of an outer variable that is not a reduction update.
    pub(super) fn assign_error(&mut self, name: &str, a: &syn::ExprAssign) {
        let (left, eq) = (&a.left, &a.eq_token);
        let is_name = |e: &Expr| self.outer_scalar(e).as_deref() == Some(name);
        let like = match strip_group(&a.right) {
            // `x = x + e` means `x += e`, which strads can reduce.
            Expr::Binary(b)
                if matches!(b.op, BinOp::Add(_) | BinOp::Mul(_))
                    && (is_name(&b.left) || is_name(&b.right)) =>
            {
                let op = if matches!(b.op, BinOp::Add(_)) {
                    "+"
                } else {
                    "*"
                };
                Some((op, is_name(&b.left)))
            }
            _ => None,
        };
        self.found.facts.push(Fact::OuterAssign {
            name: name.to_owned(),
            at: quote!(#left #eq),
            like,
        });
    }

    /// Errors for writes to outer variables: every worker has its own copy.
    pub(super) fn check_place_write(&mut self, place: &Expr) {
        let Expr::Path(p) = place_root(place) else {
            return;
        };
        let Some(ident) = p.path.get_ident() else {
            return;
        };
        let name = ident.to_string();
        if self.lookup(&name).is_none() && self.f.outer_var(&name).is_some() {
            self.found.facts.push(Fact::OuterWrite {
                name,
                place: place.to_token_stream(),
            });
        }
    }

    /// Notes each `#[parallel_for]` among `attrs`.
    pub(super) fn check_nested(&mut self, attrs: &[syn::Attribute]) {
        for attr in attrs {
            if attr
                .path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "parallel_for")
            {
                self.found.facts.push(Fact::Nested(attr.to_token_stream()));
            }
        }
    }
}

/// The variable a place lives in: `v` of `v`, `v.0`, `v[k]`, `(v)`, `*v`.
pub(super) fn place_root(place: &Expr) -> &Expr {
    match place {
        Expr::Field(f) => place_root(&f.base),
        Expr::Index(i) => place_root(&i.expr),
        Expr::Paren(p) => place_root(&p.expr),
        Expr::Group(g) => place_root(&g.expr),
        Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => place_root(&u.expr),
        e => e,
    }
}

/// `x op= e`: an assignment.
pub(super) fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}
