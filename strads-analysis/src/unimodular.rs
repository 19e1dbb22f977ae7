//! Unimodular transformation (Wolf and Lam; Orion sect. 3.4.1, case 3): skew the nest so
//! every dependence vector becomes non-negative (a fully permutable nest), then tile two
//! skewed dims and run the tiles as a wavefront: tile `(s, t)` after `(s - 1, t)` and
//! `(s, t - 1)`. All dependences then point from a tile to tiles with larger-or-equal
//! coordinates, so tiles on one anti-diagonal are independent, and running each tile's
//! iterations in the original order keeps the dependences inside a tile.

use crate::dep::{DepVector, Dist};

/// Lower bound of a component (`+inf` is at least 1); `None` for `-inf` and `*`.
fn lower(c: Dist) -> Option<i64> {
    match c {
        Dist::Exact(n) => Some(n),
        Dist::Pos => Some(1),
        Dist::Neg | Dist::Any => None,
    }
}

/// A skew `S` (lower unitriangular, non-negative integers) such that `S d >= 0` in every
/// component for every dependence vector `d`, or why none exists.
///
/// Row `k` of `S` adds multiples of outer dims to dim `k`. For a vector whose component `k`
/// is negative, the vector's leading component (positive, as the vector is lexicographically
/// positive) lies further out; skewing dim `k` by that outer dim enough times makes the
/// component non-negative. Components `-inf` and `*` cannot be bounded: no skew exists.
pub fn skew(vectors: &[DepVector], n: usize) -> Result<Vec<Vec<i64>>, String> {
    let mut s: Vec<Vec<i64>> = (0..n)
        .map(|k| (0..n).map(|l| i64::from(k == l)).collect())
        .collect();
    for v in vectors {
        if let Some(k) = v.dist.iter().position(|c| lower(*c).is_none()) {
            return Err(format!(
                "the dependence vector {} has an unbounded component ({}) at dim {k}, so no \
                 skew makes the nest fully permutable",
                crate::dep::format_dist(&v.dist),
                v.dist[k]
            ));
        }
    }
    // Each row only grows, and each growth makes one vector's component non-negative
    // without lowering the others (coefficients and leading components are non-negative,
    // and middle components are bounded below), so a few passes settle.
    for _pass in 0..(n + 1) * 4 {
        let mut changed = false;
        for (k, row) in s.iter_mut().enumerate().skip(1) {
            for v in vectors {
                let lb: i64 = (0..=k)
                    .map(|l| row[l] * lower(v.dist[l]).expect("bounded"))
                    .sum();
                if lb >= 0 {
                    continue;
                }
                let Some(lead) = (0..k).find(|&l| lower(v.dist[l]).is_some_and(|x| x > 0)) else {
                    return Err(format!(
                        "the dependence vector {} is negative at dim {k} with no positive \
                         component further out to skew by",
                        crate::dep::format_dist(&v.dist)
                    ));
                };
                let step = lower(v.dist[lead]).expect("bounded");
                row[lead] += (-lb + step - 1) / step;
                changed = true;
            }
        }
        if !changed {
            return Ok(s);
        }
    }
    Err("skewing did not converge".into())
}

/// `S d`, componentwise: exact when every term is exact, `+inf` when a positive term is
/// unbounded.
pub fn skewed(s: &[Vec<i64>], d: &[Dist]) -> Vec<Dist> {
    s.iter()
        .map(|row| {
            let mut exact = 0i64;
            let mut unbounded = false;
            for (&c, &x) in row.iter().zip(d) {
                if c == 0 {
                    continue;
                }
                match x {
                    Dist::Exact(n) => exact += c * n,
                    _ => unbounded = true,
                }
            }
            if unbounded {
                Dist::Pos
            } else {
                Dist::Exact(exact)
            }
        })
        .collect()
}

/// `S p` for an iteration point.
pub fn apply(s: &[Vec<i64>], p: &[i64]) -> Vec<i64> {
    s.iter()
        .map(|row| row.iter().zip(p).map(|(c, x)| c * x).sum())
        .collect()
}

/// Whether `s` is the identity.
pub fn is_identity(s: &[Vec<i64>]) -> bool {
    s.iter()
        .enumerate()
        .all(|(k, row)| row.iter().enumerate().all(|(l, &c)| c == i64::from(k == l)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(d: &[Dist]) -> DepVector {
        DepVector {
            dist: d.to_vec(),
            src: 0,
            dst: 0,
        }
    }

    #[test]
    fn non_negative_vectors_need_no_skew() {
        let vs = [
            v(&[Dist::Exact(1), Dist::Exact(0)]),
            v(&[Dist::Exact(0), Dist::Exact(1)]),
            v(&[Dist::Exact(1), Dist::Exact(1)]),
        ];
        let s = skew(&vs, 2).unwrap();
        assert!(is_identity(&s));
    }

    #[test]
    fn skews_negative_components() {
        // 9-point Gauss-Seidel: (1, -1) needs j' = j + i.
        let vs = [
            v(&[Dist::Exact(1), Dist::Exact(-1)]),
            v(&[Dist::Exact(0), Dist::Exact(1)]),
        ];
        let s = skew(&vs, 2).unwrap();
        assert_eq!(s, vec![vec![1, 0], vec![1, 1]]);
        for x in &vs {
            assert!(skewed(&s, &x.dist).iter().all(|c| lower(*c).unwrap() >= 0));
        }
        // (1, -3) and (2, -3): factor 3 and 2 → 3.
        let vs = [
            v(&[Dist::Exact(1), Dist::Exact(-3)]),
            v(&[Dist::Exact(2), Dist::Exact(-3)]),
        ];
        assert_eq!(skew(&vs, 2).unwrap(), vec![vec![1, 0], vec![3, 1]]);
        // +inf leading: (+inf, -2) needs factor 2.
        let vs = [v(&[Dist::Pos, Dist::Exact(-2)])];
        assert_eq!(skew(&vs, 2).unwrap(), vec![vec![1, 0], vec![2, 1]]);
    }

    #[test]
    fn three_dims() {
        let vs = [
            v(&[Dist::Exact(0), Dist::Exact(1), Dist::Exact(-1)]),
            v(&[Dist::Exact(1), Dist::Exact(-2), Dist::Exact(0)]),
        ];
        let s = skew(&vs, 3).unwrap();
        for x in &vs {
            assert!(
                skewed(&s, &x.dist).iter().all(|c| lower(*c).unwrap() >= 0),
                "{s:?}"
            );
        }
    }

    #[test]
    fn unbounded_components_have_no_skew() {
        let vs = [v(&[Dist::Exact(1), Dist::Any])];
        assert!(
            skew(&vs, 2)
                .unwrap_err()
                .contains("unbounded component (*)")
        );
        let vs = [v(&[Dist::Exact(0), Dist::Pos]), v(&[Dist::Pos, Dist::Neg])];
        assert!(skew(&vs, 2).is_err());
    }
}
