//! What a task may touch of one array, and the check that two windows overlap a write.

use std::sync::Arc;

use strads_analysis::Align;

/// What a worker may touch of one array in one task.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub enum Window {
    /// Every element; writable or read-only.
    All { writable: bool },
    /// Indices with `lo <= idx[axis] < hi`.
    Range {
        axis: usize,
        lo: usize,
        hi: usize,
        writable: bool,
    },
    /// A wavefront tile (see [`TileWindow`]).
    Tiles(Arc<TileWindow>),
    /// Indices `x` of `align.axis` that iterations with `p[align.dim]` in `lo..hi` reach
    /// ([`Align::holds`]): writable ones through a write, readable through any access
    /// (strided subscripts such as `x[2*k + 1]` beside `x[2*k]`).
    Lattice {
        align: Align,
        lo: usize,
        hi: usize,
        writable: bool,
    },
    /// Reconnaissance: row `i` of the array (its elements with first index `i`; in one dim
    /// the element) may be written when entry `base + i` of the call's ownership table
    /// holds the stamp of `(batch, claimant)`, read when it holds that stamp or no claim of
    /// this batch.
    Owned {
        base: usize,
        batch: usize,
        claimant: Claimant,
    },
}

/// Who holds a claim in a batch of reconnaissance.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Claimant {
    /// A worker, for its task groups.
    Worker(usize),
    /// Nobody: the rows of split components until a piece claims them.
    Nobody,
    /// Piece `k` of the batch.
    Piece(usize),
    /// The rows worker `w`'s tasks only read in the batch (nobody writes them in it): all
    /// readers' claims carry one stamp, `READERS`, so every reader may read them. How a
    /// rank knows which reads are current there in a call across processes.
    Readers(usize),
}

/// The claimant bits of a [`Claimant::Readers`] stamp (no worker or piece has them).
pub(crate) const READERS: u64 = (1 << WORKER_BITS) - 1;

/// The bits of an ownership stamp that name the claimant; the others name the call and
/// the batch.
pub(crate) const WORKER_BITS: u32 = 16;

/// The stamp of a claim: plan call `call` (counted per plan), batch `batch`, `claimant`
/// among `workers`. Every claim of an earlier batch or call differs in the bits above
/// [`WORKER_BITS`], so it reads as unclaimed.
pub(crate) fn stamp(call: u64, batch: usize, claimant: Claimant, workers: usize) -> u64 {
    let who = match claimant {
        Claimant::Worker(w) => w as u64 + 1,
        Claimant::Nobody => workers as u64 + 1,
        Claimant::Piece(k) => (workers + 1 + k) as u64 + 1,
        Claimant::Readers(_) => READERS,
    };
    debug_assert!(who < READERS || matches!(claimant, Claimant::Readers(_)));
    ((call << 24 | (batch as u64 + 1)) << WORKER_BITS) | who
}

/// The elements a wavefront tile may touch. Two linear forms over the index,
/// `forms[k] . idx`, place an element in the skewed iteration space; each region is a box
/// of form values: the tile's box shifted by one access's constant offsets. An element may
/// be written when a write region holds it, read when any region does.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TileWindow {
    pub(crate) forms: [Vec<i64>; 2],
    /// `Some([a, b])` when the forms are the axes `a` and `b` themselves.
    pub(crate) unit: Option<[usize; 2]>,
    pub(crate) write: Vec<[(i64, i64); 2]>,
    pub(crate) read: Vec<[(i64, i64); 2]>,
}

impl TileWindow {
    /// The form values of index `idx`.
    #[inline(always)]
    pub(crate) fn values(&self, idx: &[usize]) -> (i64, i64) {
        // Unskewed tiles: each form is one axis, no arithmetic.
        if let Some([a, b]) = self.unit {
            return (idx[a] as i64, idx[b] as i64);
        }
        let mut f = (0i64, 0i64);
        for (a, &x) in idx.iter().enumerate() {
            f.0 += self.forms[0][a] * x as i64;
            f.1 += self.forms[1][a] * x as i64;
        }
        f
    }

    /// Whether a region holds the form values.
    #[inline(always)]
    pub(crate) fn holds(regions: &[[(i64, i64); 2]], (f0, f1): (i64, i64)) -> bool {
        regions
            .iter()
            .any(|r| r[0].0 <= f0 && f0 < r[0].1 && r[1].0 <= f1 && f1 < r[1].1)
    }

    /// The least and greatest value of each form over row `i` of an array whose rows have
    /// shape `inner` (every index of the axes after the first).
    fn row_bounds(&self, i: usize, inner: &[usize]) -> [(i64, i64); 2] {
        [0, 1].map(|k| {
            let f = &self.forms[k];
            let at_row = f[0] * i as i64;
            inner
                .iter()
                .zip(&f[1..])
                .fold((at_row, at_row), |(lo, hi), (&n, &c)| {
                    let span = c * n.saturating_sub(1) as i64;
                    (lo + span.min(0), hi + span.max(0))
                })
        })
    }

    /// Whether row `i` lies whole inside one region (a write region when `write`): a row
    /// view (`row`, `row_mut`) reaches every element of it. Exact when the forms ignore
    /// the axes after the first (a tiled array indexed by rows, as `w.row_mut(u)`).
    pub(crate) fn holds_row(&self, i: usize, inner: &[usize], write: bool) -> bool {
        let b = self.row_bounds(i, inner);
        let inside = |r: &[(i64, i64); 2]| (0..2).all(|k| r[k].0 <= b[k].0 && b[k].1 < r[k].1);
        self.write.iter().any(inside) || (!write && self.read.iter().any(inside))
    }

    /// Rows `lo..hi` (of `rows`) that lie whole inside the first write region when the
    /// forms ignore the axes after the first and follow the first by 0 or 1: the rows a
    /// view may reach with one comparison. `(0, 0)` when there are none or the forms are
    /// other.
    pub(crate) fn whole_rows(&self, rows: usize) -> (usize, usize) {
        let Some(r) = self.write.first() else {
            return (0, 0);
        };
        let (mut lo, mut hi) = (0i64, rows as i64);
        for (f, &(rlo, rhi)) in self.forms.iter().zip(r) {
            if f[1..].iter().any(|&c| c != 0) {
                return (0, 0);
            }
            match f[0] {
                0 if rlo <= 0 && 0 < rhi => {}
                1 => (lo, hi) = (lo.max(rlo), hi.min(rhi)),
                _ => return (0, 0),
            }
        }
        if lo < hi {
            (lo as usize, hi as usize)
        } else {
            (0, 0)
        }
    }

    /// Whether two boxes of form values intersect.
    pub(crate) fn overlap(a: &[(i64, i64); 2], b: &[(i64, i64); 2]) -> bool {
        a.iter().zip(b).all(|(x, y)| x.0 < y.1 && y.0 < x.1)
    }
}

impl Window {
    /// Whether the window lets a task read (`write = false`) or write element `idx`;
    /// `None` for an ownership window, which only the call's claims decide.
    pub fn admits(&self, idx: &[usize], write: bool) -> Option<bool> {
        let ok = match self {
            Window::All { writable } => !write || *writable,
            Window::Range {
                axis,
                lo,
                hi,
                writable,
            } => (!write || *writable) && (*lo..*hi).contains(&idx[*axis]),
            Window::Lattice {
                align,
                lo,
                hi,
                writable,
            } => (!write || *writable) && align.holds(*lo, *hi, idx[align.axis], write),
            Window::Tiles(t) => {
                let f = t.values(idx);
                TileWindow::holds(&t.write, f) || (!write && TileWindow::holds(&t.read, f))
            }
            Window::Owned { .. } => return None,
        };
        Some(ok)
    }

    /// Whether the window lets its task write some element (ownership windows may).
    pub fn writable(&self) -> bool {
        match self {
            Window::All { writable }
            | Window::Range { writable, .. }
            | Window::Lattice { writable, .. } => *writable,
            Window::Tiles(t) => !t.write.is_empty(),
            Window::Owned { .. } => true,
        }
    }
}

/// Whether windows `a` and `b` of one array (of shape `shape`) share an element that one
/// of them may write. Conservative where it cannot tell: windows of different kinds or
/// axes clash when one writes. Ownership windows never clash here: their exclusivity is
/// checked on every access against the claims, not planned.
pub(crate) fn clash(a: &Window, b: &Window, shape: Option<&[usize]>) -> bool {
    if !a.writable() && !b.writable() {
        return false;
    }
    match (a, b) {
        (Window::Owned { .. }, _) | (_, Window::Owned { .. }) => false,
        (
            Window::Range {
                axis: x,
                lo: l1,
                hi: h1,
                ..
            },
            Window::Range {
                axis: y,
                lo: l2,
                hi: h2,
                ..
            },
        ) if x == y => l1.max(l2) < h1.min(h2),
        (
            Window::Lattice {
                align: a1,
                lo: l1,
                hi: h1,
                writable: wa,
            },
            Window::Lattice {
                align: a2,
                lo: l2,
                hi: h2,
                writable: wb,
            },
        ) if a1 == a2 => {
            let extent = shape.and_then(|s| s.get(a1.axis)).copied().unwrap_or(0);
            (0..extent).any(|x| {
                (*wa && a1.holds(*l1, *h1, x, true) && a2.holds(*l2, *h2, x, false))
                    || (*wb && a2.holds(*l2, *h2, x, true) && a1.holds(*l1, *h1, x, false))
            })
        }
        (Window::Tiles(x), Window::Tiles(y)) => {
            let one_way = |a: &TileWindow, b: &TileWindow| {
                a.write
                    .iter()
                    .any(|w| b.read.iter().any(|r| TileWindow::overlap(w, r)))
            };
            one_way(x, y) || one_way(y, x)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ordered 2D tile of `w` (rows follow the space dim, columns unbounded): the rows of
    /// its write region are whole inside it, for views and for the one-comparison range;
    /// rows of its read region are for reading only; others are outside.
    #[test]
    fn tile_rows_follow_the_forms() {
        let t = TileWindow {
            forms: [vec![1, 0], vec![0, 0]],
            unit: None,
            write: vec![[(2, 5), (i64::MIN, i64::MAX)]],
            read: vec![[(1, 2), (i64::MIN, i64::MAX)]],
        };
        assert_eq!(t.whole_rows(10), (2, 5));
        assert_eq!(t.whole_rows(4), (2, 4));
        assert!(t.holds_row(4, &[8], true));
        assert!(!t.holds_row(5, &[8], false));
        assert!(t.holds_row(1, &[8], false));
        assert!(!t.holds_row(1, &[8], true));
        // Forms that follow a column axis: a row spans many values of them; it is inside
        // only when one region holds every value, and no fast range is given.
        let skewed = TileWindow {
            forms: [vec![1, 1], vec![0, 1]],
            unit: None,
            write: vec![[(0, 10), (0, 3)]],
            read: Vec::new(),
        };
        assert_eq!(skewed.whole_rows(10), (0, 0));
        assert!(skewed.holds_row(2, &[3], true), "values 2..=4 and 0..=2");
        assert!(!skewed.holds_row(2, &[4], true), "column 3 is outside");
        assert!(!skewed.holds_row(8, &[3], true), "value 10 is outside");
    }
}
