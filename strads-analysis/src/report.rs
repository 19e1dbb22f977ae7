//! The human-readable analysis report: the generated struct's doc comment.

use std::fmt::Write;

use crate::dep::format_dist;
use crate::ir::{LoopSpec, SpaceKind};
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
