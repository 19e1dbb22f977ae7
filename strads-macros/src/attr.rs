//! The attribute's arguments: `#[parallel_for(expect = "2d", repeated)]`, parsed (`Args`,
//! names as written) and then resolved against the function's arrays (`Attrs`, what
//! `LoopFn` holds; serde_derive's `attr::Container`). The resolution rules are one function
//! each, every name that is no array the option can take an error at the name.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Meta, Token};

use strads_analysis::StrategyKind;

use crate::arrays::{ArrayKind, ArrayVar};
use crate::ctxt::Ctxt;

const EXPECT: &str = "expect";
const REPEATED: &str = "repeated";
const ORDERED: &str = "ordered";
const BUFFER: &str = "buffer";
const SYNC: &str = "sync";
const BATCH: &str = "batch";
const MERGE: &str = "merge";

/// `sync = ".."`: the data-parallel mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sync {
    /// `"bsp"`: replicas merge after every batch.
    Bsp,
    /// `"ssp(s)"`: replicas merge after every batch, and a worker runs up to `s` batches
    /// ahead of the slowest (its replica misses at most the others' last `s` batches).
    Ssp(usize),
    /// `"hybrid"`: the threads of a process share one replica without locks; the
    /// processes' replicas merge after every batch.
    Hybrid,
}

/// Iterations of each worker per batch when `batch = n` is not given.
pub(crate) const DEFAULT_BATCH: usize = 1024;

/// A strategy the user requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// One kind: `"1d"`, `"2d"`, `"unimodular"` or `"reconnaissance"`.
    Kind(StrategyKind),
    /// `"static"`: any kind proved at compile time.
    Static,
}

impl Expect {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Expect::Kind(k) => k.as_str(),
            Expect::Static => "static",
        }
    }

    /// Whether the analysis's kind (`None`: no strategy) meets the expectation.
    pub(crate) fn holds(self, kind: Option<StrategyKind>) -> bool {
        match self {
            Expect::Kind(k) => kind == Some(k),
            Expect::Static => kind.is_some_and(StrategyKind::is_static),
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
    /// `buffer(g, apply = f(w, s))`: after the loop, `f(update, &mut w[e], &mut s[e])` for
    /// every element `e` of `g` with a non-zero update, instead of adding to `g`.
    pub(crate) applies: Vec<(syn::Ident, syn::Path, Vec<syn::Ident>)>,
    /// `buffer(h, max_delay = 64)`: buffers are applied at least every 64 iterations of
    /// each worker.
    pub(crate) max_delay: Option<(usize, proc_macro2::Span)>,
    /// `sync = "bsp"`, `"ssp(s)"`: every array the loop writes is replicated per worker;
    /// `"hybrid"`: per process.
    pub(crate) sync: Option<(Sync, proc_macro2::Span)>,
    /// `batch = n`: iterations of each worker between merges of `sync` replicas.
    pub(crate) batch: Option<(usize, proc_macro2::Span)>,
    /// `merge = f`: `sync` replicas merge by `f(value, summed differences, replicas)`
    /// instead of averaging.
    pub(crate) merge: Option<syn::Path>,
}

impl Args {
    /// Iterations of each worker between two merges of `sync` replicas.
    pub(crate) fn sync_every(&self) -> Option<usize> {
        let batch = self.batch.map_or(DEFAULT_BATCH, |(n, _)| n);
        self.sync.map(|_| batch)
    }

    /// `sync = "ssp(s)"`: `s`; 0 for the other modes.
    pub(crate) fn staleness(&self) -> usize {
        match self.sync {
            Some((Sync::Ssp(s), _)) => s,
            _ => 0,
        }
    }
}

/// One item of `buffer(..)`: an array, `apply = f(targets)` or `max_delay = n`.
enum BufferItem {
    Array(syn::Ident),
    Apply(syn::Path, Vec<syn::Ident>, proc_macro2::Span),
    MaxDelay(syn::LitInt),
}

impl Parse for BufferItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: syn::Ident = input.parse()?;
        if !input.peek(Token![=]) {
            return Ok(BufferItem::Array(name));
        }
        if name == "max_delay" {
            input.parse::<Token![=]>()?;
            let value: syn::Expr = input.parse()?;
            return match value {
                syn::Expr::Lit(ExprLit {
                    lit: Lit::Int(n), ..
                }) => Ok(BufferItem::MaxDelay(n)),
                other => Err(syn::Error::new_spanned(
                    other,
                    "`max_delay` is a number of iterations: `max_delay = 64`",
                )),
            };
        }
        if name != "apply" {
            return Err(syn::Error::new(
                name.span(),
                "expected an array name, `apply = f(w)` or `max_delay = n`",
            ));
        }
        input.parse::<Token![=]>()?;
        let call: syn::ExprCall = input.parse()?;
        let syn::Expr::Path(func) = &*call.func else {
            return Err(syn::Error::new_spanned(
                &call.func,
                "expected a function name",
            ));
        };
        let mut targets = Vec::new();
        for arg in &call.args {
            match arg {
                syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                    targets.push(p.path.get_ident().cloned().expect("checked"))
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "the apply function's arguments name arrays: `apply = f(w, g2)`",
                    ));
                }
            }
        }
        Ok(BufferItem::Apply(
            func.path.clone(),
            targets,
            call.func.span(),
        ))
    }
}

struct RawArgs(Punctuated<Meta, Token![,]>);

impl Parse for RawArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(RawArgs(Punctuated::parse_terminated(input)?))
    }
}

impl Args {
    /// `max_delay = n`: at least 1, and one value per loop.
    fn set_max_delay(&mut self, cx: &Ctxt, n: &syn::LitInt) {
        match n.base10_parse::<usize>() {
            Ok(0) | Err(_) => cx.error_spanned_by(
                n,
                "`max_delay` counts the iterations a worker runs between applications of its \
                 buffers: use 1 or more",
            ),
            Ok(v) => match self.max_delay {
                Some((old, _)) if old != v => cx.error_spanned_by(
                    n,
                    format!(
                        "one `max_delay` per loop: buffers are applied for all workers at once \
                         (an earlier `buffer(..)` says {old})"
                    ),
                ),
                _ => self.max_delay = Some((v, n.span())),
            },
        }
    }

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
                        }) => match (s.value().as_str(), StrategyKind::from_word(&s.value())) {
                            ("static", _) => args.expect = Some((Expect::Static, s.span())),
                            (_, Some(k)) => args.expect = Some((Expect::Kind(k), s.span())),
                            (other, None) => cx.error_spanned_by(
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
                        let parser = Punctuated::<BufferItem, Token![,]>::parse_terminated;
                        match list.parse_args_with(parser) {
                            Ok(items) if !items.is_empty() => {
                                let mut names = Vec::new();
                                let mut apply = None;
                                for item in items {
                                    match item {
                                        BufferItem::Array(n) => names.push(n),
                                        BufferItem::Apply(f, t, span) => apply = Some((f, t, span)),
                                        BufferItem::MaxDelay(n) => args.set_max_delay(cx, &n),
                                    }
                                }
                                if names.is_empty() {
                                    cx.error_spanned_by(
                                        &meta,
                                        "name the arrays to buffer: `buffer(h, max_delay = 64)`",
                                    );
                                }
                                if let Some((f, targets, span)) = apply {
                                    if names.len() == 1 {
                                        args.applies.push((names[0].clone(), f, targets));
                                    } else {
                                        cx.syn_error(syn::Error::new(
                                            span,
                                            "`apply = f(..)` goes with one buffered array: \
                                             `buffer(g, apply = f(w))`",
                                        ));
                                    }
                                }
                                args.buffers.extend(names);
                            }
                            Ok(_) => cx.error_spanned_by(
                                &meta,
                                "name the arrays to buffer: `buffer(h)` or `buffer(h, g)`",
                            ),
                            Err(e) => cx.syn_error(syn::Error::new(
                                e.span(),
                                format!("in `buffer(..)`: {e}"),
                            )),
                        }
                    }
                    _ => cx.error_spanned_by(
                        &meta,
                        "name the arrays to buffer: `buffer(h)` or `buffer(h, g)`",
                    ),
                }
            } else if path.is_ident(SYNC) {
                const WANT: &str = "expected `sync = \"bsp\"`, `sync = \"ssp(s)\"` (s a \
                                    whole number of batches) or `sync = \"hybrid\"`";
                match &meta {
                    Meta::NameValue(nv) => match &nv.value {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(lit), ..
                        }) => {
                            let v = lit.value();
                            let v = v.trim();
                            let ssp = v
                                .strip_prefix("ssp(")
                                .and_then(|r| r.strip_suffix(')'))
                                .map(|n| n.trim().parse::<usize>());
                            match (v, ssp) {
                                ("bsp", _) => args.sync = Some((Sync::Bsp, lit.span())),
                                (_, Some(Ok(n))) => args.sync = Some((Sync::Ssp(n), lit.span())),
                                ("hybrid", _) => args.sync = Some((Sync::Hybrid, lit.span())),
                                _ => {
                                    cx.error_spanned_by(lit, format!("unknown mode {v:?}; {WANT}"))
                                }
                            }
                        }
                        other => cx.error_spanned_by(other, WANT),
                    },
                    _ => cx.error_spanned_by(&meta, WANT),
                }
            } else if path.is_ident(BATCH) {
                const WANT: &str = "`batch` is the iterations each worker runs between merges of \
                                    `sync` replicas: `batch = 256` (1 or more)";
                match &meta {
                    Meta::NameValue(nv) => match &nv.value {
                        Expr::Lit(ExprLit {
                            lit: Lit::Int(n), ..
                        }) => match n.base10_parse::<usize>() {
                            Ok(v) if v >= 1 => args.batch = Some((v, n.span())),
                            _ => cx.error_spanned_by(n, WANT),
                        },
                        other => cx.error_spanned_by(other, WANT),
                    },
                    _ => cx.error_spanned_by(&meta, WANT),
                }
            } else if path.is_ident(MERGE) {
                const WANT: &str = "`merge` names the function that merges `sync` replicas: \
                                    `merge = my_merge` (a `fn(value: T, summed_differences: T, \
                                    replicas: usize) -> T`, such as `strads::merge::sum`)";
                match &meta {
                    Meta::NameValue(nv) => match &nv.value {
                        Expr::Path(p) if p.qself.is_none() => args.merge = Some(p.path.clone()),
                        other => cx.error_spanned_by(other, WANT),
                    },
                    _ => cx.error_spanned_by(&meta, WANT),
                }
            } else {
                cx.error_spanned_by(
                    path,
                    "unknown option; expected `expect = \"..\"`, `repeated`, `ordered`, \
                     `buffer(..)`, `sync = \"..\"`, `batch = n` or `merge = f`",
                );
            }
        }
        if let Some((_, span)) = args.batch
            && args.sync.is_none()
        {
            cx.syn_error(syn::Error::new(
                span,
                "`batch` goes with `sync = \"..\"`: the iterations each worker runs between \
                 merges of its replicas",
            ));
        }
        if let Some(m) = &args.merge
            && args.sync.is_none()
        {
            cx.error_spanned_by(
                m,
                "`merge` goes with `sync = \"..\"`: the function that merges the replicas' \
                 differences (`buffer(g, apply = f(..))` hands a buffer's updates to a function)",
            );
        }
        if let Some((_, span)) = args.sync
            && (!args.buffers.is_empty() || args.max_delay.is_some())
        {
            cx.syn_error(syn::Error::new(
                span,
                "`sync` replicates every array the loop writes and merges the replicas every \
                 `batch` iterations: drop `buffer(..)` (and its `max_delay`)",
            ));
        }
        args
    }
}

/// The options resolved against the function's arrays: what the later stages read.
pub(crate) struct Attrs {
    /// `expect = ".."`, at its string.
    pub(crate) expect: Option<(Expect, proc_macro2::Span)>,
    /// `ordered`.
    pub(crate) ordered: bool,
    /// Arrays given to `buffer(..)`: write-back buffers, exempt from the analysis (with
    /// `sync`, every `&mut DistArray`: the replicas).
    pub(crate) buffered: Vec<usize>,
    /// `buffer(g, apply = f(w, s))`: (buffered array, function, target arrays).
    pub(crate) applies: Vec<(usize, syn::Path, Vec<usize>)>,
    /// `buffer(.., max_delay = n)`, or a `sync` loop's iterations between merges.
    pub(crate) max_delay: Option<usize>,
    /// `sync = ".."`: every `&mut` array is a replica (buffered, averaged), written freely.
    pub(crate) sync: bool,
    /// `sync = "..", merge = f`: how replicas merge, instead of averaging.
    pub(crate) merge: Option<syn::Path>,
    /// `sync = "hybrid"`: the workers of a process share one replica.
    pub(crate) hybrid: bool,
    /// `sync = "ssp(s)"`: the batches a worker may run ahead of the slowest (0 otherwise).
    pub(crate) stale: usize,
}

impl Attrs {
    /// `args` resolved against `arrays`, the function's arrays; errors at the names that
    /// are not arrays an option can take.
    pub(crate) fn from_args(cx: &Ctxt, args: &Args, arrays: &[ArrayVar]) -> Attrs {
        let buffered = buffered_arrays(cx, args, arrays);
        let applies = apply_targets(cx, args, arrays, &buffered);
        let mut attrs = Attrs {
            expect: args.expect,
            ordered: args.ordered,
            buffered,
            applies,
            max_delay: args.max_delay.map(|(n, _)| n),
            sync: false,
            merge: None,
            hybrid: false,
            stale: 0,
        };
        if let Some((mode, span)) = args.sync {
            attrs.buffered = replicated_arrays(cx, span, arrays);
            attrs.max_delay = args.sync_every();
            attrs.sync = true;
            attrs.hybrid = mode == Sync::Hybrid;
            attrs.merge = args.merge.clone();
            attrs.stale = args.staleness();
        }
        attrs
    }
}

/// Index of the array named `name`.
fn array_index(arrays: &[ArrayVar], name: &str) -> Option<usize> {
    arrays.iter().position(|a| a.ident == name)
}

/// The arrays named in `buffer(..)`, each a `&mut DistArray` parameter of the function.
fn buffered_arrays(cx: &Ctxt, args: &Args, arrays: &[ArrayVar]) -> Vec<usize> {
    let mut out = Vec::new();
    for name in &args.buffers {
        match array_index(arrays, &name.to_string()) {
            Some(a) if arrays[a].mutable && arrays[a].kind == ArrayKind::Dense => out.push(a),
            _ => cx.error_spanned_by(
                name,
                format!(
                    "`buffer({name})` names no array the loop may write: buffers are \
                     `&mut DistArray` parameters"
                ),
            ),
        }
    }
    out
}

/// `sync = ".."`: every `&mut DistArray` parameter becomes a per-worker replica; a loop
/// that writes a `SparseArray` (its values through `iter_mut()`) cannot be replicated.
fn replicated_arrays(cx: &Ctxt, span: proc_macro2::Span, arrays: &[ArrayVar]) -> Vec<usize> {
    if let Some(a) = arrays
        .iter()
        .find(|a| a.mutable && a.kind != ArrayKind::Dense)
    {
        cx.syn_error(syn::Error::new(
            span,
            format!(
                "`sync` replicates the dense arrays the loop writes, and `{}` is a \
                 `&mut SparseArray`: update its values in a loop without `sync`",
                a.ident
            ),
        ));
    }
    (0..arrays.len())
        .filter(|&a| arrays[a].mutable && arrays[a].kind == ArrayKind::Dense)
        .collect()
}

/// `buffer(g, apply = f(w, ..))`: the targets are `&mut DistArray` parameters other than
/// the buffer itself (and other than the `buffered` arrays).
fn apply_targets(
    cx: &Ctxt,
    args: &Args,
    arrays: &[ArrayVar],
    buffered: &[usize],
) -> Vec<(usize, syn::Path, Vec<usize>)> {
    let mut out = Vec::new();
    for (buf, func, targets) in &args.applies {
        let Some(b) = array_index(arrays, &buf.to_string()) else {
            continue; // reported by `buffered_arrays`
        };
        let mut ids = Vec::new();
        for t in targets {
            match array_index(arrays, &t.to_string()) {
                Some(a)
                    if a != b
                        && arrays[a].mutable
                        && arrays[a].kind == ArrayKind::Dense
                        && !buffered.contains(&a) =>
                {
                    ids.push(a)
                }
                _ => cx.error_spanned_by(
                    t,
                    format!(
                        "`{t}` is not an array the apply function can update: name `&mut \
                         DistArray` parameters other than the buffer `{buf}`"
                    ),
                ),
            }
        }
        out.push((b, func.clone(), ids));
    }
    out
}
