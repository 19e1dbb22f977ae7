//! Walks the loop body: finds every array access with its subscripts as affine forms of
//! the iteration dims, every captured outer variable, every reduction into an outer
//! variable, and every construct that cannot run as one iteration of a parallel loop (as
//! [`Fact`]s, which `check.rs` judges). One pass; the walker reports nothing itself.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{BinOp, Expr, ExprLit, Lit, Pat, Token, UnOp};

use strads_analysis::{AccessKind, Affine, Subscript};

use crate::arrays::ArrayKind;
use crate::front::{KeyPat, LoopFn, SpaceSrc};
use crate::syntax::{NUMBER_TYPES, collect_idents, strip_group};

mod mutated;
mod visitor;

use mutated::{Mutated, NestedParallelFor};

/// What the walker knows of a local variable's value.
#[derive(Clone, Debug)]
enum Sym {
    /// `sum(coeffs * p) + constant` of the iteration vector.
    Affine(Affine),
    /// Every index of an array dim (an inner serial loop's variable).
    Full,
    /// The whole iteration index `[p0, p1, ..]`.
    Key,
    /// A tuple `(a, b)` or an array `[a, b]` of known parts, read by `.0` or `[0]`.
    Tuple(Vec<Sym>),
    /// Something else: data, a function's result, a captured value.
    Opaque,
    /// `let g = buf.row_mut(e);` of a write-back buffer (by array index): a row that takes
    /// only `g[k] += ..` and `g[k] -= ..`.
    BufferRow(usize),
}

/// One access found in the body.
pub(crate) struct FoundAccess {
    pub(crate) array: usize,
    pub(crate) kind: AccessKind,
    pub(crate) subscripts: Vec<Subscript>,
    /// The source of each subscript, for errors about one of them.
    pub(crate) subscript_tokens: Vec<TokenStream>,
    /// The whole access, for errors about it.
    pub(crate) tokens: TokenStream,
    pub(crate) span: proc_macro2::Span,
}

/// How a reduction combines per-worker parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReduceOp {
    /// `x += e`.
    Add,
    /// `x *= e`.
    Mul,
    /// `x = x.max(e)`.
    Max,
    /// `x = x.min(e)`.
    Min,
}

impl ReduceOp {
    /// The operator in the loop IR.
    pub(crate) fn ir(self) -> strads_analysis::ReduceOp {
        match self {
            ReduceOp::Add => strads_analysis::ReduceOp::Add,
            ReduceOp::Mul => strads_analysis::ReduceOp::Mul,
            ReduceOp::Max => strads_analysis::ReduceOp::Max,
            ReduceOp::Min => strads_analysis::ReduceOp::Min,
        }
    }

    /// How the user writes it, for messages and the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReduceOp::Add => "+=",
            ReduceOp::Mul => "*=",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }

    pub(crate) fn partial(self) -> &'static str {
        match self {
            ReduceOp::Add => "sum",
            ReduceOp::Mul => "product",
            ReduceOp::Max => "maximum",
            ReduceOp::Min => "minimum",
        }
    }
}

/// An outer variable the loop only accumulates into: each worker gets its own copy.
pub(crate) struct FoundReduction {
    pub(crate) ident: syn::Ident,
    /// The declared type.
    pub(crate) ty: syn::Type,
    pub(crate) op: ReduceOp,
}

/// What the walk found.
pub(crate) struct Walked {
    pub(crate) accesses: Vec<FoundAccess>,
    /// What the body does that the rules in `check.rs` judge, in source order.
    pub(crate) facts: Vec<Fact>,
    /// Reduction updates of outer variables by name: the operator and where it is.
    pub(crate) updates: BTreeMap<String, Vec<(ReduceOp, TokenStream)>>,
    /// Reads of outer variables: the name and where.
    pub(crate) reads: Vec<(String, Span)>,
    /// Outer (non-array) variables the body reads, by name; reductions are not among them.
    pub(crate) captures: BTreeSet<String>,
    /// Outer variables the body updates only by `+=`, `*=`, `max` or `min`, in declaration
    /// order.
    pub(crate) reductions: Vec<FoundReduction>,
    /// Arrays the body names, by index.
    pub(crate) arrays_used: BTreeSet<usize>,
    /// Where the body first names each array, for errors about the array as a whole.
    pub(crate) first_use: BTreeMap<usize, TokenStream>,
    /// Arrays the body writes other than by `a[..] += e` or `a[..] -= e`.
    pub(crate) non_additive: BTreeSet<usize>,
    /// Outer variables and arrays whose values may steer which elements the body touches
    /// ([`crate::plankey::steering`]): they key reconnaissance plans.
    pub(crate) steering: BTreeSet<String>,
}

/// Something the body does that a rule in `check.rs` judges.
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

/// Methods that read array metadata, not elements.
const META_METHODS: &[&str] = &["shape", "len", "is_empty", "row_len"];

/// Walks the loop body: its accesses, captures, reductions and the [`Fact`]s the rules in
/// `check.rs` judge. Reports nothing itself.
pub(crate) fn walk(f: &LoopFn) -> Walked {
    let mut mutated = Mutated::default();
    mutated.visit_block(&f.for_loop.body);
    let mut w = Walker {
        f,
        mutated: mutated.names,

        scopes: vec![HashMap::new()],
        found: Walked {
            accesses: Vec::new(),
            facts: Vec::new(),
            updates: BTreeMap::new(),
            reads: Vec::new(),
            captures: BTreeSet::new(),
            reductions: Vec::new(),
            arrays_used: BTreeSet::new(),
            first_use: BTreeMap::new(),
            non_additive: BTreeSet::new(),
            steering: BTreeSet::new(),
        },
        write_ctx: false,
        additive: false,
        inner_loops: 0,
        closures: 0,
        in_macro: 0,
        outer_label: f
            .body_loop()
            .label
            .as_ref()
            .map(|l| l.name.ident.to_string()),
    };
    w.bind_key();
    w.visit_block(&f.body_loop().body);
    w.finish_reductions();
    let arrays: BTreeSet<String> = f.arrays.iter().map(|a| a.ident.to_string()).collect();
    let mut candidates: BTreeSet<String> = f.outer.iter().map(|o| o.ident.to_string()).collect();
    candidates.extend(arrays.iter().cloned());
    w.found.steering = crate::plankey::steering(&f.for_loop.body, &candidates, &arrays);
    w.found
}

struct Walker<'a> {
    f: &'a LoopFn,
    /// Names the body may change after binding them (see [`Mutated`]): a `mut` binding of
    /// one of them is not an affine form of the iteration, whatever its initial value.
    mutated: HashSet<String>,
    scopes: Vec<HashMap<String, Sym>>,
    found: Walked,
    /// The expression being visited is the place an assignment writes.
    write_ctx: bool,
    /// That assignment is `+=` or `-=` (the updates a write-back buffer takes).
    additive: bool,
    /// Depth of loops nested in the body (`break` there is fine).
    inner_loops: usize,
    /// Depth of closures (`return` and `?` there are fine).
    closures: usize,
    /// Depth of macro arguments being walked (their tokens are not rewritten).
    in_macro: usize,
    outer_label: Option<String>,
}

impl Walker<'_> {
    fn n(&self) -> usize {
        self.f.n_dims
    }

    fn bind(&mut self, name: String, sym: Sym) {
        self.scopes.last_mut().expect("a scope").insert(name, sym);
    }

    fn bind_pat(&mut self, pat: &Pat, sym: Option<Sym>) {
        match (pat, sym) {
            // `let mut j = i; .. j += 1;`: the value at a subscript is not the initial one.
            (Pat::Ident(pi), Some(_))
                if pi.mutability.is_some() && self.mutated.contains(&pi.ident.to_string()) =>
            {
                self.bind(pi.ident.to_string(), Sym::Opaque)
            }
            (Pat::Ident(pi), Some(s)) if pi.subpat.is_none() => self.bind(pi.ident.to_string(), s),
            (Pat::Type(pt), s) => self.bind_pat(&pt.pat, s),
            (Pat::Paren(pp), s) => self.bind_pat(&pp.pat, s),
            // `let (a, b) = (e0, e1);` and `let [a, b] = p;` bind part by part.
            (Pat::Tuple(pt), Some(Sym::Tuple(parts))) if binds_n(&pt.elems, parts.len()) => {
                for (p, s) in pt.elems.iter().zip(parts) {
                    self.bind_pat(p, Some(s));
                }
            }
            (Pat::Slice(ps), Some(Sym::Tuple(parts))) if binds_n(&ps.elems, parts.len()) => {
                for (p, s) in ps.elems.iter().zip(parts) {
                    self.bind_pat(p, Some(s));
                }
            }
            // `let [u, i] = key;`
            (Pat::Slice(ps), Some(Sym::Key)) if binds_n(&ps.elems, self.n()) => {
                let n = self.n();
                for (d, p) in ps.elems.iter().enumerate() {
                    self.bind_pat(p, Some(var(n, d)));
                }
            }
            _ => {
                let mut names = Vec::new();
                collect_idents(pat, &mut names);
                for (i, _) in names {
                    self.bind(i.to_string(), Sym::Opaque);
                }
            }
        }
    }

    fn bind_key(&mut self) {
        let n = self.n();
        // `for ([mut u, i], _) in ..` with `u += 1` in the body: `u` is not the index.
        let mut bound = Vec::new();
        for pat in self.f.nest_pats() {
            collect_idents(pat, &mut bound);
        }
        let changed: Vec<String> = bound
            .into_iter()
            .filter(|(i, m)| *m && self.mutated.contains(&i.to_string()))
            .map(|(i, _)| i.to_string())
            .collect();
        match &self.f.key {
            KeyPat::Elems(dims) => {
                for (d, i) in dims.iter().enumerate() {
                    if let Some(i) = i {
                        self.bind(i.to_string(), var(n, d));
                    }
                }
            }
            KeyPat::Whole(k) => self.bind(k.to_string(), Sym::Key),
            KeyPat::Ignored => {}
            KeyPat::Range(idents) => {
                let SpaceSrc::Range { dims } = &self.f.space else {
                    unreachable!("range keys go with range spaces")
                };
                for (d, (i, dim)) in idents.iter().zip(dims).enumerate() {
                    let Some(i) = i else { continue };
                    // `(a..b).step_by(s)`: the space's coordinate `t` counts the steps, and
                    // the index is `s * t + a` (affine when `s` and `a` are literals).
                    let sym = match (dim.literal_step(), dim.literal_start()) {
                        (Some(1), _) => var(n, d),
                        (Some(s), Some(a)) if s > 1 => {
                            Sym::Affine(Affine::var(n, d).scale(s).add(&Affine::constant(n, a)))
                        }
                        _ => Sym::Opaque,
                    };
                    self.bind(i.to_string(), sym);
                }
            }
        }
        if let Pat::Tuple(t) = &*self.f.for_loop.pat {
            if let Some(v) = t.elems.iter().nth(1) {
                self.bind_pat(v, None);
            }
        }
        for name in changed {
            self.bind(name, Sym::Opaque);
        }
    }

    fn lookup(&self, name: &str) -> Option<&Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// The array a path names, unless a local shadows it.
    fn array_of(&self, e: &Expr) -> Option<usize> {
        let Expr::Path(p) = e else { return None };
        let ident = p.path.get_ident()?.to_string();
        if self.lookup(&ident).is_some() {
            return None;
        }
        self.f.array_index(&ident)
    }

    /// The value of an expression, as far as subscripts go.
    fn eval(&self, e: &Expr) -> Sym {
        let n = self.n();
        match e {
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }) => i
                .base10_parse::<i64>()
                .map_or(Sym::Opaque, |k| Sym::Affine(Affine::constant(n, k))),
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::Group(g) => self.eval(&g.expr),
            // A cast keeps an index's value only into a type that holds every index: a
            // narrow integer wraps, a float rounds large ones.
            Expr::Cast(c) if keeps_indices(&c.ty) => self.eval(&c.expr),
            Expr::Cast(_) => Sym::Opaque,
            Expr::Path(p) => match p.path.get_ident() {
                Some(i) => self.lookup(&i.to_string()).cloned().unwrap_or(Sym::Opaque),
                None => Sym::Opaque,
            },
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match self.eval(&u.expr) {
                Sym::Affine(f) => Sym::Affine(f.neg()),
                _ => Sym::Opaque,
            },
            Expr::Binary(b) => {
                let (l, r) = (self.eval(&b.left), self.eval(&b.right));
                let (Sym::Affine(l), Sym::Affine(r)) = (l, r) else {
                    return Sym::Opaque;
                };
                match b.op {
                    BinOp::Add(_) => Sym::Affine(l.add(&r)),
                    BinOp::Sub(_) => Sym::Affine(l.sub(&r)),
                    BinOp::Mul(_) => l.mul(&r).map_or(Sym::Opaque, Sym::Affine),
                    _ => Sym::Opaque,
                }
            }
            Expr::Tuple(t) => Sym::Tuple(t.elems.iter().map(|e| self.eval(e)).collect()),
            Expr::Array(a) => Sym::Tuple(a.elems.iter().map(|e| self.eval(e)).collect()),
            // `p.0` of a tuple.
            Expr::Field(fe) => match (&fe.member, self.eval(&fe.base)) {
                (syn::Member::Unnamed(i), Sym::Tuple(mut parts))
                    if (i.index as usize) < parts.len() =>
                {
                    parts.swap_remove(i.index as usize)
                }
                _ => Sym::Opaque,
            },
            // `key[0]` of the iteration index, `p[1]` of an array.
            Expr::Index(ix) => {
                let Expr::Lit(ExprLit {
                    lit: Lit::Int(i), ..
                }) = &*ix.index
                else {
                    return Sym::Opaque;
                };
                match (self.eval(&ix.expr), i.base10_parse::<usize>()) {
                    (Sym::Key, Ok(d)) if d < n => var(n, d),
                    (Sym::Tuple(mut parts), Ok(d)) if d < parts.len() => parts.swap_remove(d),
                    _ => Sym::Opaque,
                }
            }
            _ => Sym::Opaque,
        }
    }

    fn subscript(&self, e: &Expr) -> Subscript {
        self.subscript_of(self.eval(e))
    }

    fn subscript_of(&self, sym: Sym) -> Subscript {
        match sym {
            Sym::Affine(f) => Subscript::Affine(f),
            Sym::Full => Subscript::Full,
            Sym::Key | Sym::Tuple(_) | Sym::Opaque | Sym::BufferRow(_) => Subscript::Indirect,
        }
    }

    fn record(
        &mut self,
        array: usize,
        kind: AccessKind,
        subscripts: Vec<Subscript>,
        subscript_tokens: Vec<TokenStream>,
        at: &impl ToTokens,
    ) {
        self.use_array(array, at);
        // Write-back buffers take no part in the dependence analysis; they only take
        // updates that can be merged.
        if self.f.attrs.buffered.contains(&array) {
            // A `sync` replica takes any write: replicas merge by their differences.
            if kind == AccessKind::Write && !self.additive && !self.f.attrs.sync {
                self.found.facts.push(Fact::BufferWrite {
                    array,
                    at: at.to_token_stream(),
                });
            }
            return;
        }
        if kind == AccessKind::Write && !self.additive {
            self.found.non_additive.insert(array);
        }

        self.found.accesses.push(FoundAccess {
            array,
            kind,
            subscripts,
            subscript_tokens,
            tokens: at.to_token_stream(),
            span: at.span(),
        });
    }

    /// The buffer `e` takes a row of, when `e` is `buf.row_mut(..)` of a write-back buffer.
    fn buffer_row_mut(&self, e: &Expr) -> Option<usize> {
        let Expr::MethodCall(m) = e else { return None };
        let a = self.array_of(&m.receiver)?;
        (m.method == "row_mut" && self.f.attrs.buffered.contains(&a)).then_some(a)
    }

    /// The buffer whose row the local `e` names (`let g = buf.row_mut(..)`).
    fn buffer_row_local(&self, e: &Expr) -> Option<usize> {
        let Expr::Path(p) = e else { return None };
        match self.lookup(&p.path.get_ident()?.to_string())? {
            Sym::BufferRow(a) => Some(*a),
            _ => None,
        }
    }

    fn buffer_row_error(&mut self, a: usize, at: &impl ToTokens) {
        self.found.facts.push(Fact::BufferRow {
            array: a,
            at: at.to_token_stream(),
        });
    }

    /// Notes that the body names array `a` at `at`.
    fn use_array(&mut self, a: usize, at: &impl ToTokens) {
        self.found.arrays_used.insert(a);
        self.found
            .first_use
            .entry(a)
            .or_insert_with(|| at.to_token_stream());
    }

    /// `a[[e0, e1]]` or `a[e]`.
    fn index_access(&mut self, array: usize, index: &Expr, whole: &Expr, kind: AccessKind) {
        let rank = self.f.arrays[array].rank;
        let elems: Vec<&Expr> = match index {
            Expr::Array(a) => a.elems.iter().collect(),
            // `out[key]` with the loop's whole index: the identity subscript.
            e if rank == self.n() && matches!(self.eval(e), Sym::Key) => {
                let subs = (0..rank).map(|d| self.subscript_of(var(rank, d))).collect();
                let tokens = vec![e.to_token_stream(); rank];
                self.record(array, kind, subs, tokens, whole);
                return;
            }
            // `a[p]` with `let p = [i, j + 1];`: the parts are the subscripts.
            e if rank > 1 && matches!(self.eval(e), Sym::Tuple(ref p) if p.len() == rank) => {
                let Sym::Tuple(parts) = self.eval(e) else {
                    unreachable!("matched above")
                };
                let subs = parts.into_iter().map(|s| self.subscript_of(s)).collect();
                let tokens = vec![e.to_token_stream(); rank];
                self.record(array, kind, subs, tokens, whole);
                let saved = std::mem::replace(&mut self.write_ctx, false);
                self.visit_expr(e);
                self.write_ctx = saved;
                return;
            }
            e if rank == 1 => vec![e],
            e => {
                self.found.facts.push(Fact::IndexShape {
                    array,
                    at: e.to_token_stream(),
                    got: None,
                });
                return;
            }
        };
        if elems.len() != rank {
            self.found.facts.push(Fact::IndexShape {
                array,
                at: index.to_token_stream(),
                got: Some(elems.len()),
            });
            return;
        }
        let subs = elems.iter().map(|e| self.subscript(e)).collect();
        let tokens = elems.iter().map(|e| e.to_token_stream()).collect();
        self.record(array, kind, subs, tokens, whole);
        let saved = std::mem::replace(&mut self.write_ctx, false);
        for e in elems {
            self.visit_expr(e);
        }
        self.write_ctx = saved;
    }

    fn elem_is_plain(&self, array: usize) -> bool {
        let syn::Type::Path(tp) = &self.f.arrays[array].elem else {
            return false;
        };
        tp.path.get_ident().is_some_and(|i| {
            // Numbers, `bool` and `char`: no method takes `&mut self`.
            let i = i.to_string();
            NUMBER_TYPES.contains(&i.as_str()) || i == "bool" || i == "char"
        })
    }

    /// Errors for writes to outer variables: every worker has its own copy.
    fn check_place_write(&mut self, place: &Expr) {
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

    fn visit_macro_tokens(&mut self, tokens: &TokenStream, at: &syn::Macro) {
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

    /// The outer (non-array) variable a plain path names, unless a local shadows it.
    fn outer_scalar(&self, e: &Expr) -> Option<String> {
        let Expr::Path(p) = e else { return None };
        if p.qself.is_some() {
            return None;
        }
        let name = p.path.get_ident()?.to_string();
        (self.lookup(&name).is_none() && self.f.outer_var(&name).is_some()).then_some(name)
    }

    /// A reduction update of outer variable `name` at `at`.
    fn update(&mut self, name: String, op: ReduceOp, at: impl ToTokens) {
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
    fn assign_error(&mut self, name: &str, a: &syn::ExprAssign) {
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

    /// Turns the updates into reductions: the variables updated in the body with a declared
    /// type, by their first operator (`check::check_reductions` judges the rest).
    /// Reductions are not captures.
    fn finish_reductions(&mut self) {
        for var in &self.f.outer {
            let name = var.ident.to_string();
            let Some(ups) = self.found.updates.get(&name) else {
                continue;
            };
            let op = ups[0].0;
            self.found.captures.remove(&name);
            if let Some(ty) = &var.ty {
                self.found.reductions.push(FoundReduction {
                    ident: var.ident.clone(),
                    ty: ty.clone(),
                    op,
                });
            }
        }
    }

    /// Notes each `#[parallel_for]` among `attrs`.
    fn check_nested(&mut self, attrs: &[syn::Attribute]) {
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

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::new());
        f(self);
        self.scopes.pop();
    }
}

/// `x.max(e)`, `e.max(x)`, `T::max(x, e)` or `max(e, x)` (and `min`) where `is_var(x)`:
/// the operator and `e`.
fn max_min<'e>(e: &'e Expr, is_var: &dyn Fn(&Expr) -> bool) -> Option<(ReduceOp, &'e Expr)> {
    let op_of = |m: &syn::Ident| match m.to_string().as_str() {
        "max" => Some(ReduceOp::Max),
        "min" => Some(ReduceOp::Min),
        _ => None,
    };
    match strip_group(e) {
        Expr::MethodCall(m) if m.args.len() == 1 && m.turbofish.is_none() => {
            let op = op_of(&m.method)?;
            if is_var(&m.receiver) {
                Some((op, &m.args[0]))
            } else if is_var(&m.args[0]) {
                Some((op, &m.receiver))
            } else {
                None
            }
        }
        Expr::Call(c) if c.args.len() == 2 => {
            let Expr::Path(f) = &*c.func else { return None };
            let op = op_of(&f.path.segments.last()?.ident)?;
            if is_var(&c.args[0]) {
                Some((op, &c.args[1]))
            } else if is_var(&c.args[1]) {
                Some((op, &c.args[0]))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether `pats` binds exactly `n` parts, one each (no `..`).
fn binds_n<P>(pats: &Punctuated<Pat, P>, n: usize) -> bool {
    pats.len() == n && !pats.iter().any(|p| matches!(p, Pat::Rest(_)))
}

/// The variable a place lives in: `v` of `v`, `v.0`, `v[k]`, `(v)`, `*v`.
fn place_root(place: &Expr) -> &Expr {
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
fn is_compound(op: &BinOp) -> bool {
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

/// Whether a cast to `ty` keeps every index's value: 64-bit (and wider) integers. A cast
/// to a narrower integer wraps large indices and one to a float rounds them, so the
/// result is no longer affine in the iteration.
fn keeps_indices(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(tp) => tp.path.get_ident().is_some_and(|i| {
            matches!(
                i.to_string().as_str(),
                "usize" | "isize" | "u64" | "i64" | "u128" | "i128"
            )
        }),
        syn::Type::Paren(p) => keeps_indices(&p.elem),
        syn::Type::Group(g) => keeps_indices(&g.elem),
        _ => false,
    }
}

fn var(n: usize, d: usize) -> Sym {
    Sym::Affine(Affine::var(n, d))
}

/// Names used as inline format arguments: `{lr}` and `{lr:.3}` in `"{lr}"`, and the width
/// and precision parameters `w` and `p` of `{:>w$.p$}`.
fn inline_format_args(s: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests;
