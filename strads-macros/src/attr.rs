//! The attribute's arguments: `#[parallel_for(expect = "2d", repeated)]`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, Meta, Token};

use crate::ctxt::Ctxt;

const EXPECT: &str = "expect";
const REPEATED: &str = "repeated";
const ORDERED: &str = "ordered";
const BUFFER: &str = "buffer";
const SYNC: &str = "sync";

/// A strategy the user requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    OneD,
    TwoD,
    Unimodular,
    Reconnaissance,
    Static,
}

impl Expect {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Expect::OneD => "1d",
            Expect::TwoD => "2d",
            Expect::Unimodular => "unimodular",
            Expect::Reconnaissance => "reconnaissance",
            Expect::Static => "static",
        }
    }
}

/// Parsed arguments.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) expect: Option<(Expect, proc_macro2::Span)>,
    pub(crate) ordered: bool,
    /// `buffer(a, b)`: arrays whose updates go to per-worker write-back buffers.
    pub(crate) buffers: Vec<syn::Ident>,
}

struct RawArgs(Punctuated<Meta, Token![,]>);

impl Parse for RawArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(RawArgs(Punctuated::parse_terminated(input)?))
    }
}

impl Args {
    pub(crate) fn from_tokens(cx: &Ctxt, tokens: proc_macro2::TokenStream) -> Args {
        let mut args = Args::default();
        let raw: RawArgs = match syn::parse2(tokens) {
            Ok(r) => r,
            Err(e) => {
                cx.syn_error(e);
                return args;
            }
        };
        for meta in raw.0 {
            let path = meta.path();
            if path.is_ident(EXPECT) {
                match &meta {
                    Meta::NameValue(nv) => match &nv.value {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => match s.value().as_str() {
                            "1d" => args.expect = Some((Expect::OneD, s.span())),
                            "2d" => args.expect = Some((Expect::TwoD, s.span())),
                            "unimodular" => args.expect = Some((Expect::Unimodular, s.span())),
                            "static" => args.expect = Some((Expect::Static, s.span())),
                            "reconnaissance" => {
                                args.expect = Some((Expect::Reconnaissance, s.span()))
                            }
                            other => cx.error_spanned_by(
                                s,
                                format!(
                                    "unknown strategy \"{other}\"; expected \"1d\", \"2d\", \
                                     \"unimodular\", \"reconnaissance\" or \"static\""
                                ),
                            ),
                        },
                        other => cx.error_spanned_by(
                            other,
                            "expected a string: `expect = \"1d\"`, `\"2d\"`, `\"unimodular\"` \
                             or `\"static\"`",
                        ),
                    },
                    _ => cx.error_spanned_by(
                        &meta,
                        "expected `expect = \"1d\"`, `\"2d\"`, `\"unimodular\"` or \
                         `\"static\"`",
                    ),
                }
            } else if path.is_ident(REPEATED) {
                // Plans are always cached per iteration space; `repeated` documents intent.
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(&meta, "`repeated` takes no value");
                }
            } else if path.is_ident(ORDERED) {
                // Dependences order iterations instead of only excluding each other: the
                // analysis then picks 1D, ordered 2D or a unimodular wavefront.
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(&meta, "`ordered` takes no value");
                }
                args.ordered = true;
            } else if path.is_ident(BUFFER) {
                match &meta {
                    Meta::List(list) => {
                        let parser = Punctuated::<syn::Ident, Token![,]>::parse_terminated;
                        match list.parse_args_with(parser) {
                            Ok(names) if !names.is_empty() => args.buffers.extend(names),
                            Ok(_) => cx.error_spanned_by(
                                &meta,
                                "name the arrays to buffer: `buffer(h)` or `buffer(h, g)`",
                            ),
                            Err(e) => cx.syn_error(syn::Error::new(
                                e.span(),
                                format!("expected array names, as in `buffer(h)`: {e}"),
                            )),
                        }
                    }
                    _ => cx.error_spanned_by(
                        &meta,
                        "name the arrays to buffer: `buffer(h)` or `buffer(h, g)`",
                    ),
                }
            } else if path.is_ident(SYNC) {
                cx.error_spanned_by(
                    &meta,
                    format!(
                        "`{}` is not supported yet in this version of strads",
                        path.get_ident().map(|i| i.to_string()).unwrap_or_default()
                    ),
                );
            } else {
                cx.error_spanned_by(
                    path,
                    "unknown option; expected `expect = \"..\"`, `repeated`, `ordered`, \
                     `buffer(..)` or `sync = \"..\"`",
                );
            }
        }
        args
    }
}
