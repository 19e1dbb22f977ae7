//! The loop IR: what the macro extracts from a `#[parallel_for]` loop and what every later
//! stage reads.
//!
//! Every list is a `Cow<'static, [_]>` so the same types serve twice: the macro builds them
//! owned while it analyses a loop, and emits them as a `const` (borrowed) that the runtime
//! reads without allocating.
//!
//! The affine forms of subscripts, with their arithmetic and rendering, are in
//! `ir/affine.rs`.

use std::borrow::Cow;
use std::fmt;

mod affine;

pub use affine::Affine;

/// A list that is either a `'static` slice (in generated constants) or owned.
pub type List<T> = Cow<'static, [T]>;
/// A name that is either a `'static` str (in generated constants) or owned.
pub type Name = Cow<'static, str>;

/// Index of an array in [`LoopSpec::arrays`].
pub type ArrayId = usize;
/// Index of an iteration dimension in [`LoopSpec::dims`].
pub type DimId = usize;

/// One `#[parallel_for]` loop, as the analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LoopSpec {
    /// Name of the annotated function.
    pub name: Name,
    /// The iteration dimensions, outermost first (`[u, i]` for `for ([u, i], r) in ratings`).
    pub dims: List<Name>,
    /// What the loop iterates over.
    pub space: SpaceKind,
    /// Every array the loop body or the iteration space names.
    pub arrays: List<ArraySpec>,
    /// Every element access of the loop body, in source order.
    pub accesses: List<Access>,
    /// `#[parallel_for(ordered)]`: dependences order iterations, not just exclude them.
    pub ordered: bool,
    /// Write-back buffers (`buffer(..)`), exempt from the analysis.
    pub buffers: List<BufferSpec>,
    /// `buffer(.., max_delay = n)`: buffers are applied at least every `n` iterations of
    /// each worker.
    pub max_delay: Option<usize>,
    /// Outer variables the body reduces into (`x += e`, `x *= e`, `max`, `min`).
    pub reductions: List<ReductionSpec>,
}

/// A write-back buffer: each worker updates a copy of array `array` with `+=`/`-=`; the
/// copies' differences are applied at fixed points of the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BufferSpec {
    /// The buffered array.
    pub array: ArrayId,
    /// `buffer(g, apply = f(a, b))`: the differences go to function `f`, element by element,
    /// with the same element of arrays `a`, `b`; `None`: they are added to the array.
    pub apply: Option<ApplySpec>,
    /// `sync = ".."`: the buffer holds a worker's replica of an array the loop writes, and
    /// the replicas' differences are averaged instead of summed (data-parallel mode; the
    /// loop no longer equals a serial order).
    pub average: bool,
    /// `sync = "..", merge = f`: the function merging a `sync` replica's summed
    /// differences into the array instead of averaging them (its path as written).
    pub merge: Option<Name>,
    /// `sync = "hybrid"`: the workers of a process share one replica, updated without
    /// locks (results depend on the threads' timing).
    pub shared: bool,
    /// `sync = "ssp(s)"`: `s`, the batches a worker may run ahead of the slowest; its
    /// replica starts batch `k` from the merge of every worker's batches before `k - s`
    /// plus its own differences since (0: `bsp`, every batch from the last merge).
    #[cfg_attr(feature = "serde", serde(default))]
    pub stale: usize,
}

/// The apply function of a write-back buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ApplySpec {
    /// The function's name.
    pub function: Name,
    /// The arrays it updates, after the buffer's difference.
    pub targets: List<ArrayId>,
}

/// A reduction variable of the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ReductionSpec {
    /// The variable.
    pub name: Name,
    /// How the body updates it.
    pub op: ReduceOp,
    /// Its parts combine to the serial loop's result in any order: an integer `+=`/`*=`,
    /// or an `ordered` loop's float one, whose terms are added in the serial order.
    /// (`max`/`min` are exact but for the sign of a float zero, as `merges_exactly` says.)
    pub exact: bool,
}

/// The operator of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ReduceOp {
    /// `x += e`.
    Add,
    /// `x *= e`.
    Mul,
    /// `x = x.max(e)`.
    Max,
    /// `x = x.min(e)`.
    Min,
}

impl BufferSpec {
    /// `buffer(a)` for array `array`, merged into the array.
    pub const fn new(array: ArrayId) -> Self {
        BufferSpec {
            array,
            apply: None,
            average: false,
            merge: None,
            shared: false,
            stale: 0,
        }
    }

    /// The same buffer as a `sync` replica: differences averaged.
    pub const fn averaged(mut self) -> Self {
        self.average = true;
        self
    }

    /// `buffer(a, apply = function(targets..))`.
    pub const fn applied(
        array: ArrayId,
        function: &'static str,
        targets: &'static [ArrayId],
    ) -> Self {
        BufferSpec {
            array,
            apply: Some(ApplySpec {
                function: Cow::Borrowed(function),
                targets: Cow::Borrowed(targets),
            }),
            average: false,
            merge: None,
            shared: false,
            stale: 0,
        }
    }

    /// A `sync` replica of array `array`, merged by function `merge` instead of averaged.
    pub const fn merged_by(array: ArrayId, merge: &'static str) -> Self {
        BufferSpec {
            array,
            apply: None,
            average: true,
            merge: Some(Cow::Borrowed(merge)),
            shared: false,
            stale: 0,
        }
    }

    /// The same `sync` replica, shared by the workers of each process (`sync = "hybrid"`).
    pub const fn shared(mut self) -> Self {
        self.shared = true;
        self
    }

    /// The same `sync` replica under `sync = "ssp(s)"`: a worker runs up to `s` batches
    /// ahead of the slowest (see the field [`stale`](BufferSpec#structfield.stale)).
    pub const fn ssp(mut self, s: usize) -> Self {
        self.stale = s;
        self
    }
}

impl ReductionSpec {
    /// Reduction variable `name` with operator `op`.
    pub const fn new(name: &'static str, op: ReduceOp) -> Self {
        ReductionSpec {
            name: Cow::Borrowed(name),
            op,
            exact: false,
        }
    }

    /// The same, exact (see [`exact`](ReductionSpec::exact)).
    pub const fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    /// The same, exact when `yes`: an integer's, where overflow does not panic (without
    /// overflow checks its parts wrap to the serial sum whatever their order; with them, a
    /// partial sum may overflow where the serial loop's does not, or the reverse).
    pub const fn exact_if(mut self, yes: bool) -> Self {
        self.exact = yes;
        self
    }
}

/// The iteration space of a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SpaceKind {
    /// `for (key, value) in array`: one iteration per stored element of `array`.
    Array {
        /// The iterated array.
        array: ArrayId,
        /// A `SparseArray` (stored elements only) rather than a dense `DistArray`.
        sparse: bool,
    },
    /// `for i in a..b`: one dimension, bounds known at run time.
    Range,
}

/// An array the loop names.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ArraySpec {
    /// The variable name.
    pub name: Name,
    /// Number of dimensions (`N` in `DistArray<T, N>`).
    pub rank: usize,
    /// Passed as `&mut`: the loop may write it.
    pub mutable: bool,
    /// Written, and every write is an element update `a[..] += e` or `a[..] -= e`: a
    /// write-back buffer (`buffer(a)`) could take it.
    pub additive: bool,
    /// Its element values may decide which elements the body touches (they flow into a
    /// computed subscript or a condition): reconnaissance plans again when they change
    /// (and records a written one with its real values). The contents of an array that
    /// steers nothing do not key a plan.
    pub steers: bool,
}

/// Whether an access reads or writes its element(s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum AccessKind {
    /// The element is only read.
    Read,
    /// The element is written (and maybe read).
    Write,
}

/// One access `a[[s0, s1, ..]]`, `a.row(s0)`, ... of the loop body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Access {
    /// The accessed array.
    pub array: ArrayId,
    /// Read or write.
    pub kind: AccessKind,
    /// One subscript per array dimension.
    pub subscripts: List<Subscript>,
    /// Source line of the access, for reports (0 when unknown).
    pub line: u32,
}

/// One subscript of an access, as a function of the iteration vector.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Subscript {
    /// `c0*p0 + c1*p1 + .. + k`, exact.
    Affine(Affine),
    /// Every index along this dimension (`a.row(i)`'s second dimension, or an inner serial
    /// loop's variable).
    Full,
    /// Read from data or computed by a function: unknown at compile time.
    Indirect,
}

impl LoopSpec {
    /// A spec from `'static` parts: what generated code calls in a `const`.
    pub const fn new(
        name: &'static str,
        dims: &'static [Name],
        space: SpaceKind,
        arrays: &'static [ArraySpec],
        accesses: &'static [Access],
        ordered: bool,
    ) -> Self {
        LoopSpec {
            name: Cow::Borrowed(name),
            dims: Cow::Borrowed(dims),
            space,
            arrays: Cow::Borrowed(arrays),
            accesses: Cow::Borrowed(accesses),
            ordered,
            buffers: Cow::Borrowed(&[]),
            max_delay: None,
            reductions: Cow::Borrowed(&[]),
        }
    }

    /// Whether array `a` is a write-back buffer.
    pub fn is_buffer(&self, a: ArrayId) -> bool {
        self.buffers.iter().any(|b| b.array == a)
    }

    /// Number of iteration dims.
    pub fn n_dims(&self) -> usize {
        self.dims.len()
    }

    /// The iterated array, if the loop runs over an array.
    pub fn space_array(&self) -> Option<ArrayId> {
        match self.space {
            SpaceKind::Array { array, .. } => Some(array),
            SpaceKind::Range => None,
        }
    }

    /// Whether any access has an indirect subscript.
    pub fn has_indirect(&self) -> bool {
        self.accesses.iter().any(|a| {
            a.subscripts
                .iter()
                .any(|s| matches!(s, Subscript::Indirect))
        })
    }

    /// Whether the loop writes `array` anywhere.
    pub fn writes(&self, array: ArrayId) -> bool {
        self.accesses
            .iter()
            .any(|a| a.array == array && a.kind == AccessKind::Write)
    }

    /// `sync = "ssp(s)"`'s `s` when every buffer of the loop is a replica it applies to
    /// (averaged or merged, not shared, no apply function); 0 otherwise (`bsp`: every
    /// merge parks the workers).
    pub fn staleness(&self) -> usize {
        let replicas = self
            .buffers
            .iter()
            .all(|b| b.average && !b.shared && b.apply.is_none());
        if replicas {
            self.buffers.iter().map(|b| b.stale).max().unwrap_or(0)
        } else {
            0
        }
    }
}

impl ArraySpec {
    /// An array spec from `'static` parts.
    pub const fn new(name: &'static str, rank: usize, mutable: bool) -> Self {
        ArraySpec {
            name: Cow::Borrowed(name),
            rank,
            mutable,
            additive: false,
            steers: false,
        }
    }

    /// The same array, written only by `+=` / `-=` of elements.
    pub const fn additive(mut self) -> Self {
        self.additive = true;
        self
    }

    /// The same array, its values deciding which elements the body touches.
    pub const fn steers(mut self) -> Self {
        self.steers = true;
        self
    }
}

impl Access {
    /// An access from `'static` parts.
    pub const fn new(
        array: ArrayId,
        kind: AccessKind,
        subscripts: &'static [Subscript],
        line: u32,
    ) -> Self {
        Access {
            array,
            kind,
            subscripts: Cow::Borrowed(subscripts),
            line,
        }
    }
}

impl Subscript {
    /// `sum(coeffs[d] * p[d]) + constant` from `'static` parts.
    pub const fn affine(coeffs: &'static [i64], constant: i64) -> Self {
        Subscript::Affine(Affine {
            coeffs: Cow::Borrowed(coeffs),
            constant,
        })
    }
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        })
    }
}

impl Access {
    /// Renders the access as `w[u, *]`.
    pub fn display<'a>(&'a self, spec: &'a LoopSpec) -> impl fmt::Display + 'a {
        AccessDisplay { access: self, spec }
    }
}

struct AccessDisplay<'a> {
    access: &'a Access,
    spec: &'a LoopSpec,
}

impl fmt::Display for AccessDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.spec.arrays[self.access.array].name;
        write!(f, "{name}[")?;
        for (i, s) in self.access.subscripts.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            match s {
                Subscript::Affine(a) => write!(f, "{}", a.display(&self.spec.dims))?,
                Subscript::Full => write!(f, "*")?,
                Subscript::Indirect => write!(f, "?")?,
            }
        }
        write!(f, "]")
    }
}
