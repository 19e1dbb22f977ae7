//! # strads: write the serial training loop, get the parallel one
//!
//! Annotate a function whose body holds one `for` loop with [`parallel_for`]. The macro
//! reads the loop's array subscripts, proves which iterations may run side by side, and
//! rewrites the function to run the loop on every core; the result equals a serial run of
//! the same iterations in some order, and the same order every time for a given thread
//! count.
//!
//! ```
//! use strads::prelude::*;
//!
//! #[strads::parallel_for]
//! fn sgd_epoch(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>, lr: f32) {
//!     for ([u, i], &r) in ratings {
//!         let (wu, hi) = (w.row_mut(u), h.row_mut(i));
//!         let err = r - dot(wu, hi);
//!         for k in 0..wu.len() {
//!             let wk = wu[k];
//!             wu[k] += lr * (err * hi[k] - 0.05 * wk);
//!             hi[k] += lr * (err * wk - 0.05 * hi[k]);
//!         }
//!     }
//! }
//!
//! let ratings = SparseArray::from_entries([3, 2], vec![([0, 1], 4.0), ([2, 0], 1.0)]).unwrap();
//! let (mut w, mut h) = (DistArray::random([3, 8], 1), DistArray::random([2, 8], 2));
//! for _ in 0..3 {
//!     sgd_epoch(&ratings, &mut w, &mut h, 0.01);
//! }
//! ```
//!
//! What the analysis accepts, the options of the attribute and the environment variables
//! (`STRADS_THREADS`, `STRADS_SERIAL`, `STRADS_EXPLAIN`) are described on [`parallel_for`].

/// Runs the annotated function's `for` loop in parallel.
///
/// The function's body holds one top-level `for` loop over a `&SparseArray`, a `&DistArray`
/// or a range `a..b`. Statements before the loop run once; statements after it run once the
/// loop is done. The macro generates, next to the function:
///
/// - a struct `<FnName>Loop` holding the outer variables the loop reads (serializable, so
///   it can be sent to other processes), whose doc comment is the analysis report;
/// - `<FnName>Loop::SPEC`, the loop as the analysis sees it;
/// - `<FnName>Loop::body`, one iteration, generic over how arrays are reached.
///
/// ## What the analysis understands
/// Element accesses `a[[e0, e1]]`, `a[e]` (1-D), `a.row(e)`, `a.row_mut(e)`, `a.get([..])`,
/// `a.get_mut([..])` where each subscript is affine in the loop's indices (`i`, `i + 3`,
/// `2 * j - 1`, through `let` copies and `as` casts), a constant, or the variable of an inner
/// `for k in a..b` loop (which covers the whole dim). From them it computes dependence
/// vectors and picks Orion's strategies in order: 1D (a dim no dependence crosses), then 2D
/// (two dims such that every dependence stays within one of them, run with the unordered
/// rotation schedule).
///
/// Anything it cannot handle is a compile error at the offending token with what to do
/// instead: a write to an outer variable, `break`/`return`/`?` out of the loop, an array used
/// other than by element, an indirect subscript, a loop with no parallel strategy.
///
/// ## Options
/// - `expect = "1d" | "2d" | "static"`: fail to compile unless the analysis proves it.
/// - `repeated`: accepted; plans are always cached per iteration space.
///
/// ## Environment
/// - `STRADS_THREADS=n`: workers (default: the available cores).
/// - `STRADS_SERIAL=1` (or the `serial` cargo feature): run the original loop.
/// - `STRADS_EXPLAIN=1`: print `strads plan <fn>: <strategy> <details>` once per loop.
pub use strads_macros::parallel_for;

pub use strads_runtime::{
    ArrayMut, ArrayRef, DistArray, Error, Result, SparseArray, axpy, current_threads, dot, testing,
    with_threads,
};

/// Whether `#[parallel_for]` loops run their original serial loop (`STRADS_SERIAL=1`, the
/// `serial` feature, or inside [`testing::serial`]).
pub fn serial_mode() -> bool {
    __private::serial_requested()
}

/// Data loaders with errors that name the file and line.
pub mod load {
    pub use strads_runtime::load::*;
}

/// Synthetic data sets of the same shape as the real ones.
pub mod generate {
    pub use strads_runtime::generate::*;
}

/// The names a training program needs: `use strads::prelude::*;`.
pub mod prelude {
    pub use strads_runtime::{ArrayMut, ArrayRef, DistArray, SparseArray, axpy, dot};
}

/// What generated code names. Not public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use ::serde;
    pub use std::borrow::Cow;
    pub use strads_analysis::{Access, AccessKind, ArraySpec, LoopSpec, Space, Subscript};
    pub use strads_runtime::{
        ArrayMut, ArrayRef, Block, Capture, CaptureByCopy, CaptureByRef, DistArray, LoopState,
        RangeSpace, SharedMut, SparseArray, replay_blocks, run,
    };

    /// Whether the original serial loop should run.
    #[inline]
    pub fn serial_requested() -> bool {
        cfg!(feature = "serial") || strads_runtime::serial_env()
    }
}
