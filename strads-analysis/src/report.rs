//! The human-readable analysis report: the generated struct's doc comment. Every line of it
//! is written here, from the spec and the analysis (and what the spec does not record: a
//! `sync` loop's mode, which reductions keep their terms), so the text is stable: it is
//! shown to users and kept in snapshots.

use std::fmt::Write;

use crate::dep::format_dist;
use crate::ir::{LoopSpec, ReduceOp, SpaceKind};
use crate::strategy::{Analysis, Placement, Strategy, describe};

/// The skew as the new dims in terms of the old: `j' = j + i`.
fn skew_text(spec: &LoopSpec, skew: &[Vec<i64>]) -> String {
    let rows: Vec<String> = skew
        .iter()
        .enumerate()
        .filter(|(k, row)| {
            row.iter()
                .enumerate()
                .any(|(l, &c)| c != i64::from(*k == l))
        })
        .map(|(k, row)| {
            let form = crate::ir::Affine {
                coeffs: row.clone().into(),
                constant: 0,
            };
            format!("{}' = {}", spec.dims[k], form.display(&spec.dims))
        })
        .collect();
    rows.join(", ")
}

/// Renders what the analysis found: dims, accesses, dependence vectors, the strategy and
/// why. Stable text: it is shown to users and kept in snapshots.
pub fn report(spec: &LoopSpec, analysis: &Analysis) -> String {
    let mut s = String::new();
    let dims: Vec<&str> = spec.dims.iter().map(|d| d.as_ref()).collect();
    let dims = dims.join(", ");
    let _ = match spec.space {
        SpaceKind::Array { array, sparse } => writeln!(
            s,
            "iteration space: `{}` ({}, dims: {dims})",
            spec.arrays[array].name,
            if sparse { "sparse" } else { "dense" }
        ),
        SpaceKind::Range => writeln!(s, "iteration space: range (dims: {dims})"),
    };
    if spec.ordered {
        s.push_str("ordered: dependences order iterations\n");
    }
    if spec.accesses.is_empty() {
        s.push_str("accesses: none\n");
    } else {
        s.push_str("accesses:\n");
        for a in spec.accesses.iter() {
            let _ = write!(s, "  {} {}", a.display(spec), a.kind);
            if a.line > 0 {
                let _ = write!(s, " (line {})", a.line);
            }
            s.push('\n');
        }
    }
    if analysis.vectors.is_empty() {
        s.push_str("dependence vectors: none\n");
    } else {
        let _ = writeln!(s, "dependence vectors over ({dims}):");
        for v in &analysis.vectors {
            let (a, b) = (&spec.accesses[v.src], &spec.accesses[v.dst]);
            let _ = writeln!(
                s,
                "  {} from {} {} and {} {}",
                format_dist(&v.dist),
                a.display(spec),
                a.kind,
                b.display(spec),
                b.kind
            );
        }
    }
    match analysis.candidates.first() {
        Some(c) => {
            let _ = writeln!(s, "strategy: {}", c.strategy.kind());
            if analysis.candidates.len() > 1 {
                s.push_str(
                    "candidates (the runtime picks the one that moves the fewest elements):\n",
                );
            } else {
                s.push_str("candidate:\n");
            }
            for c in &analysis.candidates {
                if let Strategy::Wavefront { .. } = c.strategy {
                    if !crate::unimodular::is_identity(&c.skew) {
                        let _ = writeln!(s, "  skew: {}", skew_text(spec, &c.skew));
                    }
                    let skewed: Vec<String> = analysis
                        .vectors
                        .iter()
                        .map(|v| format_dist(&crate::unimodular::skewed(&c.skew, &v.dist)))
                        .collect();
                    let _ = writeln!(
                        s,
                        "  dependence vectors of the tiled nest: {} (all non-negative: tiles run \
                         as a wavefront, each after the tiles above and before it)",
                        skewed.join(", ")
                    );
                }
                let parts: Vec<String> = c
                    .placements
                    .iter()
                    .zip(spec.arrays.iter())
                    .filter(|(p, _)| !matches!(p, Placement::Iterated | Placement::Unused))
                    .map(|(p, a)| format!("`{}` {p}", a.name))
                    .collect();
                let _ = writeln!(s, "  {}: {}", describe(spec, c.strategy), parts.join(", "));
            }
        }
        None => {
            let _ = writeln!(
                s,
                "strategy: none: {}",
                analysis.reason.as_deref().unwrap_or("no strategy applies")
            );
        }
    }
    if let Some(note) = crate::strategy::fallback_note(spec, analysis) {
        let _ = writeln!(s, "reconnaissance: {note}");
    }
    for (strategy, why) in &analysis.rejected {
        let _ = writeln!(s, "rejected {}: {why}", describe(spec, *strategy));
    }
    s
}

/// A `sync = ".."` loop, as its report tells it. The spec's buffers say the same (`average`,
/// `shared`, `merge`), but a loop that writes no array has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncReport<'a> {
    /// `sync = "hybrid"`: the threads of each process share one replica.
    pub hybrid: bool,
    /// `merge = f`: the function merging the replicas' differences, as written (without
    /// spaces); `None`: they are averaged.
    pub merge: Option<&'a str>,
}

/// The report's line on the loop's write-back buffers (`buffer(..)`) or, for a `sync` loop
/// (`sync`), its replicas: which arrays, and how and when their copies merge. Empty for a
/// loop with neither.
pub fn buffers_report(spec: &LoopSpec, sync: Option<SyncReport<'_>>) -> String {
    let names: Vec<String> = spec
        .buffers
        .iter()
        .map(|b| format!("`{}`", spec.arrays[b.array].name))
        .collect();
    match sync {
        Some(sync) => {
            let how = match sync.merge {
                None => "averaged".to_owned(),
                Some(m) => format!("summed and merged by `{m}`"),
            };
            if sync.hybrid {
                format!(
                    "sync = \"hybrid\" (data-parallel): the threads of each process share one \
                     replica of {} without locks (an iteration reads each row it touches once \
                     and adds its changes at its end); every {} iterations of each worker and at \
                     the end of every step and of the loop, the processes' differences are {} in \
                     rank order. Not reproducible: the result depends on the threads' timing, \
                     and is not that of a serial order (one thread runs the serial loop).\n",
                    names.join(", "),
                    spec.max_delay.unwrap_or(0),
                    how
                )
            } else if let Some(s) = Some(spec.staleness()).filter(|&s| s > 0) {
                format!(
                    "sync = \"ssp({s})\" (data-parallel): each worker updates its replica of {}; \
                     every {} iterations of each worker and at the end of the loop, the \
                     replicas' differences are {} in a fixed order, and a worker runs up to {s} \
                     batches ahead of the slowest: it starts batch k from the merge of every \
                     worker's batches before k - {s} plus its own since. Deterministic for a \
                     worker count, and one worker runs the serial loop, but with more the \
                     result is no longer that of a serial order.\n",
                    names.join(", "),
                    spec.max_delay.unwrap_or(0),
                    how
                )
            } else {
                format!(
                    "sync (data-parallel): each worker updates its replica of {}; every {} \
                     iterations of each worker and at the end of every step and of the loop, the \
                     replicas' differences are {} in a fixed order into every replica. \
                     Deterministic for a worker count, and one worker runs the serial loop, but \
                     with more the result is no longer that of a serial order.\n",
                    names.join(", "),
                    spec.max_delay.unwrap_or(0),
                    how
                )
            }
        }
        None if !spec.buffers.is_empty() => {
            let every = spec
                .max_delay
                .map(|n| format!(", every {n} iterations of each worker"))
                .unwrap_or_default();
            format!(
                "buffered: {} (exempt from the analysis: each worker updates its own copy with \
                 `+=`/`-=`; the copies' differences are applied in worker order at the end of \
                 every step{every} and of the loop)\n",
                names.join(", ")
            )
        }
        None => String::new(),
    }
}

/// The report's lines on the loop's reductions: each variable with its operator, and the
/// ones that keep each iteration's terms (`kept[r]` for `spec.reductions[r]`: an `ordered`
/// loop's float `+=`/`*=`). Empty for a loop without reductions.
pub fn reductions_report(spec: &LoopSpec, kept: &[bool]) -> String {
    if spec.reductions.is_empty() {
        return String::new();
    }
    let list: Vec<String> = spec
        .reductions
        .iter()
        .map(|r| format!("{} {}", r.name, op_text(r.op)))
        .collect();
    let mut s = format!(
        "reductions (per-block accumulators, folded in schedule order): {}\n",
        list.join(", ")
    );
    let logged: Vec<&str> = spec
        .reductions
        .iter()
        .zip(kept)
        .filter(|(_, kept)| **kept)
        .map(|(r, _)| r.name.as_ref())
        .collect();
    if !logged.is_empty() {
        let _ = writeln!(
            s,
            "exact in the serial order (ordered): {} keep each iteration's terms, added onto \
             the value before the loop in the serial order after the call",
            logged.join(", ")
        );
    }
    s
}

/// A reduction's operator as the user writes it.
fn op_text(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Add => "+=",
        ReduceOp::Mul => "*=",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Subscript;
    use crate::strategy::analyze;
    use crate::testutil::{access, spec, sub};

    #[test]
    fn sgd_report() {
        let s = spec(
            2,
            &[2, 2],
            vec![
                access(0, true, vec![sub(&[1, 0], 0), Subscript::Full]),
                access(1, true, vec![sub(&[0, 1], 0), Subscript::Full]),
            ],
        );
        let r = report(&s, &analyze(&s));
        assert_eq!(
            r,
            "iteration space: range (dims: i, j)
accesses:
  a[i, *] write
  b[j, *] write
dependence vectors over (i, j):
  (0, +inf) from a[i, *] write and a[i, *] write
  (+inf, 0) from b[j, *] write and b[j, *] write
strategy: 2d
candidates (the runtime picks the one that moves the fewest elements):
  2D (space `i`, time `j`): `a` local along axis 0, `b` rotated along axis 0
  2D (space `j`, time `i`): `a` rotated along axis 0, `b` local along axis 0
"
        );
    }
}

#[cfg(test)]
mod wavefront_report {
    use super::*;
    use crate::strategy::analyze;
    use crate::testutil::{access, spec, sub};

    #[test]
    fn skewed_gauss_seidel_report() {
        let mut s = spec(
            2,
            &[2],
            vec![
                access(0, false, vec![sub(&[1, 0], -1), sub(&[0, 1], 1)]),
                access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], -1)]),
                access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
            ],
        );
        s.ordered = true;
        assert_eq!(
            report(&s, &analyze(&s)),
            "iteration space: range (dims: i, j)
ordered: dependences order iterations
accesses:
  a[i - 1, j + 1] read
  a[i, j - 1] read
  a[i, j] write
dependence vectors over (i, j):
  (1, -1) from a[i - 1, j + 1] read and a[i, j] write
  (0, 1) from a[i, j - 1] read and a[i, j] write
strategy: unimodular
candidate:
  skew: j' = i + j
  dependence vectors of the tiled nest: (1, 0), (0, 1) (all non-negative: tiles run as a wavefront, each after the tiles above and before it)
  unimodular wavefront (tiles of skewed dims i x j): `a` tiled
"
        );
    }
}

#[cfg(test)]
mod buffers_and_reductions {
    use super::*;
    use crate::ir::{BufferSpec, ReductionSpec};
    use crate::testutil::spec;

    #[test]
    fn buffers() {
        let mut s = spec(1, &[1, 1], vec![]);
        assert_eq!(buffers_report(&s, None), "");
        s.buffers = vec![BufferSpec::new(0), BufferSpec::new(1)].into();
        assert_eq!(
            buffers_report(&s, None),
            "buffered: `a`, `b` (exempt from the analysis: each worker updates its own copy \
             with `+=`/`-=`; the copies' differences are applied in worker order at the end of \
             every step and of the loop)\n"
        );
        s.max_delay = Some(64);
        assert!(
            buffers_report(&s, None).contains("every step, every 64 iterations of each worker and")
        );
    }

    /// A `sync` loop names its replicas (none when it writes no array) and how they merge.
    #[test]
    fn sync() {
        let mut s = spec(1, &[1], vec![]);
        s.max_delay = Some(1024);
        let averaged = SyncReport {
            hybrid: false,
            merge: None,
        };
        assert_eq!(
            buffers_report(&s, Some(averaged)),
            "sync (data-parallel): each worker updates its replica of ; every 1024 iterations \
             of each worker and at the end of every step and of the loop, the replicas' \
             differences are averaged in a fixed order into every replica. Deterministic for a \
             worker count, and one worker runs the serial loop, but with more the result is no \
             longer that of a serial order.\n"
        );
        s.buffers = vec![BufferSpec::new(0).averaged().ssp(2)].into();
        assert_eq!(
            buffers_report(
                &s,
                Some(SyncReport {
                    hybrid: false,
                    merge: None,
                })
            ),
            "sync = \"ssp(2)\" (data-parallel): each worker updates its replica of `a`; every \
             1024 iterations of each worker and at the end of the loop, the replicas' \
             differences are averaged in a fixed order, and a worker runs up to 2 batches ahead \
             of the slowest: it starts batch k from the merge of every worker's batches before \
             k - 2 plus its own since. Deterministic for a worker count, and one worker runs \
             the serial loop, but with more the result is no longer that of a serial order.\n"
        );
        s.buffers = vec![BufferSpec::new(0).averaged()].into();
        let hybrid = SyncReport {
            hybrid: true,
            merge: Some("strads::merge::sum"),
        };
        assert_eq!(
            buffers_report(&s, Some(hybrid)),
            "sync = \"hybrid\" (data-parallel): the threads of each process share one replica \
             of `a` without locks (an iteration reads each row it touches once and adds its \
             changes at its end); every 1024 iterations of each worker and at the end of every \
             step and of the loop, the processes' differences are summed and merged by \
             `strads::merge::sum` in rank order. Not reproducible: the result depends on the \
             threads' timing, and is not that of a serial order (one thread runs the serial \
             loop).\n"
        );
    }

    #[test]
    fn reductions() {
        let mut s = spec(1, &[1], vec![]);
        assert_eq!(reductions_report(&s, &[]), "");
        s.reductions = vec![
            ReductionSpec::new("t", ReduceOp::Add),
            ReductionSpec::new("p", ReduceOp::Mul),
            ReductionSpec::new("m", ReduceOp::Max),
        ]
        .into();
        assert_eq!(
            reductions_report(&s, &[false, false, false]),
            "reductions (per-block accumulators, folded in schedule order): t +=, p *=, m max\n"
        );
        assert_eq!(
            reductions_report(&s, &[true, true, false]),
            "reductions (per-block accumulators, folded in schedule order): t +=, p *=, m max\n\
             exact in the serial order (ordered): t, p keep each iteration's terms, added onto \
             the value before the loop in the serial order after the call\n"
        );
    }
}
