//! Parallelization strategies, in Orion's order (sect. 3.4.1): 1D, then 2D.
//!
//! A strategy is only a candidate when every array the loop writes can be given to
//! workers in ranges that follow the partitioned dims; the runtime then hands out those
//! ranges as exclusive blocks. Among candidates the runtime picks, once array sizes are
//! known, the one that moves the fewest elements.
//!
//! This file holds the strategies, the analysis (`analyze`, in Orion's order) and the
//! choice among candidates; `place.rs` where arrays live under a strategy, `fallback.rs`
//! what a loop planned by reconnaissance is told; the tests are in `tests.rs`,
//! `wavefront_tests.rs` and `reconnaissance_tests.rs`.

use std::fmt;

use crate::dep::{DepVector, Dist, dependence_vectors};
use crate::ir::{DimId, LoopSpec};
use crate::unimodular;

mod fallback;
mod place;

pub use fallback::{buffer_hint, fallback_note};
use place::place_skewed;
pub use place::{Align, Placement, alignments, place, tile_axes, tile_bounded};

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

/// [`choose`], knowing the loop: a shared (read-only) array whose every access follows a
/// candidate's space dim by one subscript is read by parts, each worker its own range,
/// and moves nothing, like a local one. So a read-only loop over ratings partitions the
/// dim of the larger factor array: the other one, smaller, is the one read whole.
pub fn choose_for<'a>(
    spec: &LoopSpec,
    analysis: &'a Analysis,
    sizes: &[usize],
    n_workers: usize,
) -> Option<&'a Candidate> {
    let p = n_workers.saturating_sub(1) as u128;
    let read_along: Vec<Vec<DimId>> = (0..spec.arrays.len())
        .map(|id| alignments(spec, id).iter().map(|a| a.dim).collect())
        .collect();
    analysis.candidates.iter().min_by_key(|c| {
        // Reconnaissance partitions no dim.
        let space = (c.strategy != Strategy::Reconnaissance).then(|| c.strategy.space_dim());
        c.placements
            .iter()
            .zip(sizes)
            .enumerate()
            .map(|(id, (pl, &n))| match pl {
                Placement::Shared if space.is_some_and(|d| read_along[id].contains(&d)) => 0,
                Placement::Rotated(_) | Placement::Shared => p * n as u128,
                _ => 0,
            })
            .sum::<u128>()
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod wavefront_tests;

#[cfg(test)]
mod reconnaissance_tests;
