//! Dependence vectors (Orion sect. 3.4.1; Wolf and Lam's notation).
//!
//! For every pair of accesses to the same array with at least one write, we ask which
//! distances `d = q - p` between a source iteration `p` and a sink iteration `q` can make
//! both touch the same element. Each answer is a vector over the iteration dims whose
//! components are exact distances, `+inf` (some positive distance), `-inf` or `*` (any),
//! normalised to be lexicographically positive. The vectors over-approximate the real
//! dependences: a pair absent from them never conflicts. The brute-force tests check it.

use std::fmt;

use crate::ir::{Access, AccessKind, LoopSpec, Subscript};

/// One component of a dependence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dist {
    /// Exactly this distance.
    Exact(i64),
    /// Some positive distance (`+inf`).
    Pos,
    /// Some negative distance (`-inf`).
    Neg,
    /// Any distance, zero included (`*`).
    Any,
}

impl Dist {
    /// Whether the component is `0` in every dependence the vector stands for.
    pub fn is_zero(self) -> bool {
        self == Dist::Exact(0)
    }

    /// Whether the component is finite (an exact distance).
    pub fn is_exact(self) -> bool {
        matches!(self, Dist::Exact(_))
    }

    /// The component of the reversed dependence.
    pub fn negate(self) -> Dist {
        match self {
            Dist::Exact(n) => Dist::Exact(-n),
            Dist::Pos => Dist::Neg,
            Dist::Neg => Dist::Pos,
            Dist::Any => Dist::Any,
        }
    }

    /// Whether the distance `x` is one this component stands for.
    pub fn contains(self, x: i64) -> bool {
        match self {
            Dist::Exact(n) => n == x,
            Dist::Pos => x > 0,
            Dist::Neg => x < 0,
            Dist::Any => true,
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Exact(n) => write!(f, "{n}"),
            Dist::Pos => f.write_str("+inf"),
            Dist::Neg => f.write_str("-inf"),
            Dist::Any => f.write_str("*"),
        }
    }
}

/// A lexicographically positive dependence vector and the accesses it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepVector {
    /// One component per iteration dim.
    pub dist: Vec<Dist>,
    /// Index of the earlier access in [`LoopSpec::accesses`].
    pub src: usize,
    /// Index of the later access in [`LoopSpec::accesses`].
    pub dst: usize,
}

impl DepVector {
    /// Whether the vector contains the distance `d` (one coordinate per dim).
    pub fn contains(&self, d: &[i64]) -> bool {
        self.dist.iter().zip(d).all(|(c, x)| c.contains(*x))
    }
}

/// Renders a vector as `(0, +inf)`.
pub fn format_dist(dist: &[Dist]) -> String {
    let parts: Vec<String> = dist.iter().map(|c| c.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// Every dependence vector of the loop, lexicographically positive, deduplicated, in the
/// order of the access pairs that produce them.
pub fn dependence_vectors(spec: &LoopSpec) -> Vec<DepVector> {
    let mut out: Vec<DepVector> = Vec::new();
    for v in dependence_pairs(spec) {
        if !out.iter().any(|u| u.dist == v.dist) {
            out.push(v);
        }
    }
    out
}

/// Like [`dependence_vectors`], but every pair of accesses keeps its own vectors, even when
/// an earlier pair has the same distance: for naming each access that takes part in a
/// dependence.
pub fn dependence_pairs(spec: &LoopSpec) -> Vec<DepVector> {
    let n = spec.n_dims();
    let mut out: Vec<DepVector> = Vec::new();
    let acc = &spec.accesses;
    for i in 0..acc.len() {
        for j in i..acc.len() {
            let (a, b) = (&acc[i], &acc[j]);
            if a.array != b.array || (a.kind == AccessKind::Read && b.kind == AccessKind::Read) {
                continue;
            }
            let Some(raw) = pair_distance(a, b, n) else {
                continue;
            };
            // The pair (a at p, b at q) and (b at p, a at q) are the same pairs of
            // iterations with d negated; normalising covers both directions.
            for dist in lex_positive(&raw) {
                if !out
                    .iter()
                    .any(|v| v.dist == dist && (v.src, v.dst) == (i, j))
                {
                    out.push(DepVector {
                        dist,
                        src: i,
                        dst: j,
                    });
                }
            }
        }
    }
    out
}

/// The distances `d = q - p` for which access `a` at `p` and access `b` at `q` can touch
/// the same element: one component per dim, `Exact` or `Any`. `None` when they never do.
fn pair_distance(a: &Access, b: &Access, n: usize) -> Option<Vec<Dist>> {
    // Equations `sum(c[k] * d[k]) = r` from axes where both sides have the same
    // coefficients: then `c.p + k1 = c.q + k2` is `c.(q - p) = k1 - k2`.
    let mut eqs: Vec<(Vec<i64>, i64)> = Vec::new();
    for (sa, sb) in a.subscripts.iter().zip(b.subscripts.iter()) {
        let (Subscript::Affine(fa), Subscript::Affine(fb)) = (sa, sb) else {
            continue; // `*` or indirect on either side: every element may meet.
        };
        if fa.coeffs == fb.coeffs {
            eqs.push((fa.coeffs.to_vec(), fa.constant - fb.constant));
        } else {
            // `fa.p - fb.q = kb - ka` needs the gcd of all coefficients to divide the
            // right-hand side; otherwise the two never touch the same element.
            let g = fa
                .coeffs
                .iter()
                .chain(fb.coeffs.iter())
                .fold(0i64, |g, &c| gcd(g, c));
            let r = fb.constant - fa.constant;
            if (g == 0 && r != 0) || (g != 0 && r % g != 0) {
                return None;
            }
        }
    }
    solve(eqs, n)
}

/// Solves what it can of `c.d = r` by substitution: a dim pinned by an equation with one
/// unknown gets its exact value; the rest stay `Any`. `None` when the system has no
/// integer solution.
fn solve(mut eqs: Vec<(Vec<i64>, i64)>, n: usize) -> Option<Vec<Dist>> {
    let mut known: Vec<Option<i64>> = vec![None; n];
    loop {
        let mut progressed = false;
        for (c, r) in &mut eqs {
            // Substitute known values.
            for k in 0..n {
                if c[k] != 0 {
                    if let Some(v) = known[k] {
                        *r -= c[k] * v;
                        c[k] = 0;
                    }
                }
            }
            let unknown: Vec<usize> = (0..n).filter(|&k| c[k] != 0).collect();
            match unknown.as_slice() {
                [] if *r != 0 => return None,
                [] => {}
                [k] => {
                    if *r % c[*k] != 0 {
                        return None;
                    }
                    known[*k] = Some(*r / c[*k]);
                    c[*k] = 0;
                    *r = 0;
                    progressed = true;
                }
                many => {
                    let g = many.iter().fold(0, |g, &k| gcd(g, c[k]));
                    if *r % g != 0 {
                        return None;
                    }
                }
            }
        }
        if !progressed {
            break;
        }
    }
    Some(
        known
            .into_iter()
            .map(|k| k.map_or(Dist::Any, Dist::Exact))
            .collect(),
    )
}

/// Splits a raw distance vector (components `Exact` or `Any`) into lexicographically
/// positive vectors; the all-zero part (the same iteration) is dropped.
pub(crate) fn lex_positive(raw: &[Dist]) -> Vec<Vec<Dist>> {
    let mut out = Vec::new();
    let mut prefix: Vec<Dist> = Vec::new();
    for (k, &c) in raw.iter().enumerate() {
        let rest = &raw[k + 1..];
        match c {
            Dist::Exact(0) => {
                prefix.push(c);
                continue;
            }
            Dist::Exact(x) if x > 0 => push_vec(&mut out, &prefix, c, rest, false),
            Dist::Exact(_) | Dist::Neg => push_vec(&mut out, &prefix, c.negate(), rest, true),
            Dist::Pos => push_vec(&mut out, &prefix, c, rest, false),
            Dist::Any => {
                // `*` = `+inf` or `0` or `-inf`; the negative part is the reversed pair.
                push_vec(&mut out, &prefix, Dist::Pos, rest, false);
                push_vec(&mut out, &prefix, Dist::Pos, rest, true);
                prefix.push(Dist::Exact(0));
                continue;
            }
        }
        return out;
    }
    out
}

fn push_vec(out: &mut Vec<Vec<Dist>>, prefix: &[Dist], lead: Dist, rest: &[Dist], neg: bool) {
    let mut v = prefix.to_vec();
    v.push(lead);
    v.extend(rest.iter().map(|c| if neg { c.negate() } else { *c }));
    if !out.contains(&v) {
        out.push(v);
    }
}

pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{access, spec, sub};

    fn vecs(s: &LoopSpec) -> Vec<String> {
        dependence_vectors(s)
            .iter()
            .map(|v| format_dist(&v.dist))
            .collect()
    }

    #[test]
    fn sgd_mf_rows() {
        // w[u, *] write, h[i, *] write over (u, i).
        let s = spec(
            2,
            &[2, 2],
            vec![
                access(0, true, vec![sub(&[1, 0], 0), Subscript::Full]),
                access(1, true, vec![sub(&[0, 1], 0), Subscript::Full]),
            ],
        );
        assert_eq!(vecs(&s), vec!["(0, +inf)", "(+inf, 0)"]);
    }

    #[test]
    fn stencil_distances() {
        // a[i, j] write, a[i - 1, j] read, a[i, j - 1] read.
        let s = spec(
            2,
            &[2],
            vec![
                access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
                access(0, false, vec![sub(&[1, 0], -1), sub(&[0, 1], 0)]),
                access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], -1)]),
            ],
        );
        assert_eq!(vecs(&s), vec!["(1, 0)", "(0, 1)"]);
    }

    #[test]
    fn non_divisible_and_gcd_mean_independent() {
        // a[2i] write, a[2i + 1] read: never the same element.
        let s = spec(
            1,
            &[1],
            vec![
                access(0, true, vec![sub(&[2], 0)]),
                access(0, false, vec![sub(&[2], 1)]),
            ],
        );
        assert!(vecs(&s).is_empty());
        // a[2i] write, a[4i + 1] read: gcd 2 does not divide 1.
        let s = spec(
            1,
            &[1],
            vec![
                access(0, true, vec![sub(&[2], 0)]),
                access(0, false, vec![sub(&[4], 1)]),
            ],
        );
        assert!(vecs(&s).is_empty());
    }

    #[test]
    fn constant_subscript_conflicts_everywhere() {
        let s = spec(2, &[1], vec![access(0, true, vec![sub(&[0, 0], 3)])]);
        assert_eq!(vecs(&s), vec!["(+inf, *)", "(0, +inf)"]);
    }

    #[test]
    fn coupled_dims_stay_unknown() {
        // a[i + j] write: d_i + d_j = 0.
        let s = spec(2, &[1], vec![access(0, true, vec![sub(&[1, 1], 0)])]);
        assert_eq!(vecs(&s), vec!["(+inf, *)", "(0, +inf)"]);
    }

    #[test]
    fn lex_positive_splits_any() {
        let v = lex_positive(&[Dist::Any, Dist::Exact(1)]);
        assert_eq!(
            v,
            vec![
                vec![Dist::Pos, Dist::Exact(1)],
                vec![Dist::Pos, Dist::Exact(-1)],
                vec![Dist::Exact(0), Dist::Exact(1)],
            ]
        );
        assert!(lex_positive(&[Dist::Exact(0), Dist::Exact(0)]).is_empty());
        assert_eq!(
            lex_positive(&[Dist::Exact(-2), Dist::Any]),
            vec![vec![Dist::Exact(2), Dist::Any]]
        );
    }
}
