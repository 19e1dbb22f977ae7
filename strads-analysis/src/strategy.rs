//! Parallelization strategies, in Orion's order (sect. 3.4.1): 1D, then 2D.
//!
//! A strategy is only a candidate when every array the loop writes can be given to
//! workers in ranges that follow the partitioned dims; the runtime then hands out those
//! ranges as exclusive blocks. Among candidates the runtime picks, once array sizes are
//! known, the one that moves the fewest elements.

use std::fmt;

use crate::dep::{DepVector, dependence_vectors};
use crate::ir::{ArrayId, DimId, LoopSpec, Subscript};

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
}

impl Strategy {
    /// `"1d"` or `"2d"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Strategy::OneD { .. } => "1d",
            Strategy::TwoD { .. } => "2d",
        }
    }

    /// The dim whose partitions stay on one worker.
    pub fn space_dim(&self) -> DimId {
        match *self {
            Strategy::OneD { dim } => dim,
            Strategy::TwoD { space, .. } => space,
        }
    }

    /// The dim whose partitions rotate, for 2D.
    pub fn time_dim(&self) -> Option<DimId> {
        match *self {
            Strategy::OneD { .. } => None,
            Strategy::TwoD { time, .. } => Some(time),
        }
    }
}

/// An array axis whose subscript follows one iteration dim, `coeff * p[dim] + constant`,
/// identically in every access: a range of `p[dim]` maps to a range of the axis, and
/// disjoint ranges of the dim to disjoint ranges of the axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Align {
    /// The array axis.
    pub axis: usize,
    /// The iteration dim it follows.
    pub dim: DimId,
    /// Coefficient of the dim (non-zero).
    pub coeff: i64,
    /// Constant term.
    pub constant: i64,
}

impl Align {
    /// The half-open range of axis indices that iterations with `p[dim]` in `lo..hi`
    /// touch, clipped to `0..extent`.
    pub fn image(&self, lo: usize, hi: usize, extent: usize) -> (usize, usize) {
        if lo >= hi {
            return (0, 0);
        }
        let a = self.coeff * lo as i64 + self.constant;
        let b = self.coeff * (hi as i64 - 1) + self.constant;
        let (min, max) = (a.min(b), a.max(b));
        let lo = min.clamp(0, extent as i64) as usize;
        let hi = (max + 1).clamp(0, extent as i64) as usize;
        (lo, hi.max(lo))
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
}

/// A feasible strategy with the placement of every array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The strategy.
    pub strategy: Strategy,
    /// One placement per array of [`LoopSpec::arrays`].
    pub placements: Vec<Placement>,
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
    /// The strategy kind the analysis proved: `"1d"`, `"2d"`, or `None`.
    pub fn kind(&self) -> Option<&'static str> {
        self.candidates.first().map(|c| c.strategy.kind())
    }
}

/// Runs the static analysis of a loop.
pub fn analyze(spec: &LoopSpec) -> Analysis {
    let vectors = dependence_vectors(spec);
    let n = spec.n_dims();
    let mut candidates = Vec::new();
    let mut rejected = Vec::new();

    if spec.has_indirect() {
        return Analysis {
            vectors,
            candidates,
            rejected,
            reason: Some(
                "a subscript is read from data or computed by a function (indirect); \
                 only affine subscripts can be analysed at compile time"
                    .into(),
            ),
        };
    }

    let zero_at = |d: DimId| vectors.iter().all(|v| v.dist[d].is_zero());
    let one_d: Vec<DimId> = (0..n).filter(|&d| zero_at(d)).collect();
    let mut strategies: Vec<Strategy> = one_d.iter().map(|&dim| Strategy::OneD { dim }).collect();
    if strategies.is_empty() {
        for space in 0..n {
            for time in 0..n {
                if space != time
                    && vectors
                        .iter()
                        .all(|v| v.dist[space].is_zero() || v.dist[time].is_zero())
                {
                    strategies.push(Strategy::TwoD { space, time });
                }
            }
        }
    }
    for s in strategies {
        match place(spec, s) {
            Ok(placements) => candidates.push(Candidate {
                strategy: s,
                placements,
            }),
            Err(why) => rejected.push((s, why)),
        }
    }
    let reason = if !candidates.is_empty() {
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
        Some(no_strategy_reason(spec, &vectors))
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
        Strategy::OneD { dim } => format!("1D over `{}`", spec.dims[dim]),
        Strategy::TwoD { space, time } => format!(
            "2D (space `{}`, time `{}`)",
            spec.dims[space], spec.dims[time]
        ),
    }
}

/// The placement of every array under strategy `s`, or why some written array cannot be
/// split along the partitioned dims.
pub fn place(spec: &LoopSpec, s: Strategy) -> Result<Vec<Placement>, String> {
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
                Strategy::TwoD { space, time } => {
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

/// The axes of `array` whose subscript is the same single-dim affine form in every access.
pub fn alignments(spec: &LoopSpec, array: ArrayId) -> Vec<Align> {
    let accs: Vec<_> = spec.accesses.iter().filter(|a| a.array == array).collect();
    let Some(first) = accs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for axis in 0..first.subscripts.len() {
        let Subscript::Affine(f) = &first.subscripts[axis] else {
            continue;
        };
        let Some((dim, coeff)) = f.single_dim() else {
            continue;
        };
        if accs
            .iter()
            .all(|a| a.subscripts.get(axis) == Some(&first.subscripts[axis]))
        {
            out.push(Align {
                axis,
                dim,
                coeff,
                constant: f.constant,
            });
        }
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{access, spec, sub};

    fn sgd() -> LoopSpec {
        spec(
            2,
            &[2, 2],
            vec![
                access(0, true, vec![sub(&[1, 0], 0), Subscript::Full]),
                access(1, true, vec![sub(&[0, 1], 0), Subscript::Full]),
            ],
        )
    }

    #[test]
    fn sgd_mf_is_2d_both_ways() {
        let a = analyze(&sgd());
        let got: Vec<_> = a.candidates.iter().map(|c| c.strategy).collect();
        assert_eq!(
            got,
            vec![
                Strategy::TwoD { space: 0, time: 1 },
                Strategy::TwoD { space: 1, time: 0 }
            ]
        );
        let c = &a.candidates[0];
        assert!(matches!(
            c.placements[0],
            Placement::Local(Align {
                axis: 0,
                dim: 0,
                ..
            })
        ));
        assert!(matches!(
            c.placements[1],
            Placement::Rotated(Align {
                axis: 0,
                dim: 1,
                ..
            })
        ));
    }

    #[test]
    fn choose_rotates_the_smaller_array() {
        let a = analyze(&sgd());
        // a is 943 x 32, b is 1682 x 32: rotate a, so space is dim 1.
        let c = choose(&a, &[943 * 32, 1682 * 32], 2).unwrap();
        assert_eq!(c.strategy, Strategy::TwoD { space: 1, time: 0 });
        let c = choose(&a, &[2000 * 32, 1682 * 32], 2).unwrap();
        assert_eq!(c.strategy, Strategy::TwoD { space: 0, time: 1 });
    }

    #[test]
    fn row_update_is_1d() {
        // a[i, j] = f(b[j]) over (i, j): 1D over i and over j? b is read-only.
        let s = spec(
            2,
            &[2, 1],
            vec![
                access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
                access(1, false, vec![sub(&[0, 1], 0)]),
            ],
        );
        let a = analyze(&s);
        let got: Vec<_> = a.candidates.iter().map(|c| c.strategy).collect();
        assert_eq!(
            got,
            vec![Strategy::OneD { dim: 0 }, Strategy::OneD { dim: 1 }]
        );
        assert_eq!(a.candidates[0].placements[1], Placement::Shared);
    }

    #[test]
    fn unalignable_write_is_rejected_with_reason() {
        // a[2i] and a[2i + 1] written: independent, but not the same form.
        let s = spec(
            1,
            &[1],
            vec![
                access(0, true, vec![sub(&[2], 0)]),
                access(0, true, vec![sub(&[2], 1)]),
            ],
        );
        let a = analyze(&s);
        assert!(a.candidates.is_empty());
        assert_eq!(
            a.reason.as_deref(),
            Some(
                "the dependences allow 1D over `i`, but `a` is written and no subscript of it \
                 follows `i` alone, identically in every access"
            )
        );
    }

    #[test]
    fn serial_chain_has_a_reason() {
        let s = spec(
            1,
            &[1],
            vec![
                access(0, true, vec![sub(&[1], 0)]),
                access(0, false, vec![sub(&[1], -1)]),
            ],
        );
        let a = analyze(&s);
        assert!(a.candidates.is_empty());
        assert_eq!(
            a.reason.as_deref(),
            Some(
                "iterations with different `i` conflict: a[i] and a[i - 1] touch the same element of `a`"
            )
        );
    }

    #[test]
    fn image_of_ranges() {
        let a = Align {
            axis: 0,
            dim: 0,
            coeff: 2,
            constant: 1,
        };
        assert_eq!(a.image(0, 3, 100), (1, 6));
        let r = Align {
            axis: 0,
            dim: 0,
            coeff: -1,
            constant: 9,
        };
        assert_eq!(r.image(2, 5, 10), (5, 8));
        assert_eq!(r.image(0, 0, 10), (0, 0));
    }
}
