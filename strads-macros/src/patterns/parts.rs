//! A pattern matched against what is known of its value, part by part (`Walk`): the
//! annotation split along tuples, arrays and references, the value's matching part where
//! the annotation says nothing, struct literals for struct patterns. Each name gets the type
//! of its part only when the syntax makes it certain; any doubt leaves the name untyped.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Member, Pat, PatIdent, Type};

use super::evident::{evident_type, settled};
use super::{Found, Mode, Part, Walk};
use crate::syntax::{collect_idents, strip_group};

impl<'a> Walk<'_> {
    pub(super) fn pat(&mut self, pat: &'a Pat, part: Part<'a>) {
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
pub(super) fn is_rest(p: &Pat) -> bool {
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
pub(super) fn written(ty: &Type) -> Option<Type> {
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
