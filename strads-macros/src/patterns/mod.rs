//! The types of the names a `let` before the loop binds: the loop's struct stores the ones
//! the loop uses, so each needs a type that is certain from the syntax.
//!
//! A pattern is matched against what is known of its value, part by part: the annotation
//! split along tuples, arrays and references (`let (lo, hi): (f32, f32) = ..`), and where
//! the annotation says nothing (`_`, or no annotation) the value's matching part and its
//! evident type (`let (lo, hi) = (1.0f32, x.len())`, [`evident::evident_type`]). A struct
//! pattern takes its fields from a struct literal of the same path. References switch
//! bindings to `ref` as rustc's default binding modes do. A name whose type is not certain
//! gets none, and a [`Fix`] saying what to write for this pattern's shape.
//!
//! This file holds what a binding is and the entry point, [`bindings`]; `parts.rs` the match
//! part by part, `evident.rs` the evident types of values, `fix.rs` the fixes, `show.rs`
//! types and patterns as a user writes them, `tests.rs` their tests.

use syn::{Expr, Ident, Local, Pat, Type};

mod evident;
mod fix;
mod parts;
mod show;
#[cfg(test)]
mod tests;

pub(crate) use fix::Fix;
use fix::fix;
use parts::written;

/// The type of a variable bound before the `let` (the name's last binding), when known: a
/// value that names the variable has that type.
pub(crate) type Known<'k> = &'k dyn Fn(&str) -> Option<Type>;

/// A name a `let` binds.
pub(crate) struct Binding {
    pub(crate) ident: Ident,
    /// Bound `mut` (not `ref mut`).
    pub(crate) mutable: bool,
    /// Its type, when certain.
    pub(crate) ty: Option<Type>,
    /// What to write when `ty` is `None`.
    pub(crate) fix: Fix,
}

/// The names `local` binds, with their types; `known` are the variables before it.
pub(crate) fn bindings(local: &Local, known: Known) -> Vec<Binding> {
    let (pat, declared) = match &local.pat {
        Pat::Type(pt) => (&*pt.pat, written(&pt.ty)),
        p => (p, None),
    };
    let part = Part {
        declared,
        value: local.init.as_ref().map(|i| &*i.expr),
        coerced: false,
        mode: Mode::Move,
    };
    let mut walk = Walk {
        known,
        found: Vec::new(),
    };
    walk.pat(pat, part);
    let single = matches!(pat, Pat::Ident(pi) if pi.subpat.is_none());
    let found = walk.found;
    found
        .iter()
        .map(|f| Binding {
            ident: f.ident.clone(),
            mutable: f.mutable,
            ty: f.ty.clone().filter(|_| single || !f.array),
            fix: fix(local, pat, single, f, &found),
        })
        .collect()
}

/// How bindings without `ref` bind: by value, or by reference once the pattern went
/// through a reference it does not write (`let (a, b) = &pair;`: `a: &T`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Move,
    Ref,
    RefMut,
}

impl Mode {
    /// The mode after an unwritten reference (`&mut` under `&` stays `&`).
    fn through(self, mutable: bool) -> Mode {
        match (self, mutable) {
            (Mode::Move | Mode::RefMut, true) => Mode::RefMut,
            _ => Mode::Ref,
        }
    }
}

/// What is known of the value a pattern, or a part of one, matches.
#[derive(Clone)]
struct Part<'a> {
    /// Its type as the annotation writes it (`_` is unwritten).
    declared: Option<Type>,
    /// Its expression.
    value: Option<&'a Expr>,
    /// The value is coerced to a type not written here (an alias, a struct's field, a
    /// function's argument): only a type no coercion changes is taken from it.
    coerced: bool,
    mode: Mode,
}

/// A name found in the pattern.
struct Found {
    ident: Ident,
    mutable: bool,
    /// The name's type.
    ty: Option<Type>,
    /// The type of its part of the value (`T` for `ref x: &T`).
    part_ty: Option<Type>,
    /// Its part of the value is an expression an evident type would settle.
    settle: bool,
    /// Bound by a default binding mode: a type written around the pattern would not match.
    implicit_ref: bool,
    /// Its type is a strads array's.
    array: bool,
}

struct Walk<'k> {
    known: Known<'k>,
    found: Vec<Found>,
}
