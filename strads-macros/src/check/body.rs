//! The rules on what the body does: each judges one kind of the walker's `Fact`s (a jump
//! out of the loop, a write to an outer variable, a buffer used other than by `+=`/`-=`, an
//! index of the wrong shape, an array used other than by element) and reports each at its
//! own token.

use crate::ctxt::Ctxt;
use crate::front::LoopFn;
use crate::walk::{Fact, ReduceOp};

/// Iterations run on several workers at once: none can end the loop for the others.
pub(super) fn check_no_break(cx: &Ctxt, fact: &Fact) {
    if let Fact::Break(at) = fact {
        cx.error_spanned_by(
            at,
            "`break` would leave the parallel loop early, but its iterations are spread \
             over workers that run at the same time; filter the iterations instead \
             (`if !wanted { continue; }`), or run this loop serially",
        );
    }
}

/// Nor can one iteration return from the function while others still run.
pub(super) fn check_no_return(cx: &Ctxt, fact: &Fact) {
    if let Fact::Return(at) = fact {
        cx.error_spanned_by(
            at,
            "`return` would leave the parallel loop from one iteration while others run \
             on other workers; use `continue` to end this iteration, and compute the \
             function's result after the loop",
        );
    }
}

/// `?` is a `return` too.
pub(super) fn check_no_try(cx: &Ctxt, fact: &Fact) {
    if let Fact::Try(span) = fact {
        cx.syn_error(syn::Error::new(
            *span,
            "`?` would return from the function in the middle of the parallel loop; handle \
             the error inside the iteration (`match`, `unwrap_or`), or validate the data \
             before the loop",
        ));
    }
}

/// Workers run the body synchronously; nothing would poll a future.
pub(super) fn check_no_async(cx: &Ctxt, fact: &Fact) {
    if let Fact::Async(at) = fact {
        cx.error_spanned_by(
            at,
            "`async` blocks cannot run inside a `#[parallel_for]` loop body",
        );
    }
}

/// The body already runs in parallel, one iteration on one worker.
pub(super) fn check_not_nested(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    if let Fact::Nested(attr) = fact {
        cx.error_spanned_by(
            attr,
            format!(
                "`#[parallel_for]` cannot be nested: this code is inside the parallel \
                 loop of `{}`, where each iteration runs on one worker; remove this \
                 attribute (the inner loop then runs serially within each iteration), \
                 or move the inner loop into its own `#[parallel_for]` function and \
                 call it outside this loop",
                f.item.sig.ident
            ),
        );
    }
}

/// Every worker has its own copy of an outer variable: a write would be lost, unless it is
/// a reduction update strads combines after the loop.
pub(super) fn check_outer_writes(cx: &Ctxt, fact: &Fact) {
    match fact {
        Fact::OuterWrite { name, place } => cx.error_spanned_by(
            place,
            format!(
                "the loop writes `{name}`, a variable from outside the loop; iterations run \
                 on several workers, so outer variables are read-only inside a \
                 `#[parallel_for]` loop: keep per-iteration values in a local, or store \
                 results in a `DistArray` indexed by the iteration"
            ),
        ),
        Fact::OuterAssign { name, at, like } => {
            let msg = match like {
                Some((op, left)) => {
                    let written = if *left {
                        format!("{name} = {name} {op} ..")
                    } else {
                        format!("{name} = .. {op} {name}")
                    };
                    format!(
                        "`{written}` is not recognised as a reduction; write `{name} {op}= ..`, \
                         so that each worker accumulates its own part and strads combines the \
                         parts after the loop"
                    )
                }
                None => format!(
                    "the loop assigns `{name}`, a variable from outside the loop; iterations \
                     run on several workers, so inside a `#[parallel_for]` loop an outer \
                     variable is either read-only or a reduction updated only by `{name} += \
                     e`, `{name} *= e`, `{name} = {name}.max(e)` or `{name} = {name}.min(e)`: \
                     keep per-iteration values in a local, or store results in a `DistArray` \
                     indexed by the iteration"
                ),
            };
            cx.error_spanned_by(at, msg);
        }
        Fact::OuterCompound { name, op, at } if op == "-=" => cx.error_spanned_by(
            at,
            format!(
                "`{name} -= ..` on a variable from outside the loop cannot be split \
                 across workers: strads combines per-worker parts of `+=`, `*=`, \
                 `max` and `min` only; write `{name} += -(..)` to accumulate a \
                 difference"
            ),
        ),
        Fact::OuterCompound { name, op, at } => cx.error_spanned_by(
            at,
            format!(
                "`{name} {op} ..` on a variable from outside the loop cannot be split \
                 across workers: strads combines per-worker parts of `+=`, `*=`, \
                 `max` and `min` only; keep per-iteration values in a local, or \
                 store results in a `DistArray` indexed by the iteration"
            ),
        ),
        _ => {}
    }
}

/// The macro rewrites a reduction update into an update of the worker's accumulator, which
/// it cannot do inside another macro's tokens.
pub(super) fn check_update_outside_macros(cx: &Ctxt, fact: &Fact) {
    if let Fact::UpdateInMacro { name, op, at } = fact {
        cx.error_spanned_by(
            at,
            format!(
                "strads cannot rewrite the reduction update of `{name}` inside a macro; \
                 move it out of the macro, as its own statement `{}`",
                match op {
                    ReduceOp::Add | ReduceOp::Mul => format!("{name} {} ..;", op.as_str()),
                    ReduceOp::Max | ReduceOp::Min => {
                        format!("{name} = {name}.{}(..);", op.as_str())
                    }
                }
            ),
        );
    }
}

/// Each worker updates its own copy of a write-back buffer, and the copies' differences are
/// added up: only `+=` and `-=` merge that way.
pub(super) fn check_buffer_updates(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::BufferWrite { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "`{name}` is a write-back buffer of this loop (`buffer({name})`): update \
                     it only with `{name}[..] += e` or `{name}[..] -= e`, since each worker \
                     updates its own copy and the copies' differences are added to `{name}` \
                     after the loop"
                ),
            );
        }
        Fact::BufferRow { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "this is a row of `{name}`, a write-back buffer of this loop \
                     (`buffer({name})`): update it only with `row[k] += e` or `row[k] -= e` and \
                     read it by index, since each worker updates its own copy and the copies' \
                     differences are added to `{name}` at fixed points"
                ),
            );
        }
        _ => {}
    }
}

/// The analysis needs one subscript per dim of every access.
pub(super) fn check_index_shape(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::IndexShape { array, at, got } => {
            let (name, rank) = (&f.arrays[*array].ident, f.arrays[*array].rank);
            let msg = match got {
                None => format!(
                    "`{name}` has {rank} dims; index it with one subscript per dim: \
                     `{name}[[i, j{}]]`",
                    ", ..".repeat(rank.saturating_sub(2).min(1))
                ),
                Some(got) => format!("`{name}` has {rank} dims but this index has {got}"),
            };
            cx.error_spanned_by(at, msg);
        }
        Fact::MethodArity { array, method, at } => {
            let name = &f.arrays[*array].ident;
            let arg = if method.starts_with("row") {
                "i"
            } else {
                "[..]"
            };
            cx.error_spanned_by(at, format!("`{name}.{method}({arg})` takes one index"));
        }
        _ => {}
    }
}

/// The analysis sees an array only through its accesses: every use must be an element or a
/// row it can follow.
pub(super) fn check_arrays_by_element(cx: &Ctxt, f: &LoopFn, fact: &Fact) {
    match fact {
        Fact::ArrayInMacro { array, span } => {
            let name = &f.arrays[*array].ident;
            cx.syn_error(syn::Error::new(
                *span,
                format!(
                    "array `{name}` is used inside a macro strads cannot read; read the element \
                     into a local first (`let x = {name}[[..]];`) and use the local"
                ),
            ));
        }
        Fact::OpaqueMethod { array, method } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                method,
                format!(
                    "strads cannot analyse `{name}.{method}(..)` inside a parallel loop; \
                     reach elements through `{name}[[..]]`, `{name}.row(i)`, \
                     `{name}.row_mut(i)`, `{name}.get([..])` or `{name}.get_mut([..])`"
                ),
            );
        }
        Fact::ArrayWhole { array, at } => {
            let name = &f.arrays[*array].ident;
            cx.error_spanned_by(
                at,
                format!(
                    "strads cannot follow array `{name}` here; inside a parallel loop reach its \
                     elements directly: `{name}[[..]]`, `{name}.row(i)`, `{name}.row_mut(i)`, \
                     `{name}.get([..])`"
                ),
            );
        }
        _ => {}
    }
}
