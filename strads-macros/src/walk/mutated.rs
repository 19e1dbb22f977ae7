//! What the loop body may change: names it assigns, borrows mutably or hands to macros
//! strads cannot read (`Mutated`), and `#[parallel_for]` nested in an item of the body.

use std::collections::HashSet;

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, Token};

use super::Walker;
use super::facts::{is_compound, place_root};

/// Names the loop body may change after binding them: the root of every place it assigns
/// (`j = ..`, `j += ..`, `j.0 = ..`), borrows mutably (`&mut j`), calls a method on (which
/// may take `&mut self`: `j.add_assign(1)`), or names inside a macro strads cannot read.
/// Only `mut` bindings can change, so the walker asks this only of them. By name, not by
/// binding: a name changed anywhere counts everywhere, which over-approximates.
#[derive(Default)]
pub(super) struct Mutated {
    pub(super) names: HashSet<String>,
}

impl Mutated {
    fn place(&mut self, place: &Expr) {
        if let Expr::Path(p) = place_root(place) {
            if let Some(i) = p.path.get_ident() {
                self.names.insert(i.to_string());
            }
        }
    }

    fn tokens(&mut self, tokens: TokenStream) {
        for tt in tokens {
            match tt {
                TokenTree::Ident(i) => {
                    self.names.insert(i.to_string());
                }
                TokenTree::Group(g) => self.tokens(g.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Mutated {
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.place(&a.left);
        visit::visit_expr_assign(self, a);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if is_compound(&b.op) {
            self.place(&b.left);
        }
        visit::visit_expr_binary(self, b);
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.place(&r.expr);
        }
        visit::visit_expr_reference(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.place(&m.receiver);
        visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // The standard library's macros only read their arguments (or take them by value);
        // any other macro may expand to an assignment of a name it is given.
        let name = m.path.segments.last().map(|s| s.ident.to_string());
        let reads_only = name.is_some_and(|n| READING_MACROS.contains(&n.as_str()));
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        match syn::parse::Parser::parse2(parser, m.tokens.clone()) {
            Ok(args) if reads_only => args.iter().for_each(|e| self.visit_expr(e)),
            _ => self.tokens(m.tokens.clone()),
        }
    }
}

/// Macros of the standard library that never assign the names they are given.
pub(super) const READING_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "format_args",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "unreachable",
    "todo",
    "unimplemented",
    "vec",
    "dbg",
    "matches",
];

/// Finds `#[parallel_for]` anywhere in an item nested in the loop body.
pub(super) struct NestedParallelFor<'w, 'a> {
    pub(super) walker: &'w mut Walker<'a>,
}

impl<'ast> Visit<'ast> for NestedParallelFor<'_, '_> {
    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        self.walker.check_nested(std::slice::from_ref(attr));
    }
}
