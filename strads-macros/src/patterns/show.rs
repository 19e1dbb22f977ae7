//! Types and patterns printed as a user writes them, for the fixes' text (the same in
//! rustc and in tests).

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

/// Tokens as a user writes them: `(lo, hi)`, `&mut [f32; 2]`, `Some(x)`, `Vec<u8>`. (A
/// token stream's own `to_string` spaces every token, and differently in rustc and in
/// tests.)
pub(crate) fn show(t: impl ToTokens) -> String {
    let mut out = String::new();
    write_tokens(t.to_token_stream(), &mut out);
    out
}

fn write_tokens(ts: TokenStream, out: &mut String) {
    use proc_macro2::{Delimiter, Spacing};
    // No space after the previous token; the previous token when it is a word.
    let mut tight = true;
    let mut word: Option<String> = None;
    let mut colon = false;
    for tt in ts {
        let tight_before = match &tt {
            TokenTree::Punct(p) => matches!(p.as_char(), ',' | ';' | ':' | '>'),
            // `Some(x)`, `[f32; 2]` after `&`, but `mut (..)` stays apart.
            TokenTree::Group(g) => {
                matches!(g.delimiter(), Delimiter::Parenthesis | Delimiter::Bracket)
                    && word
                        .as_deref()
                        .is_some_and(|w| !matches!(w, "mut" | "ref" | "dyn" | "impl" | "as"))
            }
            _ => false,
        } || (matches!(&tt, TokenTree::Punct(p) if p.as_char() == '<')
            && word.is_some());
        if !tight && !tight_before {
            out.push(' ');
        }
        match &tt {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace if g.stream().is_empty() => ("{", "}"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(g.stream(), out);
                out.push_str(close);
            }
            tt => out.push_str(&tt.to_string()),
        }
        // `::` is one token: tight after its second `:` too.
        let path_sep = colon && matches!(&tt, TokenTree::Punct(p) if p.as_char() == ':');
        tight = path_sep
            || matches!(&tt, TokenTree::Punct(p)
                if p.spacing() == Spacing::Joint || matches!(p.as_char(), '&' | '<' | '\''));
        colon = matches!(&tt, TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == Spacing::Joint);
        word = match &tt {
            TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        };
    }
}
