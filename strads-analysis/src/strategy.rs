//! Parallelization strategies, in Orion's order (sect. 3.4.1): 1D, then 2D.
//!
//! A strategy is only a candidate when every array the loop writes can be given to
//! workers in ranges that follow the partitioned dims; the runtime then hands out those
//! ranges as exclusive blocks. Among candidates the runtime picks, once array sizes are
//! known, the one that moves the fewest elements.

use std::fmt;

use crate::dep::{DepVector, Dist, dependence_vectors};
use crate::ir::{AccessKind, ArrayId, DimId, LoopSpec, Subscript};
use crate::unimodular;

/// How iterations are split among workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Partition by one dim; partitions run independently.
    OneD {
        /// The partitioned dim.
        dim: DimId,
    },
    /// Partition by two dims; P space partitions over P time steps.
    TwoD {
        /// The dim whose partitions stay on one worker.
        space: DimId,
        /// The dim whose partitions rotate among workers.
        time: DimId,
    },
    /// Tile two dims of the skewed nest ([`Candidate::skew`]) and run the tiles as a
    /// pipelined wavefront: worker `s` runs tiles `(s, 0), (s, 1), ..`, each after worker
    /// `s - 1` has finished the same time tile. Keeps every dependence's order.
    Wavefront {
        /// Skewed dim whose tiles stay on one worker.
        space: DimId,
        /// Skewed dim whose tiles a worker runs in order.
        time: DimId,
        /// Whether a skew or the wavefront itself was needed (`"unimodular"`), rather than
        /// an ordered 2D partition (`"2d"`).
        unimodular: bool,
    },
    /// Subscripts read from data: run the body once in recording mode, group the
    /// iterations whose recorded accesses conflict, and run the groups on workers
    /// (STRADS-AP's Reconnaissance Execution).
    Reconnaissance,
}

/// The kind of a [`Strategy`]: what `expect = ".."` names, and what reports, snapshots and
/// `STRADS_EXPLAIN` lines print (`Display`: `1d`, `2d`, `unimodular`, `reconnaissance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StrategyKind {
    /// [`Strategy::OneD`].
    OneD,
    /// [`Strategy::TwoD`], or an ordered 2D wavefront without a skew.
    TwoD,
    /// A skewed (unimodular) wavefront.
    Unimodular,
    /// [`Strategy::Reconnaissance`].
    Reconnaissance,
}

impl StrategyKind {
    /// Every kind, in Orion's order.
    pub const ALL: [StrategyKind; 4] = [
        StrategyKind::OneD,
        StrategyKind::TwoD,
        StrategyKind::Unimodular,
        StrategyKind::Reconnaissance,
    ];

    /// The word `expect = ".."` takes and reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyKind::OneD => "1d",
            StrategyKind::TwoD => "2d",
            StrategyKind::Unimodular => "unimodular",
            StrategyKind::Reconnaissance => "reconnaissance",
        }
    }

    /// The kind a word names (the inverse of [`StrategyKind::as_str`]).
    pub fn from_word(word: &str) -> Option<StrategyKind> {
        StrategyKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// Whether the kind is proved at compile time (everything but reconnaissance).
    pub fn is_static(self) -> bool {
        self != StrategyKind::Reconnaissance
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Strategy {
    /// Its kind: an unskewed ordered wavefront is 2D.
    pub fn kind(&self) -> StrategyKind {
        match self {
            Strategy::OneD { .. } => StrategyKind::OneD,
            Strategy::TwoD { .. } => StrategyKind::TwoD,
            Strategy::Wavefront {
                unimodular: false, ..
            } => StrategyKind::TwoD,
            Strategy::Wavefront { .. } => StrategyKind::Unimodular,
            Strategy::Reconnaissance => StrategyKind::Reconnaissance,
        }
    }

    /// The dim whose partitions stay on one worker (0 for reconnaissance, which
    /// partitions no dim).
    pub fn space_dim(&self) -> DimId {
        match *self {
            Strategy::OneD { dim } => dim,
            Strategy::TwoD { space, .. } | Strategy::Wavefront { space, .. } => space,
            Strategy::Reconnaissance => 0,
        }
    }

    /// The dim whose partitions rotate, for 2D.
    pub fn time_dim(&self) -> Option<DimId> {
        match *self {
            Strategy::OneD { .. } | Strategy::Reconnaissance => None,
            Strategy::TwoD { time, .. } | Strategy::Wavefront { time, .. } => Some(time),
        }
    }
}

/// An array axis whose subscript follows one iteration dim, `coeff * p[dim] + c`, in every
/// access, with the same `coeff` and constants `c` that may differ between accesses
/// (`x[2*k + 1]` written, `x[2*k]` and `x[2*k + 2]` read): a range of `p[dim]` maps to a
/// set of axis indices, and for disjoint ranges of the dim the indices one range may write
/// and the indices the other touches are disjoint (see [`alignments`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Align {
    /// The array axis.
    pub axis: usize,
    /// The iteration dim it follows.
    pub dim: DimId,
    /// Coefficient of the dim (non-zero).
    pub coeff: i64,
    /// The smallest constant term of the accesses.
    pub constant: i64,
    /// Bit `k`: some access that writes has the constant `constant + k`.
    pub writes: u64,
    /// Bit `k`: some access (read or write) has the constant `constant + k`; bit 0 is
    /// always set.
    pub touches: u64,
}

impl Align {
    /// One form `coeff * p[dim] + constant` shared by every access.
    pub fn uniform(axis: usize, dim: DimId, coeff: i64, constant: i64) -> Self {
        Align {
            axis,
            dim,
            coeff,
            constant,
            writes: 1,
            touches: 1,
        }
    }

    /// Whether every access has the same constant: the indices of a range of the dim are
    /// then a range of the axis ([`image`](Align::image)) when `|coeff| == 1`.
    pub fn is_uniform(&self) -> bool {
        self.touches == 1
    }

    /// Whether the indices that a range of the dim touches form one contiguous range
    /// ([`image`](Align::image)) that no other range's indices enter: one form with
    /// `|coeff| == 1`.
    pub fn is_contiguous(&self) -> bool {
        self.is_uniform() && self.coeff.abs() == 1
    }

    /// The half-open range of axis indices that iterations with `p[dim]` in `lo..hi`
    /// may touch (every access's constant), clipped to `0..extent`.
    pub fn image(&self, lo: usize, hi: usize, extent: usize) -> (usize, usize) {
        if lo >= hi {
            return (0, 0);
        }
        let top = 63 - self.touches.leading_zeros() as i64;
        let a = self.coeff * lo as i64 + self.constant;
        let b = self.coeff * (hi as i64 - 1) + self.constant;
        let (min, max) = (a.min(b), a.max(b) + top);
        let lo = min.clamp(0, extent as i64) as usize;
        let hi = (max + 1).clamp(0, extent as i64) as usize;
        (lo, hi.max(lo))
    }

    /// Whether an iteration with `p[dim]` in `lo..hi` reaches index `x` of the axis
    /// through some access (`write`: through an access that writes).
    #[inline]
    pub fn holds(&self, lo: usize, hi: usize, x: usize, write: bool) -> bool {
        let mut mask = if write { self.writes } else { self.touches };
        while mask != 0 {
            let k = mask.trailing_zeros() as i64;
            mask &= mask - 1;
            let r = x as i64 - self.constant - k;
            if r % self.coeff == 0 {
                let p = r / self.coeff;
                if lo as i64 <= p && p < hi as i64 {
                    return true;
                }
            }
        }
        false
    }
}

/// Where an array lives during a parallel loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// The iteration space itself: read through the loop's key and value.
    Iterated,
    /// Not accessed by the loop body.
    Unused,
    /// Only read: every worker reads the whole array.
    Shared,
    /// Split along `axis` by the space dim: each worker keeps its range all loop long.
    Local(Align),
    /// Split along `axis` by the time dim: ranges rotate among workers step by step.
    Rotated(Align),
    /// Written by a wavefront: each axis follows one iteration dim (`i + c`) or is a
    /// constant, so an element's tile is known from its index.
    Tiled,
    /// Written under reconnaissance: each element belongs, for a batch, to the worker
    /// whose task groups recorded it.
    Recorded,
}

/// A feasible strategy with the placement of every array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The strategy.
    pub strategy: Strategy,
    /// One placement per array of [`LoopSpec::arrays`].
    pub placements: Vec<Placement>,
    /// The skew applied before partitioning (lower unitriangular; the identity but for
    /// unimodular wavefronts): partitions are of `skew * p`.
    pub skew: Vec<Vec<i64>>,
}

/// What the analysis concluded about a loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// Every dependence vector.
    pub vectors: Vec<DepVector>,
    /// Feasible strategies, 1D before 2D, dims in order.
    pub candidates: Vec<Candidate>,
    /// Strategies the dependences allow but the arrays' subscripts do not, with why.
    pub rejected: Vec<(Strategy, String)>,
    /// Why no strategy applies, when `candidates` is empty.
    pub reason: Option<String>,
}

impl Analysis {
    /// The kind of the strategy the analysis chose first, or `None` when none applies.
    pub fn kind(&self) -> Option<StrategyKind> {
        self.candidates.first().map(|c| c.strategy.kind())
    }

    /// Why strategies of `kind` do not apply, in words, when the analysis can say more than
    /// which strategy it proved instead: for 1D, a dependence crossing each dim. `None`
    /// for the other kinds.
    pub fn why_not(&self, spec: &LoopSpec, kind: StrategyKind) -> Option<String> {
        if kind != StrategyKind::OneD {
            return None;
        }
        let crossings: Vec<String> = (0..spec.dims.len())
            .filter_map(|d| {
                let v = self.vectors.iter().find(|v| !v.dist[d].is_zero())?;
                let (src, dst) = (
                    spec.accesses[v.src].display(spec).to_string(),
                    spec.accesses[v.dst].display(spec).to_string(),
                );
                let through = if src == dst {
                    src
                } else {
                    format!("{src} and {dst}")
                };
                Some(format!(
                    "iterations with different `{}` touch the same element through {through}",
                    spec.dims[d]
                ))
            })
            .collect();
        Some(format!(
            "no dim can be split alone: {}",
            crossings.join(", and ")
        ))
    }

    /// The dependences that keep strategies of `kind` from applying, each pair of accesses
    /// once (in the order of [`crate::dependence_pairs`]): for 1D every dependence between
    /// different iterations; for 2D and unimodular those that vary in several dims (every
    /// loop-carried one when none does). Reconnaissance is never kept off by dependences:
    /// empty. `self` must be the analysis of `spec`.
    pub fn conflicts(&self, spec: &LoopSpec, kind: StrategyKind) -> Vec<DepVector> {
        let pairs = crate::dep::dependence_pairs(spec);
        let carried = |v: &&DepVector| v.dist.iter().any(|c| !c.is_zero());
        let several = |v: &&DepVector| v.dist.iter().filter(|c| !c.is_zero()).count() >= 2;
        let mut out: Vec<DepVector> = match kind {
            StrategyKind::Reconnaissance => Vec::new(),
            StrategyKind::OneD => pairs.iter().filter(carried).cloned().collect(),
            StrategyKind::TwoD | StrategyKind::Unimodular => {
                let multi: Vec<_> = pairs.iter().filter(several).cloned().collect();
                if multi.is_empty() {
                    pairs.iter().filter(carried).cloned().collect()
                } else {
                    multi
                }
            }
        };
        let mut seen = std::collections::BTreeSet::new();
        out.retain(|v| seen.insert((v.src, v.dst)));
        out
    }
}

/// Runs the static analysis of a loop.
pub fn analyze(spec: &LoopSpec) -> Analysis {
    let vectors = dependence_vectors(spec);
    let n = spec.n_dims();
    let mut candidates = Vec::new();
    let mut rejected = Vec::new();

    let zero_at = |d: DimId| vectors.iter().all(|v| v.dist[d].is_zero());
    let non_negative = |d: DimId| {
        vectors.iter().all(|v| {
            matches!(v.dist[d], Dist::Pos) || matches!(v.dist[d], Dist::Exact(x) if x >= 0)
        })
    };
    let identity = unimodular::skew(&[], n).unwrap_or_default();
    // Orion's order: 1D, then 2D, then unimodular; each tried when the previous gave no
    // candidate (a strategy the dependences allow may still fail on placement).
    let mut try_place = |list: Vec<(Strategy, Vec<Vec<i64>>)>, candidates: &mut Vec<Candidate>| {
        for (s, skew) in list {
            match place_skewed(spec, s, &skew) {
                Ok(placements) => candidates.push(Candidate {
                    strategy: s,
                    placements,
                    skew,
                }),
                Err(why) => rejected.push((s, why)),
            }
        }
    };
    let one_d: Vec<_> = (0..n)
        .filter(|&d| zero_at(d))
        .map(|dim| (Strategy::OneD { dim }, identity.clone()))
        .collect();
    try_place(one_d, &mut candidates);
    if candidates.is_empty() {
        let mut two_d = Vec::new();
        for space in 0..n {
            for time in 0..n {
                if space == time
                    || !vectors
                        .iter()
                        .all(|v| v.dist[space].is_zero() || v.dist[time].is_zero())
                {
                    continue;
                }
                if !spec.ordered {
                    two_d.push((Strategy::TwoD { space, time }, identity.clone()));
                } else if space < time && non_negative(space) && non_negative(time) {
                    // Ordered 2D (Orion fig. 3.8b): tiles in wavefront order.
                    let s = Strategy::Wavefront {
                        space,
                        time,
                        unimodular: false,
                    };
                    two_d.push((s, identity.clone()));
                }
            }
        }
        try_place(two_d, &mut candidates);
    }
    let mut skew_failure = None;
    if candidates.is_empty() && n >= 2 {
        match unimodular::skew(&vectors, n) {
            Ok(skew) => {
                // Without a skew, and with every dependence inside a row or a column of
                // tiles, this is Orion's ordered 2D schedule; otherwise unimodular.
                let two_d = unimodular::is_identity(&skew)
                    && vectors
                        .iter()
                        .all(|v| v.dist[0].is_zero() || v.dist[1].is_zero());
                let s = Strategy::Wavefront {
                    space: 0,
                    time: 1,
                    unimodular: !two_d,
                };
                try_place(vec![(s, skew)], &mut candidates);
            }
            Err(why) => skew_failure = Some(why),
        }
    }
    let static_found = !candidates.is_empty();
    // No static plan: record the accesses at run time. An ordered loop whose subscripts are
    // all affine stays refused: the dependences say its iterations form chains, which
    // reconnaissance would run one after another.
    if !static_found && (spec.has_indirect() || !spec.ordered) {
        let s = Strategy::Reconnaissance;
        if let Ok(placements) = place_skewed(spec, s, &identity) {
            candidates.push(Candidate {
                strategy: s,
                placements,
                skew: identity.clone(),
            });
        }
    }
    let reason = if static_found {
        None
    } else if !rejected.is_empty() {
        Some(format!(
            "the dependences allow {}, but {}",
            describe(spec, rejected[0].0),
            rejected[0].1
        ))
    } else if n == 0 {
        Some("the loop has no iteration dims".into())
    } else {
        let mut why = no_strategy_reason(spec, &vectors);
        if let Some(skew) = skew_failure {
            why.push_str("; unimodular: ");
            why.push_str(&skew);
        }
        Some(why)
    };
    Analysis {
        vectors,
        candidates,
        rejected,
        reason,
    }
}

/// Arrays that a write-back buffer (`buffer(..)`) could take, and the static strategy the
/// loop would then have: tried for each array the loop only adds to (`a[..] += e`), then
/// for all of them together. `None` when the loop has a static strategy already, or no
/// set of buffers gives it one.
pub fn buffer_hint(spec: &LoopSpec) -> Option<(Vec<ArrayId>, Strategy)> {
    let additive: Vec<ArrayId> = (0..spec.arrays.len())
        .filter(|&a| spec.arrays[a].additive && spec.writes(a))
        .collect();
    let mut tries: Vec<Vec<ArrayId>> = additive.iter().map(|&a| vec![a]).collect();
    if additive.len() > 1 {
        tries.push(additive.clone());
    }
    tries.into_iter().find_map(|buffered| {
        let mut s = spec.clone();
        s.arrays = s
            .arrays
            .iter()
            .enumerate()
            .map(|(a, arr)| {
                let mut arr = arr.clone();
                if buffered.contains(&a) {
                    arr.mutable = false;
                    arr.additive = false;
                    arr.steers = false;
                }
                arr
            })
            .collect();
        // A buffer takes no part in the analysis: its accesses go to per-worker copies.
        s.accesses = s
            .accesses
            .iter()
            .filter(|acc| !buffered.contains(&acc.array))
            .cloned()
            .collect();
        let c = analyze(&s).candidates.into_iter().next()?;
        (c.strategy != Strategy::Reconnaissance).then_some((buffered, c.strategy))
    })
}

/// Why a loop planned by reconnaissance has no static plan, and what would give it one:
/// for the report and `STRADS_EXPLAIN`. `None` for a loop with a static plan.
pub fn fallback_note(spec: &LoopSpec, analysis: &Analysis) -> Option<String> {
    let c = analysis.candidates.first()?;
    if c.strategy != Strategy::Reconnaissance {
        return None;
    }
    let mut note = if spec.has_indirect() {
        "a subscript is read from data or computed, so no static plan can be proved".to_string()
    } else {
        format!(
            "no static strategy ({}), so the accesses are recorded at run time",
            analysis.reason.as_deref().unwrap_or("none applies")
        )
    };
    if let Some((arrays, s)) = buffer_hint(spec) {
        let names: Vec<&str> = arrays
            .iter()
            .map(|&a| spec.arrays[a].name.as_ref())
            .collect();
        note.push_str(&format!(
            "; `buffer({})` would make it {} ({}): each worker then adds into its own copy, \
             merged in worker order at the end of every step, and reads of {} inside the loop \
             see this worker's updates only",
            names.join(", "),
            s.kind(),
            describe(spec, s),
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    Some(note)
}

fn no_strategy_reason(spec: &LoopSpec, vectors: &[DepVector]) -> String {
    let n = spec.n_dims();
    if n == 1 {
        let v = &vectors[0];
        return format!(
            "iterations with different `{}` conflict: {} and {} touch the same element of `{}`",
            spec.dims[0],
            spec.accesses[v.src].display(spec),
            spec.accesses[v.dst].display(spec),
            spec.arrays[spec.accesses[v.src].array].name,
        );
    }
    // Name a vector that is non-zero in at least two dims.
    let v = vectors
        .iter()
        .find(|v| v.dist.iter().filter(|c| !c.is_zero()).count() >= 2)
        .unwrap_or(&vectors[0]);
    format!(
        "no dim (1D) or pair of dims (2D) is zero in every dependence vector; \
         {} between {} and {} varies in several dims",
        crate::dep::format_dist(&v.dist),
        spec.accesses[v.src].display(spec),
        spec.accesses[v.dst].display(spec),
    )
}

/// Renders a strategy with dim names: `2D (space u, time i)`.
pub fn describe(spec: &LoopSpec, s: Strategy) -> String {
    match s {
        Strategy::Reconnaissance => {
            "reconnaissance (read/write sets recorded at run time, conflicting iterations \
             grouped)"
                .into()
        }
        Strategy::Wavefront {
            space,
            time,
            unimodular,
        } => format!(
            "{} wavefront (tiles of {}dims {} x {})",
            if unimodular {
                "unimodular"
            } else {
                "ordered 2D"
            },
            if unimodular { "skewed " } else { "" },
            spec.dims.get(space).map_or("?", |d| d.as_ref()),
            spec.dims.get(time).map_or("?", |d| d.as_ref()),
        ),
        Strategy::OneD { dim } => format!("1D over `{}`", spec.dims[dim]),
        Strategy::TwoD { space, time } => format!(
            "2D (space `{}`, time `{}`)",
            spec.dims[space], spec.dims[time]
        ),
    }
}

/// The placement of every array under strategy `s` (partitioning the unskewed dims), or
/// why some written array cannot be split along the partitioned dims.
pub fn place(spec: &LoopSpec, s: Strategy) -> Result<Vec<Placement>, String> {
    let n = spec.n_dims();
    place_skewed(spec, s, &unimodular::skew(&[], n).unwrap_or_default())
}

/// How each axis of `array` follows the iteration: `Some(dim)` when every access's
/// subscript there is `p[dim] + c`; `None` otherwise (a constant, `*`, an index read from
/// data, another form, or different dims in different accesses): such an axis tells
/// nothing about an element's tile, and the tile windows leave it unbounded.
pub fn tile_axes(spec: &LoopSpec, array: ArrayId) -> Result<Vec<Option<DimId>>, String> {
    let accs: Vec<_> = spec.accesses.iter().filter(|a| a.array == array).collect();
    let rank = spec.arrays[array].rank;
    let mut out = Vec::with_capacity(rank);
    for axis in 0..rank {
        let mut dim: Option<Option<DimId>> = None;
        for a in &accs {
            let this = match &a.subscripts[axis] {
                Subscript::Affine(f) => match f.single_dim() {
                    Some((d, 1)) => Some(d),
                    _ => None,
                },
                _ => None,
            };
            match dim {
                None => dim = Some(this),
                Some(prev) if prev == this => {}
                Some(_) => dim = Some(None),
            }
        }
        out.push(dim.flatten());
    }
    Ok(out)
}

/// For each of the two tiled skewed coordinates (rows `rows` of the skew), whether every
/// dim it depends on has an axis of the array that follows it: then an element's value of
/// that coordinate is known from its index (a bounded window); otherwise the array's tile
/// windows are unbounded along that coordinate.
pub fn tile_bounded(axes: &[Option<DimId>], rows: [&[i64]; 2]) -> [bool; 2] {
    rows.map(|row| {
        row.iter()
            .enumerate()
            .all(|(d, &c)| c == 0 || axes.contains(&Some(d)))
    })
}

fn place_skewed(spec: &LoopSpec, s: Strategy, skew: &[Vec<i64>]) -> Result<Vec<Placement>, String> {
    let mut out = Vec::with_capacity(spec.arrays.len());
    for (id, arr) in spec.arrays.iter().enumerate() {
        if spec.space_array() == Some(id) {
            if spec.writes(id) {
                return Err(format!(
                    "the iterated array `{}` is written inside its own loop",
                    arr.name
                ));
            }
            out.push(Placement::Iterated);
            continue;
        }
        let accessed = spec.accesses.iter().any(|a| a.array == id);
        if !accessed {
            out.push(Placement::Unused);
            continue;
        }
        if !spec.writes(id) {
            out.push(Placement::Shared);
            continue;
        }
        if s == Strategy::Reconnaissance {
            out.push(Placement::Recorded);
            continue;
        }
        if let Strategy::Wavefront { space, time, .. } = s {
            // Tiles that may run at once differ in both tiled coordinates, so a written
            // array needs an index that tells at least one of them (the runtime checks the
            // windows' overlap when it plans).
            let axes = tile_axes(spec, id)?;
            if tile_bounded(&axes, [&skew[space], &skew[time]]) == [false, false] {
                let need: Vec<String> = [space, time]
                    .iter()
                    .flat_map(|&k| skew[k].iter().enumerate().filter(|(_, c)| **c != 0))
                    .map(|(d, _)| format!("`{}`", spec.dims[d]))
                    .collect();
                return Err(format!(
                    "`{}` is written but no axis of it follows {} by `index + constant` in \
                     every access, which the wavefront's tiles depend on",
                    arr.name,
                    need.join(" or ")
                ));
            }
            out.push(Placement::Tiled);
            continue;
        }
        let aligns = alignments(spec, id);
        let space = s.space_dim();
        if let Some(a) = aligns.iter().find(|a| a.dim == space) {
            out.push(Placement::Local(*a));
        } else if let Some(a) = s
            .time_dim()
            .and_then(|t| aligns.iter().find(|a| a.dim == t))
        {
            out.push(Placement::Rotated(*a));
        } else {
            let dims = match s {
                Strategy::OneD { dim } => format!("`{}`", spec.dims[dim]),
                Strategy::Reconnaissance => unreachable!("recorded above"),
                Strategy::TwoD { space, time } | Strategy::Wavefront { space, time, .. } => {
                    format!("`{}` or `{}`", spec.dims[space], spec.dims[time])
                }
            };
            return Err(format!(
                "`{}` is written and no subscript of it follows {dims} alone, identically in \
                 every access",
                arr.name
            ));
        }
    }
    Ok(out)
}

/// The axes of `array` along which disjoint ranges of one iteration dim own disjoint
/// elements: every access's subscript there is `coeff * p[dim] + c` with the same `dim`
/// and `coeff`, constants within 64 of each other, and no write's constant congruent to
/// another access's constant modulo `coeff` (else iteration `p` would write an index that
/// iteration `p + (c' - c) / coeff` touches, and neighbouring ranges would share it).
pub fn alignments(spec: &LoopSpec, array: ArrayId) -> Vec<Align> {
    let accs: Vec<_> = spec.accesses.iter().filter(|a| a.array == array).collect();
    let Some(first) = accs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    'axes: for axis in 0..first.subscripts.len() {
        let Subscript::Affine(f) = &first.subscripts[axis] else {
            continue;
        };
        let Some((dim, coeff)) = f.single_dim() else {
            continue;
        };
        let mut consts = Vec::with_capacity(accs.len());
        for a in &accs {
            match a.subscripts.get(axis) {
                Some(Subscript::Affine(g)) if g.single_dim() == Some((dim, coeff)) => {
                    consts.push((g.constant, a.kind == AccessKind::Write));
                }
                _ => continue 'axes,
            }
        }
        let base = consts.iter().map(|c| c.0).min().unwrap_or(0);
        let (mut writes, mut touches) = (0u64, 0u64);
        for &(c, w) in &consts {
            let k = c.saturating_sub(base);
            if k >= 64 {
                continue 'axes;
            }
            touches |= 1 << k;
            if w {
                writes |= 1 << k;
            }
        }
        for kw in (0i64..64).filter(|k| writes >> k & 1 == 1) {
            for kt in (0i64..64).filter(|k| touches >> k & 1 == 1) {
                if kw != kt && (kw - kt) % coeff == 0 {
                    continue 'axes;
                }
            }
        }
        out.push(Align {
            axis,
            dim,
            coeff,
            constant: base,
            writes,
            touches,
        });
    }
    out
}

/// Picks the candidate that moves the fewest array elements among `n_workers` workers,
/// given every array's element count (`sizes[id]`); ties go to the earlier candidate.
///
/// A rotated array moves `P - 1` times per call; a shared array is copied to `P - 1`
/// other workers when workers do not share memory.
pub fn choose<'a>(
    analysis: &'a Analysis,
    sizes: &[usize],
    n_workers: usize,
) -> Option<&'a Candidate> {
    let p = n_workers.saturating_sub(1) as u128;
    analysis.candidates.iter().min_by_key(|c| {
        c.placements
            .iter()
            .zip(sizes)
            .map(|(pl, &n)| match pl {
                Placement::Rotated(_) | Placement::Shared => p * n as u128,
                _ => 0,
            })
            .sum::<u128>()
    })
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Iterated => f.write_str("iterated"),
            Placement::Unused => f.write_str("unused"),
            Placement::Shared => f.write_str("shared (read-only)"),
            Placement::Local(a) => write!(f, "local along axis {}", a.axis),
            Placement::Rotated(a) => write!(f, "rotated along axis {}", a.axis),
            Placement::Tiled => f.write_str("tiled"),
            Placement::Recorded => f.write_str("recorded at run time"),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod wavefront_tests;

#[cfg(test)]
mod reconnaissance_tests;
