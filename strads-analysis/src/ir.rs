//! The loop IR: what the macro extracts from a `#[parallel_for]` loop and what every later
//! stage reads.
//!
//! Every list is a `Cow<'static, [_]>` so the same types serve twice: the macro builds them
//! owned while it analyses a loop, and emits them as a `const` (borrowed) that the runtime
//! reads without allocating.

use std::borrow::Cow;
use std::fmt;

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
        }
    }

    /// The same `sync` replica, shared by the workers of each process (`sync = "hybrid"`).
    pub const fn shared(mut self) -> Self {
        self.shared = true;
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

/// An affine form over the iteration dims: `sum(coeffs[d] * p[d]) + constant`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Affine {
    /// One coefficient per iteration dim.
    pub coeffs: List<i64>,
    /// The constant term.
    pub constant: i64,
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

impl Affine {
    /// The constant `k` over `n_dims` dims.
    pub fn constant(n_dims: usize, k: i64) -> Self {
        Affine {
            coeffs: Cow::Owned(vec![0; n_dims]),
            constant: k,
        }
    }

    /// The iteration variable `p[dim]` over `n_dims` dims.
    pub fn var(n_dims: usize, dim: DimId) -> Self {
        let mut coeffs = vec![0; n_dims];
        coeffs[dim] = 1;
        Affine {
            coeffs: Cow::Owned(coeffs),
            constant: 0,
        }
    }

    /// The dims with a non-zero coefficient.
    pub fn dims(&self) -> impl Iterator<Item = DimId> + '_ {
        self.coeffs
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(d, _)| d)
    }

    /// If the form depends on exactly one dim: that dim and its coefficient.
    pub fn single_dim(&self) -> Option<(DimId, i64)> {
        let mut it = self.dims();
        let d = it.next()?;
        if it.next().is_some() {
            return None;
        }
        Some((d, self.coeffs[d]))
    }

    /// Whether every coefficient is zero.
    pub fn is_constant(&self) -> bool {
        self.coeffs.iter().all(|c| *c == 0)
    }

    /// `self + other`, term by term (both over the same dims).
    pub fn add(&self, other: &Affine) -> Affine {
        self.zip(other, |a, b| a + b)
    }

    /// `self - other`, term by term (both over the same dims).
    pub fn sub(&self, other: &Affine) -> Affine {
        self.zip(other, |a, b| a - b)
    }

    /// `-self`.
    pub fn neg(&self) -> Affine {
        self.scale(-1)
    }

    /// `k * self`.
    pub fn scale(&self, k: i64) -> Affine {
        Affine {
            coeffs: Cow::Owned(self.coeffs.iter().map(|c| c * k).collect()),
            constant: self.constant * k,
        }
    }

    /// `self * other` when one side is a constant; `None` when both depend on a dim, as
    /// the product is then not affine.
    pub fn mul(&self, other: &Affine) -> Option<Affine> {
        if self.is_constant() {
            Some(other.scale(self.constant))
        } else if other.is_constant() {
            Some(self.scale(other.constant))
        } else {
            None
        }
    }

    fn zip(&self, other: &Affine, f: impl Fn(i64, i64) -> i64) -> Affine {
        Affine {
            coeffs: Cow::Owned(
                self.coeffs
                    .iter()
                    .zip(other.coeffs.iter())
                    .map(|(a, b)| f(*a, *b))
                    .collect(),
            ),
            constant: f(self.constant, other.constant),
        }
    }

    /// The value at iteration point `p` (missing coordinates count as 0).
    pub fn eval(&self, p: &[i64]) -> i64 {
        self.coeffs.iter().zip(p).map(|(c, x)| c * x).sum::<i64>() + self.constant
    }

    /// Renders the form with the dims' names: `2*i - j + 3`.
    pub fn display<'a>(&'a self, dims: &'a [Name]) -> impl fmt::Display + 'a {
        AffineDisplay { form: self, dims }
    }
}

struct AffineDisplay<'a> {
    form: &'a Affine,
    dims: &'a [Name],
}

impl fmt::Display for AffineDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (d, &c) in self.form.coeffs.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let name = self.dims.get(d).map(|n| n.as_ref()).unwrap_or("?");
            let (sign, mag) = if c < 0 { ("-", -c) } else { ("+", c) };
            match (first, sign) {
                (true, "-") => write!(f, "-")?,
                (true, _) => {}
                (false, s) => write!(f, " {s} ")?,
            }
            if mag == 1 {
                write!(f, "{name}")?;
            } else {
                write!(f, "{mag}*{name}")?;
            }
            first = false;
        }
        let k = self.form.constant;
        if first {
            write!(f, "{k}")
        } else if k > 0 {
            write!(f, " + {k}")
        } else if k < 0 {
            write!(f, " - {}", -k)
        } else {
            Ok(())
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_arithmetic() {
        let (i, j) = (Affine::var(2, 0), Affine::var(2, 1));
        let two = Affine::constant(2, 2);
        // 2*i - j + 2
        let f = i.mul(&two).unwrap().sub(&j).add(&two);
        assert_eq!(f.coeffs.as_ref(), [2, -1]);
        assert_eq!(f.constant, 2);
        assert_eq!(f.eval(&[3, 1]), 7);
        let g = f.neg();
        assert_eq!((g.coeffs.as_ref(), g.constant), ([-2, 1].as_slice(), -2));
        assert_eq!(two.mul(&j).map(|h| h.coeffs.to_vec()), Some(vec![0, 2]));
        assert_eq!(i.mul(&j), None);
    }

    fn names(v: &[&'static str]) -> Vec<Name> {
        v.iter().map(|s| Cow::Borrowed(*s)).collect()
    }

    #[test]
    fn affine_display() {
        let dims = names(&["i", "j"]);
        let a = Affine {
            coeffs: Cow::Owned(vec![2, -1]),
            constant: 3,
        };
        assert_eq!(a.display(&dims).to_string(), "2*i - j + 3");
        let b = Affine {
            coeffs: Cow::Owned(vec![-1, 0]),
            constant: -1,
        };
        assert_eq!(b.display(&dims).to_string(), "-i - 1");
        assert_eq!(Affine::constant(2, 4).display(&dims).to_string(), "4");
        assert_eq!(Affine::var(2, 1).display(&dims).to_string(), "j");
    }

    #[test]
    fn single_dim_and_eval() {
        let a = Affine {
            coeffs: Cow::Owned(vec![0, 3]),
            constant: -2,
        };
        assert_eq!(a.single_dim(), Some((1, 3)));
        assert_eq!(a.eval(&[5, 2]), 4);
        assert!(Affine::constant(3, 1).is_constant());
        assert_eq!(Affine::constant(3, 1).single_dim(), None);
    }
}
