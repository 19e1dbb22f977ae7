//! The rules on the variables the loop uses: reductions (one operator, never read in the
//! loop, `mut`, a type), captures (a type, no closure, no `&mut`) and arrays (a sparse array
//! only iterated, the iterated array never written); each error at the declaration, the
//! update or the use it is about.

use quote::quote;

use crate::arrays::ArrayKind;
use crate::ctxt::Ctxt;
use crate::front::{LoopFn, SpaceSrc};
use crate::patterns::Fix;
use crate::walk::Walked;

/// A reduction combines per-worker parts with one operator after the loop: so one
/// operator, no reads inside the loop (a worker holds only its part), a `mut` variable and
/// a declared type for the accumulators.
pub(super) fn check_reductions(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    for var in &f.outer {
        let name = var.ident.to_string();
        let Some(ups) = walked.updates.get(&name) else {
            continue;
        };
        let op = ups[0].0;
        for (other, at) in &ups[1..] {
            if *other != op {
                cx.error_spanned_by(
                    at,
                    format!(
                        "`{name}` is updated with `{}` elsewhere in the loop and with `{}` \
                         here; a reduction combines the workers' parts with one operator: \
                         use one operator for `{name}`, or accumulate the other into a \
                         second variable",
                        op.as_str(),
                        other.as_str()
                    ),
                );
            }
        }
        for (read, span) in &walked.reads {
            if *read == name {
                cx.syn_error(syn::Error::new(
                    *span,
                    format!(
                        "`{name}` is a reduction of this loop (updated with `{}`): inside the \
                         loop each worker holds only a partial {}, so it cannot be read \
                         here; read it after the loop, or keep what this iteration needs in \
                         a local",
                        op.as_str(),
                        op.partial()
                    ),
                ));
            }
        }
        if !var.mutable {
            cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a reduction of this loop (updated with `{}`), so it must be \
                     mutable: declare it `mut {name}`",
                    op.as_str()
                ),
            );
        }
        if var.ty.is_none() {
            let advice = var.fix.advice(
                &name,
                true,
                " (`f32`, `f64` or an integer type)",
                "`0u64`, `0.0f64`, `f64::MIN`",
            );
            cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a reduction of this loop (updated with `{}`); strads keeps a \
                     per-worker accumulator of its type, so it needs the type: {advice}",
                    op.as_str()
                ),
            );
        }
    }
}

/// A value the loop uses is stored in the loop's struct, which may be sent to other
/// workers: it needs a type, and may be neither a closure nor a `&mut`.
pub(super) fn check_captures(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    for name in &walked.captures {
        let Some(var) = f.outer_var(name) else {
            continue;
        };
        match &var.ty {
            None if var.closure => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a closure used inside the parallel loop; strads stores what the \
                     loop uses in the loop's struct, which may be sent to other workers, and a \
                     closure cannot be stored or sent: write it as a function item, `fn \
                     {name}(..) -> .. {{ .. }}`, in this function before the loop or outside \
                     it, passing what the closure captured as arguments"
                ),
            ),
            None if matches!(var.fix, Fix::Array { .. }) => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is a strads array bound by a pattern and used inside the \
                     parallel loop; {}",
                    var.fix.advice(name, false, "", "")
                ),
            ),
            None => cx.error_spanned_by(
                &var.ident,
                format!(
                    "`{name}` is used inside the parallel loop, so strads stores it in the \
                     loop's struct and needs its type: {}",
                    var.fix.advice(
                        name,
                        var.mutable,
                        "",
                        "`0u64`, `0.0f64`, `x as f32`, `f64::MIN`"
                    )
                ),
            ),
            Some(syn::Type::Reference(r)) if r.mutability.is_some() => cx.error_spanned_by(
                r,
                format!(
                    "`{name}` is a `&mut` reference used inside the parallel loop; loop \
                     iterations may only read outer variables: pass it as `&` (or make it a \
                     `DistArray` the loop writes by index)"
                ),
            ),
            Some(_) => {}
        }
    }
}

/// A sparse array is only iterated, never indexed; the iterated array is only read, since
/// its entries are handed to workers as the iteration space.
pub(super) fn check_arrays(cx: &Ctxt, f: &LoopFn, walked: &Walked) {
    let space = match f.space {
        SpaceSrc::Array(a) => Some(a),
        SpaceSrc::Range { .. } => None,
    };
    for &a in &walked.arrays_used {
        let arr = &f.arrays[a];
        if arr.kind == ArrayKind::Sparse {
            let name = &arr.ident;
            let why = if Some(a) == space {
                "its entries reach the body through the loop pattern"
            } else {
                "a sparse array can only be iterated"
            };
            let at = walked
                .first_use
                .get(&a)
                .map_or_else(|| quote!(#name), Clone::clone);
            cx.error_spanned_by(
                at,
                format!(
                    "the loop body names the sparse array `{name}`; {why}: read what the loop \
                     needs from it before the loop (`let n: usize = {name}.len();`)"
                ),
            );
        }
    }
    if let Some(a) = space {
        for acc in &walked.accesses {
            if acc.array == a && acc.kind == strads_analysis::AccessKind::Write {
                cx.syn_error(syn::Error::new_spanned(
                    &acc.tokens,
                    format!(
                        "the loop writes `{}`, the array it iterates over; write results to \
                         another array",
                        f.arrays[a].ident
                    ),
                ));
            }
        }
    }
}
