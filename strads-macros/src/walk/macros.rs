//! Names inside macros: a macro's arguments are walked as expressions when they parse as
//! such (with the inline arguments of format strings), else scanned for names. An array
//! named there is a fact (`Fact::ArrayInMacro`); an outer variable a read.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Expr, ExprLit, Lit, Token};

use super::Walker;
use super::facts::Fact;

impl Walker<'_> {
    pub(super) fn visit_macro_tokens(&mut self, tokens: &TokenStream, at: &syn::Macro) {
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        match syn::parse::Parser::parse2(parser, tokens.clone()) {
            Ok(args) => {
                for e in &args {
                    if let Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) = e
                    {
                        for name in inline_format_args(&s.value()) {
                            self.use_name(&name, s);
                        }
                    }
                    self.visit_expr(e);
                }
            }
            Err(_) => self.scan_tokens(tokens, at),
        }
    }

    fn scan_tokens(&mut self, tokens: &TokenStream, at: &syn::Macro) {
        let mut prev_dot = false;
        for tt in tokens.clone() {
            match &tt {
                TokenTree::Ident(i) if !prev_dot => self.use_name(&i.to_string(), at),
                TokenTree::Group(g) => self.scan_tokens(&g.stream(), at),
                _ => {}
            }
            prev_dot = matches!(&tt, TokenTree::Punct(p) if p.as_char() == '.');
        }
    }

    /// A use of `name` the walker cannot see the shape of (inside a macro).
    fn use_name(&mut self, name: &str, at: &impl ToTokens) {
        if self.lookup(name).is_some() {
            return;
        }
        if let Some(a) = self.f.array_index(name) {
            self.found.facts.push(Fact::ArrayInMacro {
                array: a,
                span: at.span(),
            });
            self.use_array(a, at);
        } else if self.f.outer_var(name).is_some() {
            self.found.reads.push((name.to_owned(), at.span()));
            self.found.captures.insert(name.to_owned());
        }
    }
}

/// Names used as inline format arguments: `{lr}` and `{lr:.3}` in `"{lr}"`, and the width
/// and precision parameters `w` and `p` of `{:>w$.p$}`.
pub(super) fn inline_format_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek().is_some_and(|(_, c)| *c == '{') {
            chars.next();
            continue;
        }
        let rest = &s[i + 1..];
        let end = rest.find([':', '}']).unwrap_or(rest.len());
        let name = &rest[..end];
        if is_name(name) {
            out.push(name.to_owned());
        }
        if rest[end..].starts_with(':') {
            let spec = &rest[end + 1..];
            let spec = &spec[..spec.find('}').unwrap_or(spec.len())];
            for (j, _) in spec.match_indices('$') {
                let start = spec[..j]
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(0, |k| k + 1);
                if is_name(&spec[start..j]) {
                    out.push(spec[start..j].to_owned());
                }
            }
        }
    }
    out
}

/// Whether `s` is a plain identifier (not a positional index).
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !s.chars().next().is_some_and(|c| c.is_ascii_digit())
}
