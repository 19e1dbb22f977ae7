//! What a user writes to type a name the macro could not type (`Fix`), for the pattern's
//! shape: the pattern's type with `Type` at the name, a `let` of its own after the
//! pattern's, or an array's own `let`. A fix keeps the pattern as written and the types of
//! its known parts; a shape no type can be written around (a struct, `..`, a binding by a
//! default binding mode) gets a `let` of its own instead.

use syn::{Ident, Local, Pat};

use super::Found;
use super::parts::is_rest;
use super::show::show;
use crate::syntax::collect_idents;

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

/// The fix for a name `f` of `pat` without a type.
pub(super) fn fix(local: &Local, pat: &Pat, single: bool, f: &Found, all: &[Found]) -> Fix {
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
