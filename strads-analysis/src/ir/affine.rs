//! Affine forms over the iteration dims, `sum(coeffs[d] * p[d]) + constant`: the subscripts
//! the analysis reasons about exactly, with the arithmetic the macro's walker evaluates
//! subscripts by (`add`, `sub`, `neg`, `scale`, and `mul` only when one side is a constant,
//! so a result is always affine) and their rendering with dim names.

use std::borrow::Cow;
use std::fmt;

use super::{DimId, List, Name};

/// An affine form over the iteration dims: `sum(coeffs[d] * p[d]) + constant`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Affine {
    /// One coefficient per iteration dim.
    pub coeffs: List<i64>,
    /// The constant term.
    pub constant: i64,
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
