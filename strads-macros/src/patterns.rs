//! The types of the names a `let` before the loop binds: the loop's struct stores the ones
//! the loop uses, so each needs a type that is certain from the syntax.
//!
//! A pattern is matched against what is known of its value, part by part: the annotation
//! split along tuples, arrays and references (`let (lo, hi): (f32, f32) = ..`), and where
//! the annotation says nothing (`_`, or no annotation) the value's matching part and its
//! evident type (`let (lo, hi) = (1.0f32, x.len())`, [`evident_type`]). A struct pattern
//! takes its fields from a struct literal of the same path. References switch bindings to
//! `ref` as rustc's default binding modes do. A name whose type is not certain gets none,
//! and a [`Fix`] saying what to write for this pattern's shape.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Ident, Local, Member, Pat, PatIdent, Type};

use crate::front::{OuterVar, evident_type, settled};
use crate::syntax::{collect_idents, strip_group};

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

/// How a user writes the type of a name the macro could not type.
#[derive(Debug, PartialEq)]
pub(crate) enum Fix {
    /// `let x = ..;`: annotate it.
    Single,
    /// A part of a tuple or array pattern: the pattern's type with `Type` at this part,
    /// `let (lo, hi): (Type, f32) = ..;`. `part`: the value has a part for this name that an
    /// evident type would settle.
    Shape { decl: String, part: bool },
    /// A part of a pattern whose type cannot be written around it (a struct's field, a
    /// part beside `..`, through a reference): a `let` of its own after the pattern's.
    Rebind { decl: String, part: bool },
    /// A strads array inside a pattern: arrays are bound by a `let` of their own.
    Array { decl: String },
}

impl Fix {
    /// The advice after "needs its type: ". `kinds` follows the declaration (the types a
    /// reduction may have), `examples` lists evident values.
    pub(crate) fn advice(&self, name: &str, mutable: bool, kinds: &str, examples: &str) -> String {
        let evident = |whose: &str| format!(", or give {whose} an evident type ({examples})");
        match self {
            Fix::Single => {
                let m = if mutable { "mut " } else { "" };
                format!(
                    "write `let {m}{name}: Type = ..;`{kinds}{}",
                    evident("the value")
                )
            }
            Fix::Shape { decl, part } => format!(
                "write `{decl}`{kinds}{}",
                if *part {
                    evident(&format!("`{name}`'s part of the value"))
                } else {
                    String::new()
                }
            ),
            Fix::Rebind { decl, part } => format!(
                "write it in a `let` of its own after the pattern's, `{decl}`{kinds}{}",
                if *part {
                    evident(&format!("`{name}`'s part of the value"))
                } else {
                    String::new()
                }
            ),
            Fix::Array { decl } => format!(
                "bind it in a `let` of its own, so strads sees an array it can split and \
                 index: `{decl}`"
            ),
        }
    }
}

/// The names `local` binds, with their types; `known` are the variables before it.
pub(crate) fn bindings(local: &Local, known: &[OuterVar]) -> Vec<Binding> {
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
    known: &'k [OuterVar],
    found: Vec<Found>,
}

impl<'a> Walk<'_> {
    fn pat(&mut self, pat: &'a Pat, part: Part<'a>) {
        match pat {
            Pat::Ident(pi) => self.ident(pi, part),
            Pat::Paren(p) => self.pat(&p.pat, part),
            Pat::Reference(r) => self.reference(r, part),
            Pat::Tuple(t) => self.tuple(pat, &t.elems, part),
            Pat::Slice(s) => self.slice(pat, &s.elems, part),
            Pat::Struct(s) => self.structure(pat, s, part),
            Pat::TupleStruct(t) => self.tuple_struct(pat, t, part),
            // `A(x) | B(x)` binds from several places; macros are opaque. (`_`, `..`,
            // literals and paths bind nothing.)
            _ => self.unknown(pat, part.mode),
        }
    }

    /// Every name of `pat`, without a type.
    fn unknown(&mut self, pat: &Pat, mode: Mode) {
        let mut names = Vec::new();
        collect_idents(pat, &mut names);
        for (ident, mutable) in names {
            self.found.push(Found {
                ident,
                mutable,
                ty: None,
                part_ty: None,
                settle: false,
                implicit_ref: mode != Mode::Move,
                array: false,
            });
        }
    }

    fn ident(&mut self, pi: &'a PatIdent, part: Part<'a>) {
        let whole = self.whole(&part);
        let span = pi.ident.span();
        let ty = match (part.mode, &pi.by_ref, &pi.mutability) {
            (Mode::Move, None, _) => whole.clone(),
            (Mode::Move, Some(_), m) => whole.clone().map(|t| reference(t, m.is_some(), span)),
            (Mode::Ref, None, None) => whole.clone().map(|t| reference(t, false, span)),
            (Mode::RefMut, None, None) => whole.clone().map(|t| reference(t, true, span)),
            // `mut` or `ref` under a default binding mode: what it binds (or whether it
            // compiles) depends on the edition.
            _ => None,
        };
        let settle = whole.is_none()
            && part
                .value
                .is_some_and(|v| evident_type(v, self.known).is_none());
        self.found.push(Found {
            ident: pi.ident.clone(),
            mutable: pi.by_ref.is_none() && pi.mutability.is_some(),
            array: whole.as_ref().is_some_and(names_array),
            ty,
            part_ty: whole,
            settle,
            implicit_ref: part.mode != Mode::Move,
        });
        if let Some((_, sub)) = &pi.subpat {
            self.pat(sub, part);
        }
    }

    /// The whole type of `part`: as declared, else the value's evident type.
    fn whole(&self, part: &Part) -> Option<Type> {
        if let Some(t) = &part.declared {
            return Some(t.clone());
        }
        self.evident(part.value?, part.coerced)
    }

    /// The evident type of `e`; `None` when it is not evident, or when it is `coerced` and
    /// a coercion could change it. Spanned at `e` (errors about the type point there), unless
    /// `e` is a variable, whose type keeps the spans of its declaration.
    fn evident(&self, e: &Expr, coerced: bool) -> Option<Type> {
        let t = evident_type(e, self.known)?;
        if coerced && !settled(&t) {
            return None;
        }
        Some(match strip_group(e) {
            Expr::Path(_) => t,
            _ => respan(&t, e.span()),
        })
    }

    /// `&p`, `&mut p`: the part is a reference of the same kind; `p` matches its referent.
    fn reference(&mut self, r: &'a syn::PatReference, part: Part<'a>) {
        let mutable = r.mutability.is_some();
        let inner = match (&part.declared, part.value.map(strip_group)) {
            // Under a default binding mode `&` means different things in different editions.
            _ if part.mode != Mode::Move => None,
            (Some(Type::Reference(t)), v) if t.mutability.is_some() == mutable => Some(Part {
                declared: written(&t.elem),
                value: v.and_then(|v| referent(v, mutable)),
                ..part.clone()
            }),
            (None, Some(Expr::Reference(e)))
                if !part.coerced && e.mutability.is_some() == mutable =>
            {
                Some(Part {
                    value: Some(&e.expr),
                    ..part.clone()
                })
            }
            (None, Some(v)) => match self.evident(v, part.coerced) {
                Some(Type::Reference(t)) if t.mutability.is_some() == mutable => Some(Part {
                    declared: written(&t.elem),
                    value: None,
                    ..part.clone()
                }),
                _ => None,
            },
            _ => None,
        };
        match inner {
            Some(inner) => self.pat(&r.pat, inner),
            None => self.unknown(&r.pat, part.mode),
        }
    }

    /// The part a destructuring pattern matches, through references it does not write
    /// (they switch the binding mode); a value that is not a literal of parts becomes its
    /// evident type. `Err` when nothing is known, with the binding mode reached.
    fn peel(&self, mut part: Part<'a>) -> Result<Part<'a>, Mode> {
        loop {
            if let Some(Type::Reference(r)) = &part.declared {
                let mutable = r.mutability.is_some();
                part.mode = part.mode.through(mutable);
                part.value = part.value.and_then(|v| referent(v, mutable));
                part.declared = written(&r.elem);
                continue;
            }
            if part.declared.is_some() {
                return Ok(part);
            }
            let Some(value) = part.value else {
                return Err(part.mode);
            };
            match strip_group(value) {
                Expr::Reference(e) if !part.coerced => {
                    part.mode = part.mode.through(e.mutability.is_some());
                    part.value = Some(&e.expr);
                }
                Expr::Tuple(_) | Expr::Array(_) | Expr::Repeat(_) | Expr::Struct(_) => {
                    return Ok(part);
                }
                Expr::Call(c) if matches!(&*c.func, Expr::Path(_)) => return Ok(part),
                v => match self.evident(v, part.coerced) {
                    Some(t) => {
                        part.declared = Some(t);
                        part.value = None;
                        part.coerced = false;
                    }
                    None => return Err(part.mode),
                },
            }
        }
    }

    /// `(a, b, ..)` against a tuple type or a tuple expression.
    fn tuple(&mut self, pat: &'a Pat, elems: &'a Elems, part: Part<'a>) {
        let part = match self.peel(part) {
            Ok(part) => part,
            Err(mode) => return self.unknown(pat, mode),
        };
        let values = match part.value.map(strip_group) {
            Some(Expr::Tuple(t)) => Some(&t.elems),
            _ => None,
        };
        let parts: Option<Vec<Part<'a>>> = match (&part.declared, values) {
            (Some(Type::Tuple(tt)), values) => Some(
                tt.elems
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Part {
                        declared: written(t),
                        value: values.filter(|v| v.len() == tt.elems.len()).map(|v| &v[i]),
                        coerced: false,
                        mode: part.mode,
                    })
                    .collect(),
            ),
            // An alias (or another type not written as a tuple): the value's parts,
            // coerced to a type this code cannot see.
            (Some(_), _) if part.value.is_some() => {
                let retry = Part {
                    declared: None,
                    coerced: true,
                    ..part
                };
                return self.tuple(pat, elems, retry);
            }
            (None, Some(values)) => Some(
                values
                    .iter()
                    .map(|v| Part {
                        value: Some(v),
                        ..part.clone()
                    })
                    .collect(),
            ),
            _ => None,
        };
        self.elems(pat, elems, parts, part.mode);
    }

    /// Each of `elems` (maybe with one `..`) against its part; all unknown when the parts
    /// are unknown or do not line up.
    fn elems(&mut self, pat: &'a Pat, elems: &'a Elems, parts: Option<Vec<Part<'a>>>, mode: Mode) {
        match parts.and_then(|p| line_up(elems, p)) {
            Some(pairs) => pairs.into_iter().for_each(|(p, part)| self.pat(p, part)),
            None => self.unknown(pat, mode),
        }
    }

    /// `[a, b, rest @ ..]` against an array type or an array expression.
    fn slice(&mut self, pat: &'a Pat, elems: &'a Elems, part: Part<'a>) {
        let part = match self.peel(part) {
            Ok(part) => part,
            Err(mode) => return self.unknown(pat, mode),
        };
        let Some(array) = self.array_parts(&part) else {
            if part.declared.is_some() && part.value.is_some() {
                let retry = Part {
                    declared: None,
                    coerced: true,
                    ..part
                };
                return self.slice(pat, elems, retry);
            }
            return self.unknown(pat, part.mode);
        };
        let named = elems.len() - usize::from(elems.iter().any(is_rest));
        // Without `..` the pattern has as many elements as the array.
        let exact = (named == elems.len()).then_some(named);
        let Some(len) = array.len.or(array.values.as_ref().map(Vec::len)).or(exact) else {
            return self.unknown(pat, part.mode);
        };
        let values = array.values.as_ref().filter(|v| v.len() == len);
        let parts = (0..len)
            .map(|i| Part {
                declared: array.elem.clone(),
                value: values.map(|v| v[i]),
                coerced: part.coerced || array.elem.is_none(),
                mode: part.mode,
            })
            .collect();
        let Some(pairs) = line_up(elems, parts) else {
            return self.unknown(pat, part.mode);
        };
        for (p, sub) in pairs {
            self.pat(p, sub);
        }
        // `rest @ ..` binds the elements `..` stands for: an array of them.
        if let Some(Pat::Ident(pi)) = elems.iter().find(|p| is_rest(p)) {
            let rest = Part {
                declared: array.elem.as_ref().and_then(|e| {
                    let n = proc_macro2::Literal::usize_unsuffixed(len.checked_sub(named)?);
                    Some(syn::parse_quote_spanned!(pi.ident.span()=> [#e; #n]))
                }),
                value: None,
                ..part
            };
            self.ident(pi, rest);
        }
    }

    /// The element type (maybe unknown), length and element expressions of an array part.
    fn array_parts(&self, part: &Part<'a>) -> Option<ArrayParts<'a>> {
        match (&part.declared, part.value.map(strip_group)) {
            (Some(Type::Array(at)), v) => Some(ArrayParts {
                elem: written(&at.elem),
                len: int_literal(&at.len),
                values: v.and_then(array_values),
            }),
            (Some(_), _) => None,
            (None, Some(v)) => {
                let values = array_values(v)?;
                // An array's elements share one type; one that no coercion changes is it.
                let elem = values.iter().find_map(|e| self.evident(e, true));
                Some(ArrayParts {
                    elem,
                    len: Some(values.len()),
                    values: Some(values),
                })
            }
            (None, None) => None,
        }
    }

    /// `Point { x, y: (a, b) }` against a struct literal of the same path; its fields are
    /// coerced to the struct's field types, which only its definition shows.
    fn structure(&mut self, pat: &'a Pat, s: &'a syn::PatStruct, part: Part<'a>) {
        let part = match self.peel(part) {
            Ok(part) => part,
            Err(mode) => return self.unknown(pat, mode),
        };
        let lit = match part.value.map(strip_group) {
            Some(Expr::Struct(e))
                if e.qself.is_none() && s.qself.is_none() && same_path(&e.path, &s.path) =>
            {
                e
            }
            _ => return self.unknown(pat, part.mode),
        };
        for fp in &s.fields {
            let value = lit
                .fields
                .iter()
                .find(|f| same_member(&f.member, &fp.member));
            let sub = Part {
                declared: None,
                value: value.map(|f| &f.expr),
                coerced: true,
                mode: part.mode,
            };
            self.pat(&fp.pat, sub);
        }
    }

    /// `Pair(a, b)` against a call of the same path (the constructor); its arguments are
    /// coerced to the fields' types.
    fn tuple_struct(&mut self, pat: &'a Pat, t: &'a syn::PatTupleStruct, part: Part<'a>) {
        let part = match self.peel(part) {
            Ok(part) => part,
            Err(mode) => return self.unknown(pat, mode),
        };
        let args = match part.value.map(strip_group) {
            Some(Expr::Call(c)) => match &*c.func {
                Expr::Path(p)
                    if p.qself.is_none() && t.qself.is_none() && same_path(&p.path, &t.path) =>
                {
                    &c.args
                }
                _ => return self.unknown(pat, part.mode),
            },
            _ => return self.unknown(pat, part.mode),
        };
        let parts = args
            .iter()
            .map(|a| Part {
                declared: None,
                value: Some(a),
                coerced: true,
                mode: part.mode,
            })
            .collect();
        self.elems(pat, &t.elems, Some(parts), part.mode);
    }
}

type Elems = syn::punctuated::Punctuated<Pat, syn::Token![,]>;

struct ArrayParts<'a> {
    elem: Option<Type>,
    len: Option<usize>,
    values: Option<Vec<&'a Expr>>,
}

/// The elements of an array expression, `[a, b]` or `[v; 3]`.
fn array_values(e: &Expr) -> Option<Vec<&Expr>> {
    match e {
        Expr::Array(a) => Some(a.elems.iter().collect()),
        Expr::Repeat(r) => Some(vec![&*r.expr; int_literal(&r.len)?]),
        _ => None,
    }
}

/// Pairs each of `elems` except `..` with its part: those before `..` with the first
/// parts, those after with the last. `None` when the counts do not fit.
fn line_up<'p, 'a>(elems: &'p Elems, parts: Vec<Part<'a>>) -> Option<Vec<(&'p Pat, Part<'a>)>> {
    let rest = elems.iter().position(is_rest);
    let named = elems.len() - usize::from(rest.is_some());
    if named > parts.len() || (rest.is_none() && named != parts.len()) {
        return None;
    }
    let skip = parts.len() - named;
    let mut parts = parts.into_iter();
    let mut out = Vec::new();
    for (i, p) in elems.iter().enumerate() {
        if Some(i) == rest {
            parts.by_ref().take(skip).for_each(drop);
            continue;
        }
        out.push((p, parts.next()?));
    }
    Some(out)
}

/// `..` or `name @ ..`.
fn is_rest(p: &Pat) -> bool {
    match p {
        Pat::Rest(_) => true,
        Pat::Ident(pi) => matches!(pi.subpat.as_ref().map(|(_, s)| &**s), Some(Pat::Rest(_))),
        _ => false,
    }
}

/// The referent of `&v` (`&mut v`), when `v` is written so.
fn referent(v: &Expr, mutable: bool) -> Option<&Expr> {
    match strip_group(v) {
        Expr::Reference(e) if e.mutability.is_some() == mutable => Some(&e.expr),
        _ => None,
    }
}

/// `ty` unless it says nothing (`_`), without parentheses.
fn written(ty: &Type) -> Option<Type> {
    match ty {
        Type::Infer(_) => None,
        Type::Paren(p) => written(&p.elem),
        Type::Group(g) => written(&g.elem),
        t => Some(t.clone()),
    }
}

/// Whether `t` is a strads array or a reference to one.
fn names_array(t: &Type) -> bool {
    match t {
        Type::Reference(r) => names_array(&r.elem),
        Type::Path(tp) => tp
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "DistArray" || s.ident == "SparseArray"),
        _ => false,
    }
}

/// `&t` or `&mut t`, spanned at `span`.
fn reference(t: Type, mutable: bool, span: Span) -> Type {
    if mutable {
        syn::parse_quote_spanned!(span=> &mut #t)
    } else {
        syn::parse_quote_spanned!(span=> &#t)
    }
}

/// `t` with every token spanned at `span`, so errors about it point at the value.
fn respan(t: &Type, span: Span) -> Type {
    fn tokens(ts: TokenStream, span: Span) -> TokenStream {
        ts.into_iter()
            .map(|tt| match tt {
                TokenTree::Group(g) => {
                    let mut g2 = Group::new(g.delimiter(), tokens(g.stream(), span));
                    g2.set_span(span);
                    TokenTree::Group(g2)
                }
                mut tt => {
                    tt.set_span(span);
                    tt
                }
            })
            .collect()
    }
    syn::parse2(tokens(t.to_token_stream(), span)).expect("a type respanned is a type")
}

/// The value of an integer literal, as an array length.
fn int_literal(e: &Expr) -> Option<usize> {
    match strip_group(e) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        _ => None,
    }
}

fn same_path(a: &syn::Path, b: &syn::Path) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

fn same_member(a: &Member, b: &Member) -> bool {
    match (a, b) {
        (Member::Named(x), Member::Named(y)) => x == y,
        (Member::Unnamed(x), Member::Unnamed(y)) => x.index == y.index,
        _ => false,
    }
}

/// The fix for a name `f` of `pat` without a type.
fn fix(local: &Local, pat: &Pat, single: bool, f: &Found, all: &[Found]) -> Fix {
    let m = if f.mutable { "mut " } else { "" };
    let x = &f.ident;
    if single {
        return Fix::Single;
    }
    if f.array {
        let ty = f.part_ty.as_ref().map_or("Type".to_owned(), show);
        return Fix::Array {
            decl: format!("let {m}{x}: {ty} = ..;"),
        };
    }
    let otherwise = if local.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
        " else { .. }"
    } else {
        ""
    };
    let shape = (!f.implicit_ref).then(|| skeleton(pat, all, x)).flatten();
    match shape {
        Some(ty) => Fix::Shape {
            decl: format!("let {}: {ty} = ..{otherwise};", show(pat)),
            part: f.settle,
        },
        None => {
            let annotation = match &local.pat {
                Pat::Type(pt) => format!(": {}", show(&pt.ty)),
                _ => String::new(),
            };
            Fix::Rebind {
                decl: format!(
                    "let {}{annotation} = ..{otherwise}; let {m}{x}: Type = {x};",
                    show(pat)
                ),
                part: f.settle,
            }
        }
    }
}

/// The type of `pat` written out, `Type` at `target` and the known types elsewhere (`_`
/// where unknown); `None` when the pattern's shape has no such type (a struct, `..`).
fn skeleton(pat: &Pat, all: &[Found], target: &Ident) -> Option<String> {
    let binds = |p: &Pat| {
        let mut names = Vec::new();
        collect_idents(p, &mut names);
        names.iter().any(|(i, _)| i == target)
    };
    match pat {
        Pat::Ident(pi) if pi.ident == *target => Some("Type".to_owned()),
        Pat::Ident(pi) => match &pi.subpat {
            Some((_, sub)) if binds(sub) => skeleton(sub, all, target),
            _ => Some(
                all.iter()
                    .find(|f| f.ident == pi.ident)
                    .and_then(|f| f.part_ty.as_ref())
                    .map_or("_".to_owned(), show),
            ),
        },
        Pat::Wild(_) => Some("_".to_owned()),
        Pat::Paren(p) => skeleton(&p.pat, all, target),
        Pat::Reference(r) => {
            let m = if r.mutability.is_some() { "mut " } else { "" };
            Some(format!("&{m}{}", skeleton(&r.pat, all, target)?))
        }
        Pat::Tuple(t) if !t.elems.iter().any(is_rest) => {
            let parts: Option<Vec<String>> =
                t.elems.iter().map(|p| skeleton(p, all, target)).collect();
            let parts = parts?;
            Some(match parts.as_slice() {
                [one] => format!("({one},)"),
                _ => format!("({})", parts.join(", ")),
            })
        }
        Pat::Slice(s) if !s.elems.iter().any(is_rest) && !s.elems.is_empty() => {
            let elem = s.elems.iter().find(|p| binds(p)).unwrap_or(&s.elems[0]);
            Some(format!(
                "[{}; {}]",
                skeleton(elem, all, target)?,
                s.elems.len()
            ))
        }
        _ => None,
    }
}

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

#[cfg(test)]
mod tests {
    use super::{Fix, bindings, show};
    use crate::front::OuterVar;

    /// Each name the last `let` of `src` binds, as `name: type`, or `name: ?` and its fix;
    /// the `let`s before it are the known variables.
    fn typed(src: &str) -> Vec<String> {
        let block: syn::Block = syn::parse_str(&format!("{{ {src} }}")).expect("statements");
        let mut known: Vec<OuterVar> = Vec::new();
        let mut last = Vec::new();
        for stmt in &block.stmts {
            let syn::Stmt::Local(local) = stmt else {
                panic!("only `let`s");
            };
            last = bindings(local, &known)
                .into_iter()
                .map(|b| {
                    let m = if b.mutable { "mut " } else { "" };
                    let ty = match (&b.ty, &b.fix) {
                        (Some(t), _) => show(t),
                        (None, Fix::Single) => "? let".to_owned(),
                        (None, Fix::Shape { decl, part }) => format!("? {decl}{}", plus(*part)),
                        (None, Fix::Rebind { decl, part }) => format!("? {decl}{}", plus(*part)),
                        (None, Fix::Array { decl }) => format!("? array {decl}"),
                    };
                    let line = format!("{m}{}: {ty}", b.ident);
                    known.retain(|o| o.ident != b.ident);
                    known.push(OuterVar {
                        ident: b.ident,
                        ty: b.ty,
                        mutable: b.mutable,
                        closure: false,
                        fix: b.fix,
                    });
                    line
                })
                .collect();
        }
        last
    }

    /// ` (or evident)` when the fix may also be an evident part of the value.
    fn plus(part: bool) -> &'static str {
        if part { " (or evident)" } else { "" }
    }

    #[test]
    fn tuples() {
        assert_eq!(
            typed("let (lo, hi) = (1.0f32, 5.0f32);"),
            ["lo: f32", "hi: f32"]
        );
        assert_eq!(
            typed("let (lo, hi): (f32, f32) = (1.0, 5.0);"),
            ["lo: f32", "hi: f32"]
        );
        assert_eq!(
            typed("let (h, w) = (x.shape()[0], x.shape()[1]);"),
            ["h: usize", "w: usize"]
        );
        assert_eq!(
            typed("let ((a, b), c) = ((1u32, 2u32), 3.0f64);"),
            ["a: u32", "b: u32", "c: f64"]
        );
        assert_eq!(
            typed("let (mut s, t) = (0.0f64, 1u8);"),
            ["mut s: f64", "t: u8"]
        );
        assert_eq!(typed("let (one,) = (n as i32,);"), ["one: i32"]);
        assert_eq!(
            typed("let n: usize = 4; let (a, b) = (n, n * 2);"),
            ["a: usize", "b: usize"]
        );
    }

    /// `_` in the annotation takes the value's part; an alias is not split, so the value's
    /// parts count (and only types no coercion changes).
    #[test]
    fn annotations() {
        assert_eq!(
            typed("let (a, b): (f32, _) = (1.0, 2u8);"),
            ["a: f32", "b: u8"]
        );
        assert_eq!(
            typed("let ((a, b), c): ((_, u16), (f64)) = ((1i8, 2), 3.0);"),
            ["a: i8", "b: u16", "c: f64"]
        );
        assert_eq!(
            typed("let (a, b): Pair = (1.0, 2u8);"),
            ["a: ? let (a, b): (Type, u8) = ..; (or evident)", "b: u8"]
        );
        assert_eq!(
            typed("let (a, b): Pair = (1.0f32, 2u8);"),
            ["a: f32", "b: u8"]
        );
        assert_eq!(
            typed("let s: &String = todo!(); let (a, b): Pair = (s, 2u8);"),
            ["a: ? let (a, b): (Type, u8) = ..;", "b: u8"]
        );
        assert_eq!(
            typed("let s: &String = todo!(); let (a, b) = (s, 2u8);"),
            ["a: &String", "b: u8"]
        );
        assert_eq!(
            typed("let p: (f32, u8) = todo!(); let (a, b) = p;"),
            ["a: f32", "b: u8"]
        );
        assert_eq!(typed("let x: _ = 3u8;"), ["x: u8"]);
    }

    #[test]
    fn arrays() {
        assert_eq!(typed("let [a, b] = [0.5f32, 2.0];"), ["a: f32", "b: f32"]);
        assert_eq!(typed("let [a, b] = [0.5, 2.0f32];"), ["a: f32", "b: f32"]);
        assert_eq!(
            typed("let [a, b]: [f64; 2] = [1.0, 2.0];"),
            ["a: f64", "b: f64"]
        );
        assert_eq!(
            typed("let [first, rest @ ..] = [1u8, 2, 3];"),
            ["first: u8", "rest: [u8; 2]"]
        );
        assert_eq!(typed("let [a, .., z] = [0u16; 5];"), ["a: u16", "z: u16"]);
        assert_eq!(
            typed("let [(a, b), (c, d)] = [(1u8, 2.0f32), (3, 4.0)];"),
            ["a: u8", "b: f32", "c: u8", "d: f32"]
        );
        assert_eq!(
            typed("let [a, b] = [1.0, 2.0];"),
            [
                "a: ? let [a, b]: [Type; 2] = ..; (or evident)",
                "b: ? let [a, b]: [Type; 2] = ..; (or evident)"
            ]
        );
        assert_eq!(typed("let w = [0.5f32, 2.0];"), ["w: [f32; 2]"]);
        assert_eq!(typed("let z = [0u64; 3];"), ["z: [u64; 3]"]);
        assert_eq!(
            typed("let p = (1u8, (2.0f32, true));"),
            ["p: (u8, (f32, bool))"]
        );
    }

    /// A struct's fields show their types only in its definition: a struct literal of the
    /// same path gives them (types no coercion changes), nothing else does.
    #[test]
    fn structs() {
        assert_eq!(
            typed("let Point { x, y: (a, b) } = Point { x: 1.0f32, y: (2u8, 3u8) };"),
            ["x: f32", "a: u8", "b: u8"]
        );
        assert_eq!(
            typed("let Point { x, y }: Point = make();"),
            [
                "x: ? let Point { x, y }: Point = ..; let x: Type = x;",
                "y: ? let Point { x, y }: Point = ..; let y: Type = y;"
            ]
        );
        assert_eq!(
            typed("let Point { x, .. } = Point { x: 1.0, y: 2.0 };"),
            ["x: ? let Point { x, .. } = ..; let x: Type = x; (or evident)"]
        );
        assert_eq!(
            typed("let Point { x, y } = Other { x: 1.0f32, y: 2.0f32 };"),
            [
                "x: ? let Point { x, y } = ..; let x: Type = x;",
                "y: ? let Point { x, y } = ..; let y: Type = y;"
            ]
        );
        assert_eq!(
            typed("let s: &String = todo!(); let Named { name } = Named { name: s };"),
            ["name: ? let Named { name } = ..; let name: Type = name;"]
        );
        assert_eq!(
            typed("let Pair(a, mut b) = Pair(1.0f32, 2u8);"),
            ["a: f32", "mut b: u8"]
        );
        assert_eq!(
            typed("let Some(x) = opt else { return; };"),
            ["x: ? let Some(x) = .. else { .. }; let x: Type = x;"]
        );
    }

    /// `ref`, `_`, `..`, `x @ p`, and references: written ones are followed, unwritten
    /// ones make bindings references (default binding modes) unless `mut` or `ref` makes
    /// that depend on the edition.
    #[test]
    fn sub_patterns() {
        assert_eq!(
            typed("let (ref a, _, .., z) = (1.0f32, 2u8, 3u8, 4i64);"),
            ["a: &f32", "z: i64"]
        );
        assert_eq!(typed("let (a, b) = &(1.0f32, 2u8);"), ["a: &f32", "b: &u8"]);
        assert_eq!(typed("let &(a, b) = &(1.0f32, 2u8);"), ["a: f32", "b: u8"]);
        assert_eq!(
            typed("let (a, b): &(f32, u8) = &(1.0, 2);"),
            ["a: &f32", "b: &u8"]
        );
        assert_eq!(
            typed("let (mut a, b) = &(1.0f32, 2u8);"),
            [
                "mut a: ? let (mut a, b) = ..; let mut a: Type = a;",
                "b: &u8"
            ]
        );
        assert_eq!(
            typed("let p @ (a, _) = (1u8, 2u8);"),
            ["p: (u8, u8)", "a: u8"]
        );
        assert_eq!(
            typed("let (a, ..) = bounds();"),
            ["a: ? let (a, ..) = ..; let a: Type = a;"]
        );
        assert_eq!(
            typed("let (Ok(x) | Err(x)) = r;"),
            ["x: ? let (Ok(x) | Err(x)) = ..; let x: Type = x;"]
        );
    }

    /// Unknown parts get a fix written for the pattern's shape, with the known parts'
    /// types filled in.
    #[test]
    fn fixes() {
        assert_eq!(
            typed("let (lo, hi) = bounds();"),
            [
                "lo: ? let (lo, hi): (Type, _) = ..;",
                "hi: ? let (lo, hi): (_, Type) = ..;"
            ]
        );
        assert_eq!(
            typed("let (lo, (mid, hi)) = (step(), (1u8, 2.0));"),
            [
                "lo: ? let (lo, (mid, hi)): (Type, (u8, _)) = ..; (or evident)",
                "mid: u8",
                "hi: ? let (lo, (mid, hi)): (_, (u8, Type)) = ..; (or evident)"
            ]
        );
        assert_eq!(typed("let step = step_of(lr);"), ["step: ? let"]);
        assert_eq!(
            typed("let (a, s): (DistArray<f32, 1>, f32) = make();"),
            ["a: ? array let a: DistArray<f32, 1> = ..;", "s: f32"]
        );
        assert_eq!(typed("let n = 3usize; let n = n * 2;"), ["n: usize"]);
    }

    #[test]
    fn shown() {
        let t: syn::Type = syn::parse_str("&'a mut std::vec::Vec<(f32, [u8; 2])>").unwrap();
        assert_eq!(show(&t), "&'a mut std::vec::Vec<(f32, [u8; 2])>");
        for src in [
            "(mut lo, ref hi)",
            "&mut (a, _)",
            "Some(x)",
            "Point { x: (a, b), .. }",
            "[first, rest @ ..]",
            "E::A(x) | E::B(x)",
        ] {
            let p = syn::parse::Parser::parse_str(syn::Pat::parse_multi, src).unwrap();
            assert_eq!(show(&p), src);
        }
    }

    #[test]
    fn advice() {
        let ex = "`0u64`";
        assert_eq!(
            Fix::Single.advice("step", false, "", ex),
            "write `let step: Type = ..;`, or give the value an evident type (`0u64`)"
        );
        let shape = Fix::Shape {
            decl: "let (lo, hi): (Type, f32) = ..;".into(),
            part: true,
        };
        assert_eq!(
            shape.advice("lo", false, " (`f32`)", ex),
            "write `let (lo, hi): (Type, f32) = ..;` (`f32`), or give `lo`'s part of the \
             value an evident type (`0u64`)"
        );
    }
}
