//! Brute-force oracle for the dependence analysis.
//!
//! Random small loops (1 to 3 dims of extent 1..=5, 1 to 3 arrays of rank 1..=3, 1 to 5
//! affine or `*` accesses) are run "on paper": every iteration point is enumerated, with
//! the set of elements each access touches, and two iterations conflict when they touch a
//! common element of one array and at least one of them writes it. The analysis may be
//! conservative (miss a strategy) but never unsound, so every property checks one
//! direction only:
//!
//! 1. every conflicting pair is covered by a dependence vector;
//! 2. no two blocks that a candidate's schedule runs at the same step conflict, for random
//!    (possibly empty) partitions among 1 to 3 workers;
//! 3. the array range a placement gives a worker covers every element the worker's
//!    iterations touch, and the ranges of concurrent workers are disjoint;
//! 4. a 1D candidate on `d` means every conflict keeps `p[d]`; a 2D candidate on
//!    `(space, time)` means every conflict keeps `p[space]` or `p[time]`.
//!
//! Hand-written loops with exact expected results come first.

use std::borrow::Cow;

use proptest::collection::vec as pvec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use strads_analysis::{
    Access, AccessKind, Affine, Align, ArraySpec, Candidate, Dist, LoopSpec, Name, Partition,
    Placement, SpaceKind, StrategyKind, Subscript, Unordered2d, apply_skew, dependence_vectors,
    format_dist,
};

/// The static analysis: these loops have no indirect subscript, so a reconnaissance
/// candidate is only the run-time fallback for a loop without a static plan, which
/// `strategy.rs` tests; the properties here are about the static strategies.
fn analyze(spec: &LoopSpec) -> strads_analysis::Analysis {
    let mut a = strads_analysis::analyze(spec);
    a.candidates
        .retain(|c| c.strategy != strads_analysis::Strategy::Reconnaissance);
    a
}

/// The analysis' strategy enum (the name `Strategy` is proptest's trait here).
type Plan = strads_analysis::Strategy;

const MAX_DIMS: usize = 3;
const MAX_EXTENT: usize = 5;
const MAX_COEFF: i64 = 2;
const MAX_CONST: i64 = 2;
/// The largest `|value|` an affine subscript can take over the generated loops:
/// `sum(|c| * p) + |k|` with `|c| <= 2`, `p <= 4`, three dims and `|k| <= 2`.
const MAX_ABS: i64 = MAX_COEFF * (MAX_EXTENT as i64 - 1) * MAX_DIMS as i64 + MAX_CONST;
/// An array extent far beyond any coordinate, so `Align::image` never clips a touched
/// element away.
const BIG: usize = 1000;

// ---------------------------------------------------------------------------------------
// Building specs.

fn aff(coeffs: &[i64], constant: i64) -> Subscript {
    Subscript::Affine(Affine {
        coeffs: Cow::Owned(coeffs.to_vec()),
        constant,
    })
}

fn acc(array: usize, kind: AccessKind, subscripts: Vec<Subscript>) -> Access {
    Access {
        array,
        kind,
        subscripts: Cow::Owned(subscripts),
        line: 0,
    }
}

fn read(array: usize, subscripts: Vec<Subscript>) -> Access {
    acc(array, AccessKind::Read, subscripts)
}

fn write(array: usize, subscripts: Vec<Subscript>) -> Access {
    acc(array, AccessKind::Write, subscripts)
}

/// A range loop over dims `dims` with arrays `(name, rank)`, all mutable.
fn spec_named(dims: &[&str], arrays: &[(&str, usize)], accesses: Vec<Access>) -> LoopSpec {
    LoopSpec {
        name: Cow::Owned("oracle".to_string()),
        dims: Cow::Owned(dims.iter().map(|d| Name::Owned(d.to_string())).collect()),
        space: SpaceKind::Range,
        arrays: Cow::Owned(
            arrays
                .iter()
                .map(|&(name, rank)| ArraySpec {
                    name: Cow::Owned(name.to_string()),
                    rank,
                    mutable: true,
                    additive: false,
                    steers: false,
                })
                .collect(),
        ),
        accesses: Cow::Owned(accesses),
        ordered: false,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    }
}

/// A range loop over `n` dims `i, j, k` with arrays `a, b, c` of the given ranks.
fn spec(n: usize, ranks: &[usize], accesses: Vec<Access>) -> LoopSpec {
    const DIMS: [&str; 3] = ["i", "j", "k"];
    const ARRAYS: [&str; 3] = ["a", "b", "c"];
    let arrays: Vec<(&str, usize)> = ranks
        .iter()
        .enumerate()
        .map(|(k, &r)| (ARRAYS[k], r))
        .collect();
    spec_named(&DIMS[..n], &arrays, accesses)
}

/// The same loop with `shift` added to every affine subscript's constant. Every access of
/// an array moves by the same amount along every axis, so which iterations conflict does
/// not change.
fn shifted(spec: &LoopSpec, shift: i64) -> LoopSpec {
    let accesses = spec
        .accesses
        .iter()
        .map(|a| Access {
            subscripts: Cow::Owned(
                a.subscripts
                    .iter()
                    .map(|s| match s {
                        Subscript::Affine(f) => Subscript::Affine(Affine {
                            coeffs: f.coeffs.clone(),
                            constant: f.constant + shift,
                        }),
                        other => other.clone(),
                    })
                    .collect(),
            ),
            ..a.clone()
        })
        .collect();
    LoopSpec {
        accesses: Cow::Owned(accesses),
        ..spec.clone()
    }
}

// ---------------------------------------------------------------------------------------
// The brute force.

/// What one access touches at one iteration: one entry per array axis, `Some(x)` for the
/// single index `x` of an affine subscript, `None` for `*`: every index of the oracle's
/// window, which holds every value an affine subscript takes (`touches` asserts it), so
/// `*` really is every index that matters. Two patterns share an element when on every
/// axis both are the same index, or one is `*` and the other an index of the window, or
/// both are `*`: the same answer as enumerating the window's (up to 53^3) elements.
type Pattern = Vec<Option<i64>>;

/// The window of indices of the generated loops: `-MAX_ABS..=MAX_ABS`.
const WINDOW: std::ops::RangeInclusive<i64> = -MAX_ABS..=MAX_ABS;

#[derive(Debug)]
struct Touch {
    array: usize,
    write: bool,
    pattern: Pattern,
}

/// A loop run on paper.
#[derive(Debug)]
struct Oracle {
    /// Every iteration point, lexicographic order.
    points: Vec<Vec<i64>>,
    /// `touched[p]`: what iteration `points[p]` touches.
    touched: Vec<Vec<Touch>>,
    /// The indices `*` stands for along every axis.
    window: std::ops::RangeInclusive<i64>,
}

impl Oracle {
    /// The oracle of `spec` over the box `0..extents[d]`, with `*` standing for `window`.
    fn new(spec: &LoopSpec, extents: &[usize], window: std::ops::RangeInclusive<i64>) -> Self {
        assert_eq!(spec.n_dims(), extents.len());
        let mut points = vec![Vec::new()];
        for &e in extents {
            points = points
                .into_iter()
                .flat_map(|p: Vec<i64>| {
                    (0..e as i64).map(move |x| {
                        let mut q = p.clone();
                        q.push(x);
                        q
                    })
                })
                .collect();
        }
        let touched = points.iter().map(|p| touches(spec, p, &window)).collect();
        Oracle {
            points,
            touched,
            window,
        }
    }

    /// Whether iterations `points[x]` and `points[y]` touch a common element, one writing.
    fn conflict(&self, x: usize, y: usize) -> bool {
        self.touched[x].iter().any(|a| {
            self.touched[y].iter().any(|b| {
                a.array == b.array
                    && (a.write || b.write)
                    && a.pattern.iter().zip(&b.pattern).all(|(u, v)| match (u, v) {
                        (Some(u), Some(v)) => u == v,
                        (Some(x), None) | (None, Some(x)) => self.window.contains(x),
                        (None, None) => true,
                    })
            })
        })
    }

    /// Every conflicting pair of distinct iterations, as indices into `points`, `x < y`.
    fn conflicts(&self) -> Vec<(usize, usize)> {
        let n = self.points.len();
        let mut out = Vec::new();
        for x in 0..n {
            for y in x + 1..n {
                if self.conflict(x, y) {
                    out.push((x, y));
                }
            }
        }
        out
    }
}

fn touches(spec: &LoopSpec, p: &[i64], window: &std::ops::RangeInclusive<i64>) -> Vec<Touch> {
    spec.accesses
        .iter()
        .map(|a| Touch {
            array: a.array,
            write: a.kind == AccessKind::Write,
            pattern: a
                .subscripts
                .iter()
                .map(|s| match s {
                    Subscript::Affine(f) => {
                        let x = f.eval(p);
                        assert!(window.contains(&x), "affine value {x} outside {window:?}");
                        Some(x)
                    }
                    Subscript::Full => None,
                    Subscript::Indirect => panic!("the generator makes no indirect subscript"),
                })
                .collect(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Generators.

#[derive(Clone, Debug)]
struct Case {
    extents: Vec<usize>,
    spec: LoopSpec,
}

/// The shape of generated loops.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Relative weight of a plain iteration variable `p[d]` as a subscript.
    var: u32,
    /// Relative weight of `*`.
    full: u32,
    /// Relative weight of any affine form.
    affine: u32,
    /// At least this many dims (up to 3).
    min_dims: usize,
    /// At least this many arrays (up to 3).
    min_arrays: usize,
    /// At least this many accesses (up to 5).
    min_accesses: usize,
    /// Every array has a key dim, the only one its plain-variable subscripts use.
    keyed: bool,
}

/// 1 to 3 dims, arrays, 1 to 5 accesses; ~40% plain variables (which keep loops
/// parallelizable often), ~15% `*`, the rest any affine form.
const BROAD: Shape = Shape {
    var: 8,
    full: 3,
    affine: 9,
    min_dims: 1,
    min_arrays: 1,
    min_accesses: 1,
    keyed: false,
};
/// The shape of SGD-MF's `w[u, *]`, `h[i, *]`: at least 2 dims, 2 arrays and 3 accesses,
/// mostly variables and `*`, each array indexed by its own key dim. 2D candidates are rare
/// under `BROAD` (about 1 loop in 300) and about 1 in 9 here.
const ROWS: Shape = Shape {
    var: 12,
    full: 4,
    affine: 2,
    min_dims: 2,
    min_arrays: 2,
    min_accesses: 3,
    keyed: true,
};

/// A subscript over `n` dims; a plain variable is `p[key]` when the array has a key dim.
fn subscript(n: usize, shape: Shape, key: Option<usize>) -> BoxedStrategy<Subscript> {
    let var = match key {
        Some(d) => Just(d).boxed(),
        None => (0..n).boxed(),
    };
    prop_oneof![
        shape.var => var.prop_map(move |d| Subscript::Affine(Affine::var(n, d))),
        shape.full => Just(Subscript::Full),
        shape.affine => (pvec(-MAX_COEFF..=MAX_COEFF, n), -MAX_CONST..=MAX_CONST)
            .prop_map(|(c, k)| aff(&c, k)),
    ]
    .boxed()
}

fn access(
    n: usize,
    ranks: Vec<usize>,
    keys: Vec<Option<usize>>,
    shape: Shape,
) -> impl Strategy<Value = Access> {
    (0..ranks.len(), any::<bool>()).prop_flat_map(move |(array, is_write)| {
        let kind = if is_write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        pvec(subscript(n, shape, keys[array]), ranks[array])
            .prop_map(move |subs| acc(array, kind, subs))
    })
}

fn case_with(shape: Shape) -> impl Strategy<Value = Case> {
    (
        pvec(1..=MAX_EXTENT, shape.min_dims..=MAX_DIMS),
        pvec(1..=3usize, shape.min_arrays..=3),
    )
        .prop_flat_map(move |(extents, ranks)| {
            let n = extents.len();
            let keys = if shape.keyed {
                pvec((0..n).prop_map(Some), ranks.len()).boxed()
            } else {
                Just(vec![None; ranks.len()]).boxed()
            };
            (Just(extents), Just(ranks), keys)
        })
        .prop_flat_map(move |(extents, ranks, keys)| {
            let n = extents.len();
            pvec(
                access(n, ranks.clone(), keys, shape),
                shape.min_accesses..=5,
            )
            .prop_map(move |accesses| Case {
                spec: spec(n, &ranks, accesses),
                extents: extents.clone(),
            })
        })
}

/// Stencils and dynamic-programming tables: 2 or 3 dims, arrays of that rank whose axis
/// `k` is `p[k] + c` (`c` in -1..=1) in every access. Their dependence vectors are exact,
/// so they exercise ordered 2D and unimodular wavefronts (skewed or not).
fn stencil_case() -> impl Strategy<Value = Case> {
    (2usize..=MAX_DIMS, 1usize..=2).prop_flat_map(|(n, n_arrays)| {
        let access = (0..n_arrays, any::<bool>(), pvec(-1i64..=1, n)).prop_map(move |(a, w, c)| {
            let subs = (0..n)
                .map(|k| {
                    let mut coeffs = vec![0i64; n];
                    coeffs[k] = 1;
                    Subscript::Affine(Affine {
                        coeffs: Cow::Owned(coeffs),
                        constant: c[k],
                    })
                })
                .collect();
            acc(
                a,
                if w {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                },
                subs,
            )
        });
        (pvec(2..=MAX_EXTENT, n), pvec(access, 2..=5)).prop_map(move |(extents, accesses)| Case {
            spec: spec(n, &vec![n; n_arrays], accesses),
            extents,
        })
    })
}

/// The loops the properties run on: `BROAD`, `ROWS` and stencils; half of them `ordered`.
fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![2 => case_with(BROAD), 2 => case_with(ROWS), 1 => stencil_case()],
        any::<bool>(),
    )
        .prop_map(|(mut c, ordered)| {
            c.spec.ordered = ordered;
            c
        })
}

/// Per dim, five cut points; `partition` takes the first `p - 1` of them (2D time
/// partitions: up to `2 * 3 - 1`).
fn cuts() -> impl Strategy<Value = Vec<Vec<usize>>> {
    pvec(pvec(0..=MAX_EXTENT, 5), MAX_DIMS)
}

/// `p` consecutive ranges over `0..extent` cut at `cuts` (mod `extent + 1`, sorted):
/// first bound 0, last `extent`, parts possibly empty.
fn partition(extent: usize, cuts: &[usize], p: usize) -> Partition {
    let mut inner: Vec<usize> = cuts[..p - 1].iter().map(|c| c % (extent + 1)).collect();
    inner.sort_unstable();
    let mut bounds = vec![0];
    bounds.extend(inner);
    bounds.push(extent);
    Partition { bounds }
}

/// The part of `par` holding `x`, checked against its range.
fn part(par: &Partition, x: i64) -> usize {
    let k = par.part_of(x as usize);
    let (lo, hi) = par.range(k);
    assert!(
        (lo..hi).contains(&(x as usize)),
        "part_of({x}) = {k} in {:?}",
        par.bounds
    );
    k
}

// ---------------------------------------------------------------------------------------
// The checks, shared by the properties and the hand-written cases.

/// Property 1: every conflicting pair is in some vector, one way or the other.
fn check_vectors(spec: &LoopSpec, o: &Oracle, conflicts: &[(usize, usize)]) -> Result<(), String> {
    let vectors = dependence_vectors(spec);
    for v in &vectors {
        if v.dist.len() != spec.n_dims() {
            return Err(format!(
                "vector {} has the wrong length",
                format_dist(&v.dist)
            ));
        }
        // Lexicographically positive: the first non-zero component is positive.
        match v.dist.iter().find(|c| !c.is_zero()) {
            Some(Dist::Pos) => {}
            Some(Dist::Exact(x)) if *x > 0 => {}
            _ => {
                return Err(format!(
                    "vector {} is not lexicographically positive",
                    format_dist(&v.dist)
                ));
            }
        }
    }
    for &(x, y) in conflicts {
        let (p, q) = (&o.points[x], &o.points[y]);
        let d: Vec<i64> = q.iter().zip(p).map(|(a, b)| a - b).collect();
        let neg: Vec<i64> = d.iter().map(|x| -x).collect();
        if !vectors.iter().any(|v| v.contains(&d) || v.contains(&neg)) {
            let shown: Vec<String> = vectors.iter().map(|v| format_dist(&v.dist)).collect();
            return Err(format!(
                "iterations {p:?} and {q:?} conflict (distance {d:?}) but the vectors are {shown:?}"
            ));
        }
    }
    Ok(())
}

/// Property 4: the strategies' one-sided claims hold on every conflicting pair.
fn check_strategies(
    spec: &LoopSpec,
    o: &Oracle,
    conflicts: &[(usize, usize)],
) -> Result<(), String> {
    for c in &analyze(spec).candidates {
        for &(x, y) in conflicts {
            let (p, q) = (&o.points[x], &o.points[y]);
            let ok = match c.strategy {
                // The generated loops have no indirect subscript.
                Plan::Reconnaissance => unreachable!("no indirect subscripts here"),
                Plan::OneD { dim } => p[dim] == q[dim],
                Plan::TwoD { space, time } => {
                    space != time && (p[space] == q[space] || p[time] == q[time])
                }
                // Tiles keep dependence order: the later iteration's skewed coordinates
                // are at least the earlier one's in both tiled dims (points are in
                // lexicographic order, so `p` runs first serially).
                Plan::Wavefront { space, time, .. } => {
                    let (sp, sq) = (apply_skew(&c.skew, p), apply_skew(&c.skew, q));
                    space != time && sq[space] >= sp[space] && sq[time] >= sp[time]
                }
            };
            if !ok {
                return Err(format!("{:?} but {p:?} and {q:?} conflict", c.strategy));
            }
        }
    }
    Ok(())
}

/// Wavefront tiles: whether two tiles may run at the same time on the pipeline (worker
/// `s` runs tile `(s, t)` after worker `s - 1` finished `(s - 1, t)`, so only a worker
/// further down the pipeline and further ahead in time runs concurrently).
fn tiles_concurrent((s1, t1): (usize, usize), (s2, t2): (usize, usize)) -> bool {
    s1 != s2 && t1 != t2 && ((s1 < s2) == (t1 > t2))
}

/// The tile of every iteration under a wavefront candidate, with `p` space tiles and `p`
/// time tiles cut from `cuts` over the skewed coordinates' extents.
fn tiles(cand: &Candidate, o: &Oracle, cuts: &[Vec<usize>], p: usize) -> Vec<(usize, usize)> {
    let Plan::Wavefront { space, time, .. } = cand.strategy else {
        unreachable!("wavefront candidates only")
    };
    let q: Vec<Vec<i64>> = o.points.iter().map(|x| apply_skew(&cand.skew, x)).collect();
    let extent = |k: usize| q.iter().map(|x| x[k]).max().unwrap_or(0).max(0) as usize + 1;
    let sp = partition(extent(space), &cuts[space], p);
    let tp = partition(extent(time), &cuts[time], p);
    q.iter()
        .map(|x| (part(&sp, x[space]), part(&tp, x[time])))
        .collect()
}

/// The step and worker that run each iteration under `plan` with `p` workers.
fn slots(
    plan: Plan,
    o: &Oracle,
    extents: &[usize],
    cuts: &[Vec<usize>],
    p: usize,
) -> Vec<(usize, usize)> {
    match plan {
        Plan::Wavefront { .. } => unreachable!("wavefronts are checked by `tiles`"),
        Plan::Reconnaissance => unreachable!("no indirect subscripts here"),
        Plan::OneD { dim } => {
            let par = partition(extents[dim], &cuts[dim], p);
            // 1D: all P parts run at once, part k on worker k.
            o.points.iter().map(|pt| (0, part(&par, pt[dim]))).collect()
        }
        Plan::TwoD { space, time } => {
            let sp = partition(extents[space], &cuts[space], p);
            let sched = Unordered2d { p, split: 2 };
            let tp = partition(extents[time], &cuts[time], sched.time_parts());
            // Every block (space part, time part) runs exactly once: find when and where.
            let mut slot_of = vec![vec![None; sched.time_parts()]; p];
            for t in 0..sched.time_parts() {
                for w in 0..p {
                    let (s, tm) = sched.block(w, t);
                    assert_eq!(s, w, "worker {w} runs its own space part");
                    assert!(slot_of[s][tm].is_none(), "block ({s}, {tm}) runs twice");
                    slot_of[s][tm] = Some((t, w));
                }
            }
            o.points
                .iter()
                .map(|pt| {
                    slot_of[part(&sp, pt[space])][part(&tp, pt[time])]
                        .expect("every block runs at some step")
                })
                .collect()
        }
    }
}

/// Property 2: blocks that run at the same step never conflict.
fn check_schedules(
    c: &Case,
    o: &Oracle,
    conflicts: &[(usize, usize)],
    cuts: &[Vec<usize>],
) -> Result<(), String> {
    for cand in &analyze(&c.spec).candidates {
        if let Plan::Wavefront { .. } = cand.strategy {
            for p in 1..=3 {
                let tile = tiles(cand, o, cuts, p);
                for &(x, y) in conflicts {
                    if tiles_concurrent(tile[x], tile[y]) {
                        return Err(format!(
                            "{:?} with {p} workers: {:?} (tile {:?}) and {:?} (tile {:?}) \
                             conflict and may run at once",
                            cand.strategy, o.points[x], tile[x], o.points[y], tile[y]
                        ));
                    }
                }
            }
            continue;
        }
        for p in 1..=3 {
            let slot = slots(cand.strategy, o, &c.extents, cuts, p);
            for &(x, y) in conflicts {
                let ((tx, wx), (ty, wy)) = (slot[x], slot[y]);
                if tx == ty && wx != wy {
                    return Err(format!(
                        "{:?} with {p} workers: {:?} (worker {wx}) and {:?} (worker {wy}) \
                         conflict at step {tx}",
                        cand.strategy, o.points[x], o.points[y]
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Property 3: every written array is Local/Rotated and the range its worker owns covers
/// everything the worker touches; the ranges of different parts are disjoint. Elements
/// with a negative coordinate on the aligned axis are out of bounds for any real array
/// (the loop would panic before the runtime matters) and are skipped; with
/// `all_in_bounds` the caller promises there are none, and the check fails if one shows up.
/// Returns how many (iteration, element) coordinates were checked.
fn check_placements(
    c: &Case,
    o: &Oracle,
    cuts: &[Vec<usize>],
    all_in_bounds: bool,
) -> Result<usize, String> {
    let spec = &c.spec;
    let mut checked = 0;
    for cand in &analyze(spec).candidates {
        if cand.placements.len() != spec.arrays.len() {
            return Err(format!("{:?}: one placement per array", cand.strategy));
        }
        for (id, pl) in cand.placements.iter().enumerate() {
            let accessed = spec.accesses.iter().any(|a| a.array == id);
            let (al, pdim) = match *pl {
                Placement::Local(al) => (al, cand.strategy.space_dim()),
                Placement::Rotated(al) => match cand.strategy.time_dim() {
                    Some(t) => (al, t),
                    None => {
                        return Err(format!("{:?}: rotated array {id} under 1D", cand.strategy));
                    }
                },
                Placement::Shared if accessed && !spec.writes(id) => continue,
                Placement::Unused if !accessed => continue,
                // Tiles' windows are checked for overlap by the runtime when it plans
                // (and by the executor tests); here only that they go with wavefronts.
                Placement::Tiled
                    if spec.writes(id) && matches!(cand.strategy, Plan::Wavefront { .. }) =>
                {
                    continue;
                }
                other => {
                    return Err(format!(
                        "{:?}: array {id} placed {other:?} (accessed {accessed}, written {})",
                        cand.strategy,
                        spec.writes(id)
                    ));
                }
            };
            if al.dim != pdim {
                return Err(format!(
                    "{:?}: array {id} aligned to dim {} ({pl:?})",
                    cand.strategy, al.dim
                ));
            }
            for p in 1..=3 {
                let par = partition(c.extents[pdim], &cuts[pdim], p);
                check_disjoint(&al, &par)?;
                for (pt, touched) in o.points.iter().zip(&o.touched) {
                    let (lo, hi) = par.range(part(&par, pt[pdim]));
                    let (ilo, ihi) = al.image(lo, hi, BIG);
                    for t in touched.iter().filter(|t| t.array == id) {
                        let Some(x) = t.pattern.get(al.axis).copied().flatten() else {
                            return Err(format!("array {id} axis {} is `*` but aligned", al.axis));
                        };
                        if x < 0 || x >= BIG as i64 {
                            if all_in_bounds {
                                return Err(format!("coordinate {x} out of bounds"));
                            }
                            continue;
                        }
                        checked += 1;
                        let covered = ilo as i64 <= x
                            && x < ihi as i64
                            && al.holds(lo, hi, x as usize, t.write);
                        if !covered {
                            return Err(format!(
                                "{:?} with {p} workers: iteration {pt:?} (dim {pdim} part \
                                 {lo}..{hi}) touches index {x} of array {id} axis {} outside \
                                 its range {ilo}..{ihi} ({al:?})",
                                cand.strategy, al.axis
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(checked)
}

/// The ranges of different parts of `par` never overlap: two workers never own the same
/// element at once.
fn check_disjoint(al: &Align, par: &Partition) -> Result<(), String> {
    let images: Vec<(usize, usize)> = (0..par.len())
        .map(|k| {
            let (lo, hi) = par.range(k);
            al.image(lo, hi, BIG)
        })
        .collect();
    for (k, a) in images.iter().enumerate() {
        for (l, b) in images.iter().enumerate().skip(k + 1) {
            let hulls_meet = a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1;
            if al.is_uniform() && hulls_meet {
                return Err(format!(
                    "{al:?}: ranges {a:?} and {b:?} of {:?} overlap",
                    par.bounds
                ));
            }
            // Strided: what one part may write, the other never reaches.
            let ((klo, khi), (llo, lhi)) = (par.range(k), par.range(l));
            for x in 0..(2 * MAX_ABS as usize + 130) {
                if (al.holds(klo, khi, x, true) && al.holds(llo, lhi, x, false))
                    || (al.holds(llo, lhi, x, true) && al.holds(klo, khi, x, false))
                {
                    return Err(format!(
                        "{al:?}: parts {k} and {l} of {:?} both reach index {x}, one writing",
                        par.bounds
                    ));
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Hand-written loops with exact results.

fn vecs(spec: &LoopSpec) -> Vec<String> {
    dependence_vectors(spec)
        .iter()
        .map(|v| format_dist(&v.dist))
        .collect()
}

fn plans(spec: &LoopSpec) -> Vec<Plan> {
    analyze(spec)
        .candidates
        .iter()
        .map(|c| c.strategy)
        .collect()
}

/// Every oracle check on a hand-written loop too.
fn check_all(spec: &LoopSpec, extents: &[usize]) {
    let c = Case {
        extents: extents.to_vec(),
        spec: spec.clone(),
    };
    let o = Oracle::new(spec, extents, WINDOW);
    let conflicts = o.conflicts();
    let cuts = vec![vec![1, 3, 2, 4, 5]; MAX_DIMS];
    check_vectors(spec, &o, &conflicts).unwrap();
    check_strategies(spec, &o, &conflicts).unwrap();
    check_schedules(&c, &o, &conflicts, &cuts).unwrap();
    check_placements(&c, &o, &cuts, false).unwrap();
}

fn align(axis: usize, dim: usize, coeff: i64, constant: i64) -> Align {
    Align::uniform(axis, dim, coeff, constant)
}

#[test]
fn sgd_mf_rows_are_2d_both_ways() {
    // for ([u, i], r) in ratings: w[u, *] and h[i, *] read and written.
    let s = spec_named(
        &["u", "i"],
        &[("w", 2), ("h", 2)],
        vec![
            read(0, vec![aff(&[1, 0], 0), Subscript::Full]),
            read(1, vec![aff(&[0, 1], 0), Subscript::Full]),
            write(0, vec![aff(&[1, 0], 0), Subscript::Full]),
            write(1, vec![aff(&[0, 1], 0), Subscript::Full]),
        ],
    );
    assert_eq!(vecs(&s), ["(0, +inf)", "(+inf, 0)"]);
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::TwoD));
    assert_eq!(
        plans(&s),
        [
            Plan::TwoD { space: 0, time: 1 },
            Plan::TwoD { space: 1, time: 0 }
        ]
    );
    assert_eq!(
        a.candidates[0].placements,
        [
            Placement::Local(align(0, 0, 1, 0)),
            Placement::Rotated(align(0, 1, 1, 0))
        ]
    );
    assert_eq!(
        a.candidates[1].placements,
        [
            Placement::Rotated(align(0, 0, 1, 0)),
            Placement::Local(align(0, 1, 1, 0))
        ]
    );
    check_all(&s, &[4, 5]);
}

#[test]
fn stencil_along_i_is_1d_over_j_only() {
    // a[i, j] = a[i - 1, j].
    let s = spec(
        2,
        &[2],
        vec![
            read(0, vec![aff(&[1, 0], -1), aff(&[0, 1], 0)]),
            write(0, vec![aff(&[1, 0], 0), aff(&[0, 1], 0)]),
        ],
    );
    assert_eq!(vecs(&s), ["(1, 0)"]);
    let a = analyze(&s);
    assert_eq!(plans(&s), [Plan::OneD { dim: 1 }]);
    assert_eq!(
        a.candidates[0].placements,
        [Placement::Local(align(1, 1, 1, 0))]
    );
    check_all(&s, &[5, 4]);
}

#[test]
fn prefix_sum_has_no_candidate() {
    // a[i] += a[i - 1].
    let s = spec(
        1,
        &[1],
        vec![
            read(0, vec![aff(&[1], 0)]),
            read(0, vec![aff(&[1], -1)]),
            write(0, vec![aff(&[1], 0)]),
        ],
    );
    assert_eq!(vecs(&s), ["(1)"]);
    let a = analyze(&s);
    assert!(a.candidates.is_empty());
    assert!(a.rejected.is_empty());
    assert_eq!(a.kind(), None);
    assert!(a.reason.is_some());
    check_all(&s, &[5]);
}

#[test]
fn even_write_odd_read_has_no_vector() {
    // a[2i] = a[2i + 1]: independent; a worker's iterations write even indices no other
    // worker's iterations reach: 1D, `a` local with a strided window.
    let s = spec(
        1,
        &[1],
        vec![read(0, vec![aff(&[2], 1)]), write(0, vec![aff(&[2], 0)])],
    );
    assert!(vecs(&s).is_empty());
    let a = analyze(&s);
    assert_eq!(plans(&s), [Plan::OneD { dim: 0 }]);
    let mut al = align(0, 0, 2, 0);
    al.touches = 0b11;
    assert_eq!(a.candidates[0].placements, [Placement::Local(al)]);
    check_all(&s, &[5]);
    // Red-black: a[2i + 1] from a[2i] and a[2i + 2].
    let s = spec(
        1,
        &[1],
        vec![
            read(0, vec![aff(&[2], 0)]),
            read(0, vec![aff(&[2], 2)]),
            write(0, vec![aff(&[2], 1)]),
        ],
    );
    assert!(vecs(&s).is_empty());
    assert_eq!(plans(&s), [Plan::OneD { dim: 0 }]);
    check_all(&s, &[5]);
    // Written only at a[2i]: 1D, a local with stride 2.
    let s = spec(
        1,
        &[1, 1],
        vec![read(1, vec![aff(&[2], 1)]), write(0, vec![aff(&[2], 0)])],
    );
    assert!(vecs(&s).is_empty());
    let a = analyze(&s);
    assert_eq!(plans(&s), [Plan::OneD { dim: 0 }]);
    assert_eq!(
        a.candidates[0].placements,
        [Placement::Local(align(0, 0, 2, 0)), Placement::Shared]
    );
    check_all(&s, &[5]);
}

#[test]
fn matmul_is_1d_over_i_or_k() {
    // a[i, k] += b[i, j] * c[j, k].
    let s = spec(
        3,
        &[2, 2, 2],
        vec![
            read(0, vec![aff(&[1, 0, 0], 0), aff(&[0, 0, 1], 0)]),
            read(1, vec![aff(&[1, 0, 0], 0), aff(&[0, 1, 0], 0)]),
            read(2, vec![aff(&[0, 1, 0], 0), aff(&[0, 0, 1], 0)]),
            write(0, vec![aff(&[1, 0, 0], 0), aff(&[0, 0, 1], 0)]),
        ],
    );
    assert_eq!(vecs(&s), ["(0, +inf, 0)"]);
    let a = analyze(&s);
    assert_eq!(plans(&s), [Plan::OneD { dim: 0 }, Plan::OneD { dim: 2 }]);
    assert_eq!(
        a.candidates[0].placements,
        [
            Placement::Local(align(0, 0, 1, 0)),
            Placement::Shared,
            Placement::Shared
        ]
    );
    assert_eq!(
        a.candidates[1].placements,
        [
            Placement::Local(align(1, 2, 1, 0)),
            Placement::Shared,
            Placement::Shared
        ]
    );
    check_all(&s, &[3, 3, 3]);
}

#[test]
fn reversed_and_skewed_subscripts() {
    // a[4 - i, j] written over (i, j): 1D both ways, a negative coefficient along i.
    let s = spec(
        2,
        &[2],
        vec![write(0, vec![aff(&[-1, 0], 4), aff(&[0, 1], 0)])],
    );
    assert!(vecs(&s).is_empty());
    let a = analyze(&s);
    assert_eq!(plans(&s), [Plan::OneD { dim: 0 }, Plan::OneD { dim: 1 }]);
    assert_eq!(
        a.candidates[0].placements,
        [Placement::Local(align(0, 0, -1, 4))]
    );
    check_all(&s, &[5, 3]);
    // a[i + j] written: the anti-diagonals conflict, nothing is provable.
    let s = spec(2, &[1], vec![write(0, vec![aff(&[1, 1], 0)])]);
    assert_eq!(vecs(&s), ["(+inf, *)", "(0, +inf)"]);
    assert!(plans(&s).is_empty());
    check_all(&s, &[4, 4]);
}

/// Property 1 leans on `DepVector::contains`: it must hold exactly the distances it says.
#[test]
fn contains_is_exact() {
    for x in -3..=3 {
        assert_eq!(Dist::Exact(1).contains(x), x == 1);
        assert_eq!(Dist::Pos.contains(x), x > 0);
        assert_eq!(Dist::Neg.contains(x), x < 0);
        assert!(Dist::Any.contains(x));
    }
    let v = strads_analysis::DepVector {
        dist: vec![Dist::Exact(0), Dist::Pos, Dist::Any],
        src: 0,
        dst: 0,
    };
    assert!(v.contains(&[0, 2, -5]));
    assert!(!v.contains(&[0, 0, -5]));
    assert!(!v.contains(&[1, 2, -5]));
}

/// The generator is not vacuous: it makes loops of every outcome, with conflicts.
#[test]
fn generator_covers_every_outcome() {
    let n = 2000;
    let count = |strategy: BoxedStrategy<Case>| {
        let mut runner = TestRunner::deterministic();
        let (mut one, mut two, mut uni, mut none, mut conflicting) = (0, 0, 0, 0, 0);
        for _ in 0..n {
            let c = strategy.new_tree(&mut runner).unwrap().current();
            match analyze(&c.spec).kind() {
                Some(StrategyKind::OneD) => one += 1,
                Some(StrategyKind::TwoD) => two += 1,
                Some(StrategyKind::Unimodular) => uni += 1,
                _ => none += 1,
            }
            if !Oracle::new(&c.spec, &c.extents, WINDOW)
                .conflicts()
                .is_empty()
            {
                conflicting += 1;
            }
        }
        eprintln!(
            "of {n}: 1d {one}, 2d {two}, unimodular {uni}, none {none}, with conflicts {conflicting}"
        );
        (one, two, none, conflicting, uni)
    };
    let broad = count(case_with(BROAD).boxed());
    let rows = count(case_with(ROWS).boxed());
    let (one, two, none, conflicting, uni) = count(case().boxed());
    assert!(uni > n / 50, "unimodular {uni}");
    assert!(
        broad.0 > n / 10 && broad.2 > n / 10 && broad.3 > n / 4,
        "{broad:?}"
    );
    assert!(rows.1 > n / 20, "{rows:?}");
    assert!(one > n / 10, "1d {one}");
    assert!(two > n / 50, "2d {two}");
    assert!(none > n / 10, "none {none}");
    assert!(conflicting > n / 4, "conflicting {conflicting}");
}

// ---------------------------------------------------------------------------------------
// Properties.

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// 1. No false independence: every conflicting pair lies in a dependence vector.
    #[test]
    fn vectors_cover_every_conflict(c in case()) {
        let o = Oracle::new(&c.spec, &c.extents, WINDOW);
        let conflicts = o.conflicts();
        if let Err(e) = check_vectors(&c.spec, &o, &conflicts) {
            return Err(TestCaseError::fail(e));
        }
        // Shifting every subscript alike changes no conflict, nor the vectors.
        let s = shifted(&c.spec, MAX_ABS);
        let dist = |s: &LoopSpec| dependence_vectors(s).into_iter().map(|v| v.dist).collect::<Vec<_>>();
        prop_assert_eq!(dist(&c.spec), dist(&s));
        prop_assert_eq!(analyze(&c.spec).vectors, dependence_vectors(&c.spec));
    }

    /// 4. A reported strategy's claim holds on every conflicting pair.
    #[test]
    fn strategies_agree_with_brute_force(c in case()) {
        let o = Oracle::new(&c.spec, &c.extents, WINDOW);
        let conflicts = o.conflicts();
        if let Err(e) = check_strategies(&c.spec, &o, &conflicts) {
            return Err(TestCaseError::fail(e));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    /// 2. Blocks that run at the same step never conflict, for any partition and 1 to 3
    /// workers.
    #[test]
    fn concurrent_blocks_never_conflict(c in case(), cuts in cuts()) {
        let o = Oracle::new(&c.spec, &c.extents, WINDOW);
        let conflicts = o.conflicts();
        if let Err(e) = check_schedules(&c, &o, &conflicts, &cuts) {
            return Err(TestCaseError::fail(e));
        }
    }

    /// 3. A worker owns every element it touches, and workers own disjoint ranges: as
    /// generated (out-of-bounds elements skipped), and shifted so that every coordinate is
    /// in bounds and nothing is skipped.
    #[test]
    fn placements_cover_what_workers_touch(c in case(), cuts in cuts()) {
        let o = Oracle::new(&c.spec, &c.extents, WINDOW);
        if let Err(e) = check_placements(&c, &o, &cuts, false) {
            return Err(TestCaseError::fail(e));
        }
        let shifted_window = WINDOW.start() + MAX_ABS..=WINDOW.end() + MAX_ABS;
        let moved = Case { spec: shifted(&c.spec, MAX_ABS), extents: c.extents.clone() };
        let strategies = |s: &LoopSpec| analyze(s).candidates.into_iter().map(|c| c.strategy).collect::<Vec<_>>();
        prop_assert_eq!(strategies(&c.spec), strategies(&moved.spec));
        let o = Oracle::new(&moved.spec, &moved.extents, shifted_window);
        if let Err(e) = check_placements(&moved, &o, &cuts, true) {
            return Err(TestCaseError::fail(e));
        }
    }
}
