//! Placement: where each array lives under a strategy (`Placement`), and the alignments
//! that allow splitting a written array (`Align`). A written array is split only along an
//! axis whose subscript is `c * p[d] + k` with the same dim and coefficient in every
//! access and no written constant congruent to another modulo `c`, so the pieces that
//! disjoint ranges of the dim own never share an element; otherwise the strategy is
//! rejected, with the reason.

use std::fmt;

use super::Strategy;
use crate::ir::{AccessKind, ArrayId, DimId, LoopSpec, Subscript};
use crate::unimodular;

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

pub(super) fn place_skewed(
    spec: &LoopSpec,
    s: Strategy,
    skew: &[Vec<i64>],
) -> Result<Vec<Placement>, String> {
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
