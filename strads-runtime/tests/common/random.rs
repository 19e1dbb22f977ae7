//! Random loops, shared by `random_loops` (the executor on threads against the replay of
//! its recorded order) and `random_across` (the same loops on real processes): a spec's
//! accesses as proptest strategies, the loop body that interprets them, the arrays it
//! starts from and the iteration spaces it runs over.

use std::borrow::Cow;

use proptest::prelude::*;
use strads_analysis::{
    Access, AccessKind, Affine, ArraySpec, LoopSpec, Name, SpaceKind, Strategy as Plan, Subscript,
    analyze,
};
use strads_runtime::{ArrayMut, DistArray, RangeDim};

/// A generated access: (array, is write, per axis (dim, coeff, constant, full)).
pub(crate) type RawAccess = (usize, bool, Vec<(u8, i64, i64, bool)>);

/// Array side: every subscript the generator makes of small iterations stays inside.
pub(crate) const SIDE: usize = 24;
const SHIFT: i64 = 8;

/// Runs the spec's accesses for iteration `p`: reads feed an accumulator, writes mix it in.
pub(crate) fn body<A: ArrayMut<f64, 2>>(spec: &LoopSpec, p: &[usize], arrays: &mut [A]) {
    let mut acc = p
        .iter()
        .enumerate()
        .map(|(d, &x)| (x * (d + 3)) as f64)
        .sum::<f64>();
    for a in spec.accesses.iter() {
        let axes: Vec<Vec<usize>> = a
            .subscripts
            .iter()
            .map(|s| match s {
                Subscript::Affine(f) => {
                    let pv: Vec<i64> = p.iter().map(|&x| x as i64).collect();
                    vec![f.eval(&pv) as usize]
                }
                _ => (0..SIDE).collect(),
            })
            .collect();
        let arr = &mut arrays[a.array];
        // A whole row after an affine index goes through a row view, as `w.row_mut(u)`
        // does in user code (the same operations in the same order as element by element).
        if let (Subscript::Affine(_), Subscript::Full) = (&a.subscripts[0], &a.subscripts[1]) {
            let i = axes[0][0];
            match a.kind {
                AccessKind::Read => {
                    for &x in arr.row(i) {
                        acc = acc * 0.75 + x;
                    }
                }
                AccessKind::Write => {
                    for x in arr.row_mut(i) {
                        *x = *x * 0.5 + acc;
                        acc += 1.0;
                    }
                }
            }
            continue;
        }
        for &i in &axes[0] {
            for &j in &axes[1] {
                match a.kind {
                    AccessKind::Read => acc = acc * 0.75 + arr[[i, j]],
                    AccessKind::Write => {
                        arr[[i, j]] = arr[[i, j]] * 0.5 + acc;
                        acc += 1.0;
                    }
                }
            }
        }
    }
}

fn subscript() -> impl Strategy<Value = (u8, i64, i64, bool)> {
    // (dim, coeff, constant, full)
    (
        0u8..3,
        prop_oneof![3 => Just(1i64), 1 => Just(-1i64), 1 => Just(2i64), 1 => Just(0i64)],
        -2i64..=2,
        prop::bool::weighted(0.15),
    )
}

/// Any loop: 1 to 3 dims, 1 to 4 accesses of three arrays, each axis affine in one dim or
/// whole.
pub(crate) fn spec_strategy() -> impl Strategy<Value = (usize, Vec<RawAccess>)> {
    (1usize..=3).prop_flat_map(|n_dims| {
        let access = (
            0usize..3,
            any::<bool>(),
            prop::collection::vec(subscript(), 2),
        );
        (Just(n_dims), prop::collection::vec(access, 1..5))
    })
}

/// Loops shaped like factor-model updates: each array has a home dim that its first
/// subscript follows, as `w[u, *]` and `h[i, *]` do; most of them are 2D.
pub(crate) fn structured_strategy() -> impl Strategy<Value = (usize, Vec<RawAccess>)> {
    (
        2usize..=3,
        [0u8..3, 0u8..3, 0u8..3],
        [-1i64..=1, -1i64..=1, -1i64..=1],
    )
        .prop_flat_map(|(n_dims, home, shift)| {
            let access = (0usize..3, prop::bool::weighted(0.8)).prop_map(move |(a, w)| {
                (a, w, vec![(home[a], 1, shift[a], false), (0, 1, 0, true)])
            });
            (Just(n_dims), prop::collection::vec(access, 2..6))
        })
}

/// Stencils and dynamic-programming tables: axis k of every access is `p[k] + c`; most
/// have no 1D or 2D plan and run as wavefronts.
pub(crate) fn stencil_strategy() -> impl Strategy<Value = (usize, Vec<RawAccess>)> {
    (2usize..=3).prop_flat_map(|n_dims| {
        let access = (0usize..2, prop::bool::weighted(0.4), -1i64..=1, -1i64..=1)
            .prop_map(|(a, w, c0, c1)| (a, w, vec![(0, 1, c0, false), (1, 1, c1, false)]));
        (Just(n_dims), prop::collection::vec(access, 2..6))
    })
}

/// The loop of `raw`'s accesses over `n_dims` dims: arrays `a`, `b`, `c` (`SIDE` x
/// `SIDE`), and the space array when it iterates one (array 3).
pub(crate) fn build(n_dims: usize, raw: &[RawAccess], space: SpaceKind, ordered: bool) -> LoopSpec {
    const DIMS: [&str; 3] = ["i", "j", "k"];
    let accesses: Vec<Access> = raw
        .iter()
        .map(|(array, write, subs)| Access {
            array: *array,
            kind: if *write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
            subscripts: subs
                .iter()
                .map(|&(d, c, k, full)| {
                    if full {
                        Subscript::Full
                    } else {
                        let mut coeffs = vec![0i64; n_dims];
                        coeffs[d as usize % n_dims] = c;
                        // Shifted so every index is non-negative.
                        Subscript::Affine(Affine {
                            coeffs: coeffs.into(),
                            constant: k + SHIFT,
                        })
                    }
                })
                .collect::<Vec<_>>()
                .into(),
            line: 0,
        })
        .collect();
    let mut arrays: Vec<ArraySpec> = ["a", "b", "c"]
        .iter()
        .map(|n| ArraySpec {
            name: Cow::Borrowed(n),
            rank: 2,
            mutable: true,
            additive: false,
            steers: false,
        })
        .collect();
    if let SpaceKind::Array { .. } = space {
        arrays.push(ArraySpec {
            name: Cow::Borrowed("space"),
            rank: n_dims,
            mutable: false,
            additive: false,
            steers: false,
        });
    }
    LoopSpec {
        name: Cow::Borrowed("random_loop"),
        dims: (0..n_dims)
            .map(|d| Name::Borrowed(DIMS[d]))
            .collect::<Vec<_>>()
            .into(),
        space,
        arrays: arrays.into(),
        accesses: accesses.into(),
        ordered,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    }
}

/// Arrays `a`, `b`, `c` as every run starts them.
pub(crate) fn fresh() -> Vec<DistArray<f64, 2>> {
    (0..3)
        .map(|s| DistArray::from_fn([SIDE, SIDE], |[i, j]| (i * SIDE + j + s * 7) as f64 / 10.0))
        .collect()
}

/// The space a case's `kind` names: 0 a range (1D; a dense array for more dims), 1 a
/// sparse array, 2 a dense array, 3 a nest of stepped ranges.
pub(crate) fn space_kind(kind: u8, n_dims: usize) -> SpaceKind {
    match (kind, n_dims) {
        (0, 1) | (3, _) => SpaceKind::Range,
        (1, _) => SpaceKind::Array {
            array: 3,
            sparse: true,
        },
        _ => SpaceKind::Array {
            array: 3,
            sparse: false,
        },
    }
}

/// Whether the analysis gives the loop a static plan. A loop without one falls back to
/// reconnaissance, which `recon.rs` and the end-to-end tests cover.
pub(crate) fn static_plan(spec: &LoopSpec) -> bool {
    analyze(spec)
        .candidates
        .first()
        .is_some_and(|c| c.strategy != Plan::Reconnaissance)
}

/// Whether the loop's plan is a wavefront (which keeps every dependence's order by index).
pub(crate) fn wavefront(spec: &LoopSpec) -> bool {
    matches!(analyze(spec).candidates[0].strategy, Plan::Wavefront { .. })
}

/// Dim `d` of a nest of stepped ranges over `extent + 1` coordinates
/// (`(1..).step_by(2)`, `(0..).step_by(3)`, ..): the body sees each dim's coordinate, as
/// the macro's `_step` dims do ([`coords`]).
pub(crate) fn stepped(d: usize, extent: usize) -> RangeDim {
    RangeDim::stepped(1 - d % 2, 1 - d % 2 + (d + 2) * (extent + 1), d + 2)
}

/// The coordinates of a point of [`stepped`] dims.
pub(crate) fn coords(v: &[usize]) -> Vec<usize> {
    v.iter()
        .enumerate()
        .map(|(d, &x)| (x - (1 - d % 2)) / (d + 2))
        .collect()
}

/// Random entries of an `extent`^`n_dims` box, in random order: sorted when `sparse_seed`
/// is even (the generator's order otherwise, which an ordered loop keeps too).
pub(crate) fn sparse_points(extent: usize, n_dims: usize, sparse_seed: u64) -> Vec<Vec<usize>> {
    let mut x = sparse_seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pts = Vec::new();
    for _ in 0..extent * 4 {
        let p: Vec<usize> = (0..n_dims)
            .map(|_| (next() % extent as u64) as usize)
            .collect();
        if !pts.contains(&p) {
            pts.push(p);
        }
    }
    if sparse_seed % 2 == 0 {
        pts.sort();
    }
    pts
}
