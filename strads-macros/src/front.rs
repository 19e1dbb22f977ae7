//! Front end: the annotated function as a model strads can reason about.

use syn::{Expr, ExprForLoop, ExprRange, FnArg, ItemFn, Pat, RangeLimits, Stmt, Type};

use crate::arrays::{ArrayKind, ArrayVar, array_type};
use crate::ctxt::Ctxt;
use crate::patterns::{self, Fix};
use crate::syntax::{collect_idents, for_span, int_literal, strip_group};

/// A non-array variable defined outside the loop: a parameter or a local before the loop.
pub(crate) struct OuterVar {
    pub(crate) ident: syn::Ident,
    /// The declared type, or the evident type of an unannotated local's value
    /// (`patterns/evident.rs`); `None` when neither is known.
    pub(crate) ty: Option<Type>,
    /// Declared with `mut`.
    pub(crate) mutable: bool,
    /// An unannotated local bound to a closure.
    pub(crate) closure: bool,
    /// What to write when `ty` is `None`.
    pub(crate) fix: Fix,
}

/// What the loop iterates over.
pub(crate) enum SpaceSrc {
    /// An array variable (index into `LoopFn::arrays`).
    Array(usize),
    /// `start..end` or `start..=end` (each maybe `.step_by(s)`): one per loop of a perfect
    /// nest `for i in a..b { for j in c..d { .. } }`, outermost first.
    Range { dims: Vec<RangeDim> },
}

/// One range loop of the iteration space.
pub(crate) struct RangeDim {
    pub(crate) start: Box<Expr>,
    pub(crate) end: Box<Expr>,
    pub(crate) inclusive: bool,
    /// `(a..b).step_by(step)`.
    pub(crate) step: Option<Box<Expr>>,
}

impl RangeDim {
    /// The step when it is an integer literal (`1` without `step_by`).
    pub(crate) fn literal_step(&self) -> Option<i64> {
        match &self.step {
            None => Some(1),
            Some(e) => int_literal(e),
        }
    }

    /// The start when it is an integer literal.
    pub(crate) fn literal_start(&self) -> Option<i64> {
        int_literal(&self.start)
    }
}

/// How the loop pattern binds the iteration index.
pub(crate) enum KeyPat {
    /// `([u, i], v)`: one ident (or `_`) per dim.
    Elems(Vec<Option<syn::Ident>>),
    /// `(key, v)`: the whole index array.
    Whole(syn::Ident),
    /// `(_, v)`.
    Ignored,
    /// `i` of a range loop; `i`, `j`, .. of a perfect nest of range loops.
    Range(Vec<Option<syn::Ident>>),
}

/// The annotated function, split around its loop.
pub(crate) struct LoopFn {
    pub(crate) item: ItemFn,
    pub(crate) arrays: Vec<ArrayVar>,
    pub(crate) outer: Vec<OuterVar>,
    pub(crate) loop_index: usize,
    pub(crate) for_loop: ExprForLoop,
    /// The loops perfectly nested in `for_loop` that are dims of the iteration space
    /// (outermost first); the body of an iteration is the last one's (or `for_loop`'s).
    pub(crate) nest: Vec<ExprForLoop>,
    pub(crate) space: SpaceSrc,
    pub(crate) key: KeyPat,
    pub(crate) n_dims: usize,
    /// Arrays given to `buffer(..)`: write-back buffers, exempt from the analysis.
    pub(crate) buffered: Vec<usize>,
    /// `for (k, v) in a.iter_mut()`: each iteration owns its entry's value.
    pub(crate) values_mut: bool,
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
}

impl LoopFn {
    /// Parses the function; `None` after reporting errors when it cannot be modelled.
    pub(crate) fn from_syn(cx: &Ctxt, item: &ItemFn) -> Option<LoopFn> {
        check_signature(cx, item);
        let mut arrays = Vec::new();
        let mut outer = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(r) => cx.error_spanned_by(
                    r,
                    "`#[parallel_for]` goes on a free function; move the loop into a function \
                     that takes the fields it needs as parameters",
                ),
                FnArg::Typed(pt) => {
                    let Pat::Ident(pi) = &*pt.pat else {
                        cx.error_spanned_by(
                            &pt.pat,
                            "parameters of a `#[parallel_for]` function must be plain names; \
                             destructure inside the body instead",
                        );
                        continue;
                    };
                    match array_type(cx, &pt.ty) {
                        Some((kind, elem, rank, mutable, owned)) => {
                            if owned {
                                cx.error_spanned_by(
                                    &pt.ty,
                                    "take arrays by reference: `&DistArray<..>`, \
                                     `&mut DistArray<..>` or `&SparseArray<..>`",
                                );
                            }
                            arrays.push(ArrayVar {
                                ident: pi.ident.clone(),
                                kind,
                                elem,
                                rank,
                                mutable,
                                owned: false,
                            })
                        }
                        None => outer.push(OuterVar {
                            ident: pi.ident.clone(),
                            ty: Some((*pt.ty).clone()),
                            mutable: pi.mutability.is_some(),
                            closure: false,
                            fix: Fix::Single,
                        }),
                    }
                }
            }
        }

        let stmts = &item.block.stmts;
        let loops: Vec<usize> = stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Stmt::Expr(Expr::ForLoop(_), _)))
            .map(|(i, _)| i)
            .collect();
        let loop_index = match loops.as_slice() {
            [i] => *i,
            [] => {
                cx.error_spanned_by(
                    &item.sig.ident,
                    "`#[parallel_for]` needs one top-level `for` loop in the function body; \
                     that loop is run in parallel",
                );
                return None;
            }
            [_, second, ..] => {
                let Stmt::Expr(Expr::ForLoop(l), _) = &stmts[*second] else {
                    unreachable!("filtered above");
                };
                cx.syn_error(syn::Error::new(
                    for_span(l),
                    "the function holds several top-level `for` loops; put each loop to \
                     parallelize in its own `#[parallel_for]` function",
                ));
                return None;
            }
        };
        for stmt in &stmts[..loop_index] {
            if let Stmt::Local(local) = stmt {
                bind_local(cx, local, &mut arrays, &mut outer);
            }
        }

        let Stmt::Expr(Expr::ForLoop(for_loop), _) = &stmts[loop_index] else {
            unreachable!("found above");
        };
        let for_loop = for_loop.clone();
        let values_mut = is_iter_mut(&for_loop.expr);
        let mut space = space_of(cx, &for_loop.expr, &arrays)?;
        let mut nest = Vec::new();
        if let SpaceSrc::Range { dims } = &mut space {
            nest = perfect_nest(&for_loop, &arrays, &outer, dims);
        }
        if values_mut {
            if let SpaceSrc::Array(a) = space {
                let arr = &arrays[a];
                if arr.kind != ArrayKind::Sparse || !arr.mutable || arr.owned {
                    cx.error_spanned_by(
                        &for_loop.expr,
                        "`iter_mut()` in a `#[parallel_for]` loop iterates a `&mut SparseArray` \
                         parameter, giving each iteration its entry's value to update",
                    );
                    return None;
                }
            }
        }
        let (key, n_dims) = match &space {
            SpaceSrc::Array(a) => key_of_array(cx, &for_loop.pat, arrays[*a].rank)?,
            SpaceSrc::Range { dims } => {
                let mut keys = vec![key_of_range(cx, &for_loop.pat)?];
                for l in &nest {
                    keys.push(key_of_range(cx, &l.pat)?);
                }
                (KeyPat::Range(keys), dims.len())
            }
        };
        Some(LoopFn {
            item: item.clone(),
            arrays,
            outer,
            loop_index,
            for_loop,
            nest,
            space,
            key,
            n_dims,
            buffered: Vec::new(),
            values_mut,
            applies: Vec::new(),
            max_delay: None,
            sync: false,
            merge: None,
            hybrid: false,
        })
    }

    /// Index of the array named `name`.
    pub(crate) fn array_index(&self, name: &str) -> Option<usize> {
        self.arrays.iter().position(|a| a.ident == name)
    }

    /// The outer variable named `name`.
    pub(crate) fn outer_var(&self, name: &str) -> Option<&OuterVar> {
        self.outer.iter().find(|o| o.ident == name)
    }

    /// Dim names for the report: the pattern's idents, `key[0]` for a whole key.
    pub(crate) fn dim_names(&self) -> Vec<String> {
        match &self.key {
            KeyPat::Elems(v) => v
                .iter()
                .enumerate()
                .map(|(d, i)| i.as_ref().map_or(format!("_{d}"), |i| i.to_string()))
                .collect(),
            KeyPat::Whole(k) => (0..self.n_dims).map(|d| format!("{k}[{d}]")).collect(),
            KeyPat::Ignored => (0..self.n_dims).map(|d| format!("_{d}")).collect(),
            // A stepped range's dim counts its steps: `i_step` (the index is
            // `step * i_step + start`).
            KeyPat::Range(v) => v
                .iter()
                .enumerate()
                .map(|(d, i)| {
                    let name = i.as_ref().map_or(format!("_{d}"), |i| i.to_string());
                    match &self.space {
                        SpaceSrc::Range { dims } if dims[d].literal_step() != Some(1) => {
                            format!("{name}_step")
                        }
                        _ => name,
                    }
                })
                .collect(),
        }
    }

    /// The loop whose body is one iteration: the innermost loop of the nest.
    pub(crate) fn body_loop(&self) -> &ExprForLoop {
        self.nest.last().unwrap_or(&self.for_loop)
    }

    /// Every pattern of the nest's loops, outermost first.
    pub(crate) fn nest_pats(&self) -> impl Iterator<Item = &Pat> {
        std::iter::once(&*self.for_loop.pat).chain(self.nest.iter().map(|l| &*l.pat))
    }
}

/// Adds the names `local` binds: one name annotated with an array type is an array, every
/// other name an outer variable typed by [`patterns::bindings`]. A name shadows an earlier
/// one of the same name.
fn bind_local(
    cx: &Ctxt,
    local: &syn::Local,
    arrays: &mut Vec<ArrayVar>,
    outer: &mut Vec<OuterVar>,
) {
    let (pat, ty) = match &local.pat {
        Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
        p => (p, None),
    };
    if let (Pat::Ident(pi), Some(ty)) = (pat, ty) {
        if let Some((kind, elem, rank, _, owned)) = array_type(cx, ty) {
            shadow(&pi.ident, arrays, outer);
            arrays.push(ArrayVar {
                ident: pi.ident.clone(),
                kind,
                elem,
                rank,
                mutable: pi.mutability.is_some(),
                owned,
            });
            return;
        }
    }
    let init = local.init.as_ref().map(|i| strip_group(&i.expr));
    let closure = matches!(pat, Pat::Ident(_)) && matches!(init, Some(Expr::Closure(_)));
    // Typed against the variables before this `let`: `let n = n * 2;` reads the earlier `n`.
    let known = |name: &str| {
        outer
            .iter()
            .rev()
            .find(|v| v.ident == name)
            .and_then(|v| v.ty.clone())
    };
    for b in patterns::bindings(local, &known) {
        shadow(&b.ident, arrays, outer);
        outer.push(OuterVar {
            ident: b.ident,
            ty: b.ty,
            mutable: b.mutable,
            closure,
            fix: b.fix,
        });
    }
}

/// Forgets the array or outer variable named `ident`, which a new binding shadows.
fn shadow(ident: &syn::Ident, arrays: &mut Vec<ArrayVar>, outer: &mut Vec<OuterVar>) {
    arrays.retain(|a| a.ident != *ident);
    outer.retain(|o| o.ident != *ident);
}

/// The body of the innermost loop of a perfect nest of `levels` loops below `l`.
pub(crate) fn innermost_body_mut(l: &mut ExprForLoop, levels: usize) -> &mut syn::Block {
    if levels == 0 {
        return &mut l.body;
    }
    match l.body.stmts.first_mut() {
        Some(Stmt::Expr(Expr::ForLoop(inner), _)) => innermost_body_mut(inner, levels - 1),
        _ => unreachable!("a perfect nest holds one loop per level"),
    }
}

/// The loops perfectly nested in `l` that become dims of the iteration space, their ranges
/// appended to `dims`: while a loop's body is exactly one `for` loop over a range whose
/// bounds do not depend on the indices bound so far (nor on anything the loop may change),
/// and nothing in the innermost body jumps out of it or to an outer loop of the nest.
fn perfect_nest(
    l: &ExprForLoop,
    arrays: &[ArrayVar],
    outer: &[OuterVar],
    dims: &mut Vec<RangeDim>,
) -> Vec<ExprForLoop> {
    let mut nest: Vec<ExprForLoop> = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    let mut cur = l;
    loop {
        let mut names = Vec::new();
        collect_idents(&cur.pat, &mut names);
        bound.extend(names.into_iter().map(|(i, _)| i.to_string()));
        let [Stmt::Expr(Expr::ForLoop(inner), _)] = cur.body.stmts.as_slice() else {
            break;
        };
        let pure = |e: &Expr| pure_bound(e, arrays, outer, &bound);
        let Some(dim) = range_dim(&inner.expr)
            .filter(|d| pure(&d.start) && pure(&d.end) && d.step.as_deref().is_none_or(pure))
        else {
            break;
        };
        let fresh_name = match &*inner.pat {
            Pat::Ident(pi) => {
                pi.subpat.is_none() && pi.by_ref.is_none() && !bound.contains(&pi.ident.to_string())
            }
            Pat::Wild(_) => true,
            _ => false,
        };
        if !inner.attrs.is_empty() || !fresh_name {
            break;
        }
        nest.push(inner.clone());
        dims.push(dim);
        cur = inner;
    }
    // Jumps in the innermost body: cut the nest above the loops they leave or continue.
    while !nest.is_empty() {
        let labels: Vec<Option<String>> = std::iter::once(l)
            .chain(nest.iter())
            .map(|l| l.label.as_ref().map(|x| x.name.ident.to_string()))
            .collect();
        let body = &nest.last().expect("not empty").body;
        let mut j = Jumps {
            labels: &labels,
            depth: 0,
            escapes: false,
        };
        syn::visit::Visit::visit_block(&mut j, body);
        if !j.escapes {
            break;
        }
        nest.pop();
        dims.pop();
    }
    nest
}

/// Finds `break` or `continue` in the innermost body of a nest that a flattened iteration
/// could not express: any `break` of the innermost loop, any jump to an outer loop of the
/// nest. (`continue` of the innermost loop ends the iteration.)
struct Jumps<'a> {
    /// Labels of the nest's loops, outermost first.
    labels: &'a [Option<String>],
    /// Loops nested inside the body.
    depth: usize,
    escapes: bool,
}

impl<'ast> syn::visit::Visit<'ast> for Jumps<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        let (label, is_break) = match e {
            Expr::Break(b) => (Some(&b.label), true),
            Expr::Continue(c) => (Some(&c.label), false),
            _ => (None, false),
        };
        if let Some(label) = label {
            let innermost = self.labels.len() - 1;
            let target = match label {
                Some(l) => self
                    .labels
                    .iter()
                    .position(|x| x.as_deref() == Some(&l.ident.to_string())),
                None => (self.depth == 0).then_some(innermost),
            };
            match target {
                Some(t) if t < innermost || is_break => self.escapes = true,
                _ => {}
            }
        }
        match e {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.depth += 1;
                syn::visit::visit_expr(self, e);
                self.depth -= 1;
            }
            Expr::Closure(_) => {}
            _ => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// Whether a bound of an inner loop can be computed once before the loop: it reads no
/// index of the nest, no variable the function may change, and of arrays only their shape.
fn pure_bound(e: &Expr, arrays: &[ArrayVar], outer: &[OuterVar], bound: &[String]) -> bool {
    let pure = |e: &Expr| pure_bound(e, arrays, outer, bound);
    match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => match p.path.get_ident() {
            Some(i) => {
                let name = i.to_string();
                // Not an index, not an array's elements, not a variable that may change
                // (an unknown name is a constant or a static).
                !bound.contains(&name)
                    && !arrays.iter().any(|a| a.ident == name)
                    && !outer.iter().any(|o| o.ident == name && o.mutable)
            }
            // `usize::MAX`, a constant's path.
            None => p.qself.is_none(),
        },
        Expr::Paren(p) => pure(&p.expr),
        Expr::Group(g) => pure(&g.expr),
        Expr::Cast(c) => pure(&c.expr),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && pure(&u.expr),
        Expr::Binary(b) => {
            use syn::BinOp::*;
            matches!(
                b.op,
                Add(_)
                    | Sub(_)
                    | Mul(_)
                    | Div(_)
                    | Rem(_)
                    | Shl(_)
                    | Shr(_)
                    | BitAnd(_)
                    | BitOr(_)
                    | BitXor(_)
            ) && pure(&b.left)
                && pure(&b.right)
        }
        Expr::Field(f) => pure(&f.base),
        // `a.len()`, `a.shape()[0]` of an array: its shape, which the loop cannot change.
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "len" | "shape") => {
            m.args.is_empty()
                && match &*m.receiver {
                    Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                        let name = i.to_string();
                        !bound.contains(&name)
                            && (arrays.iter().any(|a| a.ident == name)
                                || outer.iter().any(|o| o.ident == name && !o.mutable))
                    }),
                    r => pure(r),
                }
        }
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "min" | "max" | "saturating_sub" | "saturating_add"
            ) =>
        {
            pure(&m.receiver) && m.args.iter().all(pure)
        }
        Expr::Index(ix) => {
            matches!(&*ix.expr, Expr::MethodCall(m) if m.method == "shape")
                && pure(&ix.expr)
                && pure(&ix.index)
        }
        _ => false,
    }
}

/// `a..b`, `a..=b`, `(a..b).step_by(s)`.
fn range_dim(e: &Expr) -> Option<RangeDim> {
    match strip_ref(e) {
        Expr::Range(ExprRange {
            start: Some(start),
            end: Some(end),
            limits,
            ..
        }) => Some(RangeDim {
            start: start.clone(),
            end: end.clone(),
            inclusive: matches!(limits, RangeLimits::Closed(_)),
            step: None,
        }),
        Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 => {
            let mut d = range_dim(&m.receiver).filter(|d| d.step.is_none())?;
            d.step = Some(Box::new(m.args[0].clone()));
            Some(d)
        }
        _ => None,
    }
}

fn check_signature(cx: &Ctxt, item: &ItemFn) {
    let sig = &item.sig;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "generic `#[parallel_for]` functions are not supported yet; write the loop for \
             concrete element types",
        );
    }
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(a, "`#[parallel_for]` functions cannot be `async`");
    }
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, "`#[parallel_for]` functions cannot be `const`");
    }
}

fn strip_ref(e: &Expr) -> &Expr {
    match e {
        Expr::Reference(r) if r.mutability.is_none() => strip_ref(&r.expr),
        Expr::Paren(p) => strip_ref(&p.expr),
        e => e,
    }
}

/// Whether the loop iterates `a.iter_mut()`.
fn is_iter_mut(expr: &Expr) -> bool {
    matches!(strip_ref(expr), Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty())
}

fn space_of(cx: &Ctxt, expr: &Expr, arrays: &[ArrayVar]) -> Option<SpaceSrc> {
    let e = strip_ref(expr);
    let e = match e {
        // `a.iter()` is the same as `a`; `a.iter_mut()` too, with mutable values.
        Expr::MethodCall(m)
            if (m.method == "iter" || m.method == "iter_mut") && m.args.is_empty() =>
        {
            strip_ref(&m.receiver)
        }
        e => e,
    };
    match e {
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let name = p.path.get_ident().map(|i| i.to_string());
            match arrays
                .iter()
                .position(|a| Some(a.ident.to_string()) == name)
            {
                Some(a) => Some(SpaceSrc::Array(a)),
                None => {
                    cx.error_spanned_by(
                        expr,
                        "strads cannot see what this iterates over; iterate a `&SparseArray` or \
                         `&DistArray` parameter, or a range `a..b`",
                    );
                    None
                }
            }
        }
        Expr::Range(ExprRange {
            start: Some(_),
            end: Some(_),
            ..
        }) => Some(SpaceSrc::Range {
            dims: vec![range_dim(e).expect("a range with both bounds")],
        }),
        Expr::MethodCall(m) if m.method == "step_by" => match range_dim(e) {
            Some(d) => Some(SpaceSrc::Range { dims: vec![d] }),
            None => {
                cx.error_spanned_by(
                    expr,
                    "`step_by` iterates a range with both bounds: `(a..b).step_by(s)`",
                );
                None
            }
        },
        Expr::Range(r) => {
            cx.error_spanned_by(r, "the range needs both bounds: `a..b` or `a..=b`");
            None
        }
        other => {
            cx.error_spanned_by(
                other,
                "unsupported iteration expression; a `#[parallel_for]` loop iterates a \
                 `&SparseArray` or `&DistArray` parameter (`for (key, value) in ratings`), or \
                 a range (`for i in 0..n`)",
            );
            None
        }
    }
}

fn key_of_array(cx: &Ctxt, pat: &Pat, rank: usize) -> Option<(KeyPat, usize)> {
    let Pat::Tuple(t) = pat else {
        cx.error_spanned_by(
            pat,
            format!(
                "iterating an array yields `(index, &value)`; write the pattern as \
                 `([{}], value)`",
                dim_idents(rank)
            ),
        );
        return None;
    };
    if t.elems.len() != 2 {
        cx.error_spanned_by(
            t,
            "iterating an array yields `(index, &value)`: a pair, not this tuple",
        );
        return None;
    }
    let key = match &t.elems[0] {
        Pat::Slice(s) => {
            if s.elems.len() != rank {
                cx.error_spanned_by(
                    s,
                    format!(
                        "the array has {rank} dims, so its index has {rank} elements: `[{}]`",
                        dim_idents(rank)
                    ),
                );
                return None;
            }
            let mut dims = Vec::new();
            for e in &s.elems {
                match e {
                    Pat::Ident(pi) if pi.subpat.is_none() => dims.push(Some(pi.ident.clone())),
                    Pat::Wild(_) => dims.push(None),
                    other => {
                        cx.error_spanned_by(other, "bind each index with a plain name or `_`");
                        return None;
                    }
                }
            }
            KeyPat::Elems(dims)
        }
        Pat::Ident(pi) if pi.subpat.is_none() => KeyPat::Whole(pi.ident.clone()),
        Pat::Wild(_) => KeyPat::Ignored,
        other => {
            cx.error_spanned_by(
                other,
                format!("bind the index as `[{}]` or as one name", dim_idents(rank)),
            );
            return None;
        }
    };
    Some((key, rank))
}

fn key_of_range(cx: &Ctxt, pat: &Pat) -> Option<Option<syn::Ident>> {
    match pat {
        Pat::Ident(pi) if pi.subpat.is_none() => Some(Some(pi.ident.clone())),
        Pat::Wild(_) => Some(None),
        other => {
            cx.error_spanned_by(
                other,
                "bind the range's index with a plain name: `for i in a..b`",
            );
            None
        }
    }
}

fn dim_idents(rank: usize) -> String {
    const NAMES: [&str; 6] = ["i", "j", "k", "l", "m", "n"];
    (0..rank)
        .map(|d| NAMES.get(d).copied().unwrap_or("_"))
        .collect::<Vec<_>>()
        .join(", ")
}
