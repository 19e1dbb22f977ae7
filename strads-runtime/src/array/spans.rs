//! [`Spans`]: a set of element positions kept as sorted, disjoint ranges: the parts of a
//! driver's array that serial code has read home while the rest stays on other ranks
//! (`array::away`).

/// Sorted, disjoint, non-empty ranges `[lo, hi)` of element positions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spans(Vec<(usize, usize)>);

impl Spans {
    /// Whether no position is in the set.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Positions in the set.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(|(lo, hi)| hi - lo).sum()
    }

    /// Whether every position of `[lo, hi)` is in the set.
    pub(crate) fn covers(&self, lo: usize, hi: usize) -> bool {
        if lo >= hi {
            return true;
        }
        // The last range starting at or before `lo`.
        let i = self.0.partition_point(|&(a, _)| a <= lo);
        i > 0 && self.0[i - 1].1 >= hi
    }

    /// The range of the set that holds all of `[lo, hi)`, if one does.
    pub(crate) fn containing(&self, lo: usize, hi: usize) -> Option<(usize, usize)> {
        let i = self.0.partition_point(|&(a, _)| a <= lo);
        let r = *self.0.get(i.checked_sub(1)?)?;
        (r.1 >= hi).then_some(r)
    }

    /// Adds `[lo, hi)`, merging it with the ranges it touches.
    pub(crate) fn insert(&mut self, lo: usize, hi: usize) {
        if lo >= hi {
            return;
        }
        let first = self.0.partition_point(|&(_, b)| b < lo);
        let last = self.0.partition_point(|&(a, _)| a <= hi);
        let (mut a, mut b) = (lo, hi);
        if first < last {
            a = a.min(self.0[first].0);
            b = b.max(self.0[last - 1].1);
        }
        self.0.splice(first..last, [(a, b)]);
    }

    /// The parts of `ranges` (sorted, disjoint) outside the set, in order.
    pub(crate) fn outside(&self, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for &(lo, hi) in ranges {
            let mut at = lo as usize;
            let hi = hi as usize;
            let mut i = self.0.partition_point(|&(_, b)| b <= at);
            while at < hi {
                match self.0.get(i) {
                    Some(&(a, b)) if a < hi => {
                        if a > at {
                            out.push((at as u64, a as u64));
                        }
                        at = at.max(b);
                        i += 1;
                    }
                    _ => {
                        out.push((at as u64, hi as u64));
                        at = hi;
                    }
                }
            }
        }
        out
    }

    /// The ranges, in order.
    #[cfg(test)]
    pub(crate) fn ranges(&self) -> &[(usize, usize)] {
        &self.0
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

/// Elements serial code reads come home in windows of whole rows of about this many bytes.
const WINDOW: usize = 1 << 16;

/// The window of whole rows, about [`WINDOW`] bytes and aligned to its size, that holds
/// elements `lo..hi` of an array of `shape` with elements of `size` bytes.
pub(crate) fn window(shape: &[usize], size: usize, lo: usize, hi: usize) -> (usize, usize) {
    let rows = shape.first().copied().unwrap_or(1);
    let row: usize = shape.iter().skip(1).product::<usize>().max(1);
    let per = (WINDOW / (row * size.max(1))).max(1);
    let first = lo / row / per * per;
    let last = hi.div_ceil(row).div_ceil(per).saturating_mul(per).min(rows);
    (first * row, last.max(first) * row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_hold_whole_rows_of_about_64_kib() {
        // 1,000 rows of 64 f32: 256 bytes a row, 256 rows a window.
        assert_eq!(
            window(&[1000, 64], 4, 70 * 64 + 3, 70 * 64 + 4),
            (0, 256 * 64)
        );
        assert_eq!(
            window(&[1000, 64], 4, 300 * 64, 301 * 64),
            (256 * 64, 512 * 64)
        );
        assert_eq!(
            window(&[1000, 64], 4, 900 * 64, 1000 * 64),
            (768 * 64, 1000 * 64)
        );
        // Elements across two windows: both.
        assert_eq!(window(&[1000, 64], 4, 255 * 64, 257 * 64), (0, 512 * 64));
        // Rows wider than a window: one row.
        assert_eq!(
            window(&[10, 100_000], 4, 3 * 100_000 + 7, 3 * 100_000 + 8),
            (300_000, 400_000)
        );
        // A 1-D array of f64: 8,192 elements.
        assert_eq!(window(&[100_000], 8, 9_000, 9_001), (8_192, 16_384));
    }

    #[test]
    fn inserts_merge_and_cover() {
        let mut s = Spans::default();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(5, 5);
        assert_eq!(s.ranges(), &[(10, 20), (30, 40)]);
        assert!(s.covers(12, 20) && s.covers(30, 31) && s.covers(7, 7));
        assert!(!s.covers(19, 21) && !s.covers(25, 26) && !s.covers(0, 11));
        s.insert(20, 30);
        assert_eq!(s.ranges(), &[(10, 40)]);
        s.insert(0, 2);
        s.insert(45, 50);
        s.insert(1, 46);
        assert_eq!(s.ranges(), &[(0, 50)]);
        assert_eq!(s.len(), 50);
        s.clear();
        assert!(s.is_empty());
    }

    #[test]
    fn the_range_containing_a_span() {
        let mut s = Spans::default();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 25);
        assert_eq!(s.containing(12, 25), Some((10, 25)));
        assert_eq!(s.containing(30, 30), Some((30, 40)));
        assert_eq!(s.containing(24, 31), None);
        assert_eq!(s.containing(0, 5), None);
        assert_eq!(s.containing(41, 42), None);
    }

    /// `outside` against a position-by-position model, over every small case.
    #[test]
    fn outside_is_the_difference() {
        let sets: [&[(usize, usize)]; 4] = [&[], &[(2, 4)], &[(0, 3), (5, 6)], &[(1, 2), (3, 8)]];
        let asks: [&[(u64, u64)]; 4] = [&[(0, 8)], &[(1, 3), (4, 7)], &[(5, 6)], &[]];
        for set in sets {
            let mut s = Spans::default();
            for &(a, b) in set {
                s.insert(a, b);
            }
            for ask in asks {
                let got: Vec<u64> = s.outside(ask).iter().flat_map(|&(a, b)| a..b).collect();
                let want: Vec<u64> = ask
                    .iter()
                    .flat_map(|&(a, b)| a..b)
                    .filter(|&p| !s.covers(p as usize, p as usize + 1))
                    .collect();
                assert_eq!(got, want, "{set:?} outside of {ask:?}");
            }
        }
    }
}
