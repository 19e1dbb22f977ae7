//! Regions of an array as sorted, disjoint ranges of flat (row-major) element offsets, and
//! the region a task's window covers.

use crate::plan::Window;

/// Sorted, disjoint, non-empty ranges `[lo, hi)` of flat element offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Region(pub Vec<(u64, u64)>);

impl Region {
    /// Every element of an array of `len` elements.
    pub fn all(len: u64) -> Region {
        Region(if len == 0 { Vec::new() } else { vec![(0, len)] })
    }

    /// Elements in the region.
    pub fn len(&self) -> u64 {
        self.0.iter().map(|(lo, hi)| hi - lo).sum()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `[lo, hi)`, keeping the ranges sorted, disjoint and merged.
    pub fn push(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        match self.0.last_mut() {
            Some(last) if last.1 >= lo && last.0 <= lo => last.1 = last.1.max(hi),
            Some(last) if last.1 < lo => self.0.push((lo, hi)),
            None => self.0.push((lo, hi)),
            Some(_) => {
                self.0.push((lo, hi));
                self.normalize();
            }
        }
    }

    /// Sorts and merges the ranges.
    fn normalize(&mut self) {
        self.0.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.0.len());
        for &(lo, hi) in &self.0 {
            match out.last_mut() {
                Some(last) if last.1 >= lo => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        self.0 = out;
    }

    /// The union of two regions.
    pub fn union(&self, other: &Region) -> Region {
        let mut r = Region(self.0.iter().chain(&other.0).copied().collect());
        r.normalize();
        r
    }
}

/// How a window covers an array: `None` when the window is not made of index ranges the
/// cluster can ship (wavefront tiles, reconnaissance ownership).
pub fn window_region(window: &Window, shape: &[usize]) -> Option<(Region, bool)> {
    let len: u64 = shape.iter().map(|&d| d as u64).product();
    // Elements per index of `axis`, and how many blocks of the axis there are.
    let strides = |axis: usize| -> (u64, u64, u64) {
        let inner: u64 = shape[axis + 1..].iter().map(|&d| d as u64).product();
        let outer: u64 = shape[..axis].iter().map(|&d| d as u64).product();
        (inner, shape[axis] as u64, outer)
    };
    match window {
        Window::All { writable } => Some((Region::all(len), *writable)),
        Window::Range {
            axis,
            lo,
            hi,
            writable,
        } => {
            let (inner, extent, outer) = strides(*axis);
            let (lo, hi) = ((*lo as u64).min(extent), (*hi as u64).min(extent));
            let mut r = Region::default();
            for o in 0..outer {
                let base = o * extent * inner;
                r.push(base + lo * inner, base + hi * inner);
            }
            Some((r, *writable))
        }
        Window::Lattice {
            align,
            lo,
            hi,
            writable,
        } => {
            let (inner, extent, outer) = strides(align.axis);
            let xs: Vec<u64> = (0..extent)
                .filter(|&x| align.holds(*lo, *hi, x as usize, *writable))
                .collect();
            let mut r = Region::default();
            for o in 0..outer {
                let base = o * extent * inner;
                for &x in &xs {
                    r.push(base + x * inner, base + (x + 1) * inner);
                }
            }
            Some((r, *writable))
        }
        Window::Tiles(_) | Window::Owned { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_an_inner_axis_repeat_per_outer_index() {
        let w = Window::Range {
            axis: 1,
            lo: 1,
            hi: 3,
            writable: true,
        };
        let (r, writable) = window_region(&w, &[2, 4, 3]).unwrap();
        assert!(writable);
        assert_eq!(r.0, vec![(3, 9), (15, 21)]);
        assert_eq!(r.len(), 12);
    }

    #[test]
    fn axis_zero_is_one_range_and_all_is_everything() {
        let w = Window::Range {
            axis: 0,
            lo: 2,
            hi: 9,
            writable: false,
        };
        assert_eq!(window_region(&w, &[5, 4]).unwrap().0.0, vec![(8, 20)]);
        let all = Window::All { writable: false };
        assert_eq!(
            window_region(&all, &[5, 4]).unwrap(),
            (Region(vec![(0, 20)]), false)
        );
    }

    #[test]
    fn pushes_merge_and_sort() {
        let mut r = Region::default();
        r.push(5, 7);
        r.push(7, 9);
        r.push(1, 2);
        r.push(3, 3);
        assert_eq!(r.0, vec![(1, 2), (5, 9)]);
        assert_eq!(r.union(&Region(vec![(2, 5)])).0, vec![(1, 9)]);
    }
}
