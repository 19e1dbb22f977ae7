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
//! A loop may also take the arrays a program already holds: `&[T]`, `&mut [T]`, `&Vec<T>`
//! and `&mut Vec<T>` are 1-D arrays, and with the feature `ndarray`, ndarray's `&Array`,
//! `&mut Array` and views are N-D arrays indexed `m[[i, j]]` (bounds from `len()`,
//! `nrows()`, `ncols()` or `shape()`). They get the same analysis, plans and bits as a
//! `DistArray`: a wrapper with the signature as written lends each to the loop for the
//! call (a `Vec`'s buffer and a standard-layout `Array`'s move in and out; slices and views
//! are copied, and the mutable ones copied back).
//!
//! ```
//! #[strads::parallel_for]
//! fn saxpy(a: f32, x: &[f32], y: &mut Vec<f32>) {
//!     for i in 0..y.len() {
//!         y[i] += a * x[i];
//!     }
//! }
//!
//! let x = vec![1.0; 1000];
//! let mut y = vec![2.0; 1000];
//! saxpy(0.5, &x, &mut y);
//! assert_eq!(y[999], 2.5);
//! ```
//!
//! # Features
//! - `cluster` (default): cluster jobs (`STRADS_PROCESSES`, `strads run`, Slurm, MPI) over
//!   QUIC. `default-features = false` gives a threads-only strads with none of quinn,
//!   tokio, rustls, ring or rcgen in its tree; a cluster setting then says how to enable it.
//! - `ndarray`: ndarray's arrays and views as loop arrays.
//! - `serial`: every loop runs as its original serial loop.
//!
//! What the analysis accepts, the options of the attribute and the environment variables
//! (`STRADS_THREADS`, `STRADS_SERIAL`, `STRADS_EXPLAIN`) are described on [`parallel_for`].

/// Runs the annotated function's `for` loop in parallel.
///
/// The function's body holds one top-level `for` loop over a `&SparseArray`, a `&DistArray`
/// or a range `a..b`. Statements before the loop run once; statements after it run once the
/// loop is done. The macro generates, next to the function (inside it, for a function that
/// takes a `Vec`, a slice or an ndarray array as a loop array: see the crate docs):
///
/// - a struct `<FnName>Loop` holding the outer variables the loop reads (serializable, so
///   it can be sent to other processes), whose doc comment is the analysis report;
/// - `<FnName>Loop::SPEC`, the loop as the analysis sees it;
/// - `<FnName>Loop::body`, one iteration, generic over how arrays are reached;
/// - when the loop has reductions, a struct `<FnName>Reductions` with one accumulator per
///   reduction variable.
///
/// ## What the analysis understands
/// Element accesses `a[[e0, e1]]`, `a[e]` (1-D), `a.row(e)`, `a.row_mut(e)`, `a.get([..])`,
/// `a.get_mut([..])` where each subscript is affine in the loop's indices (`i`, `i + 3`,
/// `2 * j - 1`, through `let` copies, tuple and array locals (`let p = (i, j + 1);
/// a[[p.0, p.1]]`) and `as` casts), a constant, or the variable of an inner
/// `for k in a..b` loop (which covers the whole dim). From them it computes dependence
/// vectors and picks Orion's strategies in order: 1D (a dim no dependence crosses), then 2D
/// (two dims such that every dependence stays within one of them, run with the unordered
/// rotation schedule).
///
/// ## Reductions
/// Outer variables are read-only inside the loop, except a **reduction**: a parameter or a
/// typed `let mut` before the loop, of type `f32`, `f64` or a primitive integer, that the
/// body updates only with one of `x += e`, `x *= e`, `x = x.max(e)` or `x = x.min(e)`
/// (also `e.max(x)`, `T::max(x, e)`). Each block of iterations accumulates into its own copy,
/// starting from the operator's identity (`0`, `1`, the lowest or the highest value); after
/// the loop the parts are combined in the order of the blocks in the schedule and applied
/// to the variable. The result is therefore bit-identical between runs with the same
/// thread count, and equal to the serial replay of the recorded order. Integer reductions
/// and `max`/`min` equal the serial loop's result (a float `max`/`min` up to the sign of a
/// zero); floating-point `+=`/`*=` equal it within rounding and may differ in the last bits,
/// as any reordering of a float sum does (also in `ordered` loops, whose arrays equal the
/// serial loop's bit for bit).
///
/// ```
/// use strads::prelude::*;
///
/// #[strads::parallel_for]
/// fn squared_error(data: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
///     let mut sse: f64 = 0.0;
///     for ([u, i], &r) in data {
///         let e = (r - dot(w.row(u), h.row(i))) as f64;
///         sse += e * e;
///     }
///     sse
/// }
///
/// let data = SparseArray::from_entries([2, 2], vec![([0, 1], 1.0), ([1, 0], 2.0)]).unwrap();
/// let (w, h) = (DistArray::zeros([2, 4]), DistArray::zeros([2, 4]));
/// assert_eq!(squared_error(&data, &w, &h), 5.0);
/// ```
///
/// A reduction variable cannot be read inside the loop (each worker holds only a partial
/// value there): read it after the loop, where the trailing expression may return it.
///
/// ## Errors
/// Anything it cannot handle is a compile error at the offending token with what to do
/// instead: any other write to an outer variable (`x = e`, `x -= e`, a field or index of
/// it, `&mut x`, two operators on one reduction), a read of a reduction variable in the
/// loop, `break`/`return`/`?` out of the loop, an array used other than by element, an
/// indirect subscript, a nested `#[parallel_for]`, a captured value whose type is not
/// `Serialize` + `Deserialize` (one error, at its type), a loop with no parallel strategy.
///
/// ## Subscripts read from data: reconnaissance
/// A subscript computed from data (`w[features[k] as usize]`) cannot be analysed at compile
/// time. Unless a static strategy still applies (an indirect subscript on an axis no
/// partition needs), the loop is planned at run time: on the first call the body runs over
/// every iteration in a survey pass (arrays the loop writes read as `T::default()` and
/// swallow writes, arrays it only reads give their real values, nothing changes), the
/// recorded read and write sets group conflicting iterations into task groups (batches of
/// connected components, largest first on the least-loaded worker; each worker runs its
/// iterations in serial order), and the plan is reused
/// while the arrays the loop reads are unchanged. Accesses are tracked per row (first
/// index) of each array the loop writes: two iterations that touch one row, one of them
/// writing it, conflict (in one dim, a row is an element). A component too large for one worker's
/// share is split (STRADS-AP's large task groups, without locks): one chunk per worker, cut
/// into rounds, each round waiting only for the earlier rounds it shares elements with, so
/// the run still equals one serial order; the split is kept when a simulation of those
/// waits predicts at least a 4/3 speed-up for the component (a chain of updates splits
/// well; a few elements in every iteration, as in text features, do not). Every access of
/// the real run is checked against what was recorded: control flow that depends on the
/// values of arrays the loop writes is reported as a panic, never as a data race.
///
/// ## Options
/// - `ordered`: keep every dependence's direction (1D, ordered 2D, unimodular wavefront or
///   reconnaissance): arrays equal the serial loop's bit for bit; see Reductions for what
///   is exact there.
/// - `buffer(h, ..)`: `h` (a `&mut DistArray` parameter) is a write-back buffer: exempt from
///   the analysis, read freely, updated only by `h[..] += e` / `-= e`; each worker updates
///   its own copy. The buffer is *applied* at the end of every step of the schedule (a
///   worker's partition: the whole call in 1D, each of the P rotation steps in 2D, each
///   batch of reconnaissance, each wavefront step) and at the end of the loop: worker 0's
///   copy plus the other workers' differences since the last application, in worker
///   order, becomes `h`, and every copy continues from it. A worker sees its own updates at
///   once and the others' after the next application. One worker applies only at the end
///   (and every `max_delay`): the serial loop's result.
/// - `buffer(h, max_delay = n)`: also apply the buffers after every `n` iterations of each
///   worker (all workers wait for each other there; one `max_delay` per loop, for all its
///   buffers). With one worker: every `n` iterations of the loop, as the serial loop with
///   `apply` does below.
/// - `buffer(g, apply = f(w, s))`: the loop accumulates updates in `g`; at each application,
///   for every element `e` whose merged update `u` is not zero, strads calls
///   `f(u, &mut w[e], &mut s[e])` (one thread, every worker waiting) and every copy of `g`
///   starts again from `g`, which stays as it was (Orion's apply function, e.g. AdaGrad
///   with its history in `s`). Serial mode runs the original loop, making the same calls
///   with the loop's difference every `max_delay` iterations and at the end.
/// - `expect = "1d" | "2d" | "unimodular" | "reconnaissance" | "static"`: fail to compile,
///   with the reason, unless the analysis proves that strategy (`"static"`: any strategy
///   proved at compile time).
/// - `repeated`: accepted; plans are always cached per iteration space.
///
/// ## Environment
/// Read and checked once by [`config`] (booleans: `1|true|yes|on` or `0|false|no|off`, in
/// any case; unset or empty: the default). Call [`config::check`] first in `main` to get a
/// bad value as an error; otherwise the first loop that needs it prints it and exits
/// with status 2.
/// - `STRADS_THREADS=n`: workers, 1 to 1024 (default: the available cores).
/// - `STRADS_SERIAL=1` (or the `serial` cargo feature): run the original loop.
/// - `STRADS_EXPLAIN=1`: print, once per loop, a line
///   `strads plan <fn>: <1d|2d|unimodular|reconnaissance|serial> <details>`.
/// - `STRADS_PARTITION=balanced|uniform`: partition sparse spaces by histogram (equal
///   iteration counts, the default; also spelled `histogram`) or by equal id ranges.
/// - `STRADS_SPLIT=0`: reconnaissance runs every conflict component whole on one worker
///   instead of splitting those too large for one; for comparisons.
/// - `STRADS_AFFINITY=0`: leave the worker threads' CPU affinity alone.
pub use strads_macros::parallel_for;

/// Marks `fn main` of a program that may run as a cluster job (`STRADS_PROCESSES=N`,
/// `strads run -n N`, Slurm, `mpirun`): worker ranks go straight to serving the driver's
/// loop calls instead of running the program, and the driver starts its workers before
/// the program's first line. A program run as one process runs `main` as written.
///
/// Without it a worker rank runs `main` up to its first call into strads and serves from
/// there (with its standard output discarded), which is the same unless `main` does
/// something costly or visible before its first parallel loop.
///
/// ```no_run
/// #[strads::main]
/// fn main() {
///     // ... the program, exactly as on one machine
/// }
/// ```
pub use strads_macros::main;

/// The cluster runtime (see docs/design.md, "Across processes"): [`cluster::start`] joins the job; the
/// protocol core and its simulated network are public for tests and scaling studies.
pub use strads_runtime::cluster;

pub use strads_runtime::{
    ArrayMut, ArrayRef, Buffered, DistArray, Error, IterRng, Result, SparseArray, axpy,
    current_threads, dot, dots, merge, testing, with_threads,
};

/// Whether `#[parallel_for]` loops run their original serial loop (`STRADS_SERIAL=1`, the
/// `serial` feature, or inside [`testing::serial`]).
pub fn serial_mode() -> bool {
    __private::serial_requested()
}

/// The `STRADS_*` settings: [`config::check`] reports a bad one as an error.
pub mod config {
    pub use strads_runtime::config::*;
}

/// Data loaders with errors that name the file and line.
pub mod load {
    pub use strads_runtime::load::*;
}

/// Text corpora for topic models: the LDA-C format and generated corpora.
pub mod corpus {
    pub use strads_runtime::corpus::*;
}

/// Permuting ids so that the popular rows of skewed data spread over partitions.
pub mod permute {
    pub use strads_runtime::permute::*;
}

/// Synthetic data sets of the same shape as the real ones.
pub mod generate {
    pub use strads_runtime::generate::*;
}

/// Saving named arrays and values in one file and loading them back (a trained model):
/// `DistArray` and `SparseArray` serialize with serde.
///
/// ```
/// use strads::checkpoint::Checkpoint;
/// use strads::DistArray;
/// # let path = std::env::temp_dir().join(format!("strads-facade-ckpt-{}", std::process::id()));
/// let w = DistArray::<f32, 2>::random([4, 3], 1);
/// Checkpoint::new().add("w", &w)?.save(&path)?;
/// let w2: DistArray<f32, 2> = Checkpoint::load(&path)?.get("w")?;
/// assert_eq!(w, w2);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod checkpoint {
    pub use strads_runtime::checkpoint::*;
}

/// The names a training program needs: `use strads::prelude::*;`.
pub mod prelude {
    pub use strads_runtime::{
        ArrayMut, ArrayRef, DistArray, IterRng, SparseArray, axpy, dot, dots,
    };
}

/// What generated code names. Not public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use ::serde;
    pub use std::borrow::Cow;
    pub use strads_analysis::{
        Access, AccessKind, ArraySpec, BufferSpec, LoopSpec, ReduceOp, ReductionSpec, SpaceKind,
        Subscript,
    };
    pub use strads_runtime::bridge;
    pub use strads_runtime::cluster::call::PartsWire;
    pub use strads_runtime::cluster::registry::{
        LOOPS, Probe, ProbeNone, ProbeSerde, RemoteLoop, Serve,
    };
    pub use strads_runtime::cluster::wire::{Iterated, WireArray};
    pub use strads_runtime::linkme;
    pub use strads_runtime::resume;
    pub use strads_runtime::{
        ArrayMut, ArrayRef, Block, Buffered, Call, Capture, CaptureByCopy, CaptureByRef, DistArray,
        GridSpace, LoopState, Named, Parked, Parts, ProbeValuesNone, ProbeValuesSerde, Ran,
        RangeDim, RangeSpace, Reduce, SerialRun, SharedMut, SparseArray, Terms, ValuesProbe,
        capture_key,
    };

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    /// A value a loop captures by value: it travels with the loop's struct, so it must be
    /// serializable. Checked at the capture's type by [`captured`], so that a type that is
    /// not gives one error there, instead of several from inside serde's derives.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is captured by a `#[parallel_for]` loop, so it must be serializable",
        label = "captured by the loop: `{Self}` must implement `Serialize` and `Deserialize`",
        note = "the loop's struct holds its captured values and may be sent to other workers",
        note = "derive them (`#[derive(serde::Serialize, serde::Deserialize)]`), or compute \
                the value inside the loop instead of capturing it",
        note = "an ndarray array serializes with ndarray's `serde` feature; one the loop only \
                indexes is an array of the loop instead (strads' `ndarray` feature)"
    )]
    pub trait Captured {}

    // `do_not_recommend`: report `T: Captured` (with the message above), not the serde
    // bound that failed inside it.
    #[diagnostic::do_not_recommend]
    impl<T: Serialize + DeserializeOwned> Captured for T {}

    /// A value a loop captures by reference: the loop's struct holds it as a `Cow`, so it
    /// must be serializable and its owned form deserializable.
    #[diagnostic::on_unimplemented(
        message = "`&{Self}` is captured by a `#[parallel_for]` loop, so `{Self}` must be \
                   serializable",
        label = "captured by the loop: `{Self}` must implement `Serialize`, and its owned form \
                 `Deserialize`",
        note = "the loop's struct holds its captured values (a reference as a `Cow`) and may be \
                sent to other workers",
        note = "derive them (`#[derive(Clone, serde::Serialize, serde::Deserialize)]`), or \
                compute the value inside the loop instead of capturing it",
        note = "an ndarray array serializes with ndarray's `serde` feature; one the loop only \
                indexes is an array of the loop instead (strads' `ndarray` feature)"
    )]
    pub trait CapturedRef {}

    #[diagnostic::do_not_recommend]
    impl<T: ?Sized + ToOwned + Serialize> CapturedRef for T where T::Owned: DeserializeOwned {}

    /// Compiles only when `T` may be captured by value.
    pub const fn captured<T: Captured>() {}

    /// Compiles only when `&T` may be captured.
    pub const fn captured_ref<T: ?Sized + CapturedRef>() {}

    /// Whether the original serial loop should run.
    #[inline]
    pub fn serial_requested() -> bool {
        cfg!(feature = "serial") || strads_runtime::serial_env()
    }

    /// Whether loop `state` runs its original serial loop this call; says so once under
    /// `STRADS_EXPLAIN=1`.
    #[inline]
    pub fn serial_run(state: &'static LoopState) -> bool {
        let serial = serial_requested();
        if serial {
            state.explain_serial();
        }
        serial
    }
}
