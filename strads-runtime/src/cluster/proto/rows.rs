//! Rows of an array that every region of a call treats alike, planned as one.
//!
//! The itinerary walks every task's regions element range by element range; a tile of a
//! 2-D array is one range per row, so a wavefront over a 3,000 x 3,000 table walks
//! hundreds of thousands of ranges, nearly all of them alike row after row. Here the rows
//! of an array are cut wherever some region's columns change from one row to the next
//! (a task's window, what it writes, what other ranks hold or were left): between two
//! cuts every row is in exactly the same regions, so the walk gives all of them the same
//! transfers, holders and end. The itinerary plans one row per class of rows (a
//! *squeezed* array, `classes x width`) and expands what it finds to every row of each
//! class; the result is the plan of the whole array, element for element.

use super::region::Region;

/// The classes of rows of one array: class `k` is rows `starts[k]..starts[k + 1]` (the
/// last, to `rows`), each of `width` elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rows {
    width: u64,
    rows: u64,
    starts: Vec<u64>,
}

/// Rows `lo..hi` of a region, each holding the columns `cols` (sorted, disjoint).
#[derive(Debug, PartialEq, Eq)]
struct Run {
    lo: u64,
    hi: u64,
    cols: Vec<(u64, u64)>,
}

/// The runs of rows of `width` elements with the same columns in `region`, in row order
/// (rows the region does not touch are in no run). Linear in the region's ranges.
fn runs(region: &Region, width: u64) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    // The row being gathered, and its columns.
    let mut row: Option<(u64, Vec<(u64, u64)>)> = None;
    let finish = |out: &mut Vec<Run>, run: Run| match out.last_mut() {
        Some(last) if last.hi == run.lo && last.cols == run.cols => last.hi = run.hi,
        _ => out.push(run),
    };
    // The row gathered so far, finished as a run of one row.
    let close = |out: &mut Vec<Run>, row: Option<(u64, Vec<(u64, u64)>)>| {
        if let Some((at, cols)) = row {
            finish(
                out,
                Run {
                    lo: at,
                    hi: at + 1,
                    cols,
                },
            );
        }
    };
    let mut piece = |out: &mut Vec<Run>, r: u64, span: u64, cols: (u64, u64)| {
        // A range wholly inside row `r` (`span == 1`) joins the row's other columns; a
        // run of full rows stands alone.
        match &mut row {
            Some((at, c)) if *at == r && span == 1 => c.push(cols),
            _ => {
                close(out, row.take());
                if span == 1 {
                    row = Some((r, vec![cols]));
                } else {
                    finish(
                        out,
                        Run {
                            lo: r,
                            hi: r + span,
                            cols: vec![cols],
                        },
                    );
                }
            }
        }
    };
    for &(lo, hi) in &region.0 {
        let (r0, r1) = (lo / width, (hi - 1) / width);
        let (x, y) = (lo % width, (hi - 1) % width + 1);
        if r0 == r1 {
            piece(&mut out, r0, 1, (x, y));
        } else {
            piece(&mut out, r0, 1, (x, width));
            if r1 > r0 + 1 {
                piece(&mut out, r0 + 1, r1 - r0 - 1, (0, width));
            }
            piece(&mut out, r1, 1, (0, y));
        }
    }
    close(&mut out, row);
    out
}

impl Rows {
    /// The classes of an array of `shape` whose every region is among `regions`; `None`
    /// when they would not make the walk at least twice shorter (rows of their own, a
    /// skewed tile's, a 1-D array).
    pub(super) fn of<'a>(
        shape: &[usize],
        regions: impl Iterator<Item = &'a Region>,
    ) -> Option<Rows> {
        // Rows worth cutting repeat: regions of one range per row or fewer (a 1D
        // block, a reconnaissance claim of scattered rows) are walked as they are.
        let regions: Vec<&Region> = regions.collect();
        let ranges: usize = regions.iter().map(|r| r.0.len()).sum();
        let rows = shape
            .split_last()
            .map_or(0, |(_, outer)| outer.iter().product::<usize>());
        if rows < 2 || ranges < 4 * rows {
            return None;
        }
        Self::cut(shape, regions.into_iter()).filter(|r| r.starts.len() * 2 <= r.rows as usize)
    }

    /// The classes, however many.
    fn cut<'a>(shape: &[usize], regions: impl Iterator<Item = &'a Region>) -> Option<Rows> {
        let width = *shape.last()? as u64;
        let len: u64 = shape.iter().map(|&d| d as u64).product();
        if width == 0 || len == 0 {
            return None;
        }
        let rows = len / width;
        let mut cuts = vec![0u64];
        for region in regions {
            for run in runs(region, width) {
                cuts.push(run.lo);
                cuts.push(run.hi);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        cuts.retain(|&c| c < rows);
        Some(Rows {
            width,
            rows,
            starts: cuts,
        })
    }

    /// The squeezed array's shape: one row per class.
    pub(super) fn shape(&self) -> Vec<usize> {
        vec![self.starts.len(), self.width as usize]
    }

    /// The class of row `r` (a row that starts a class, or `rows`: the end).
    fn class_at(&self, r: u64) -> u64 {
        if r == self.rows {
            return self.starts.len() as u64;
        }
        self.starts.partition_point(|&s| s <= r) as u64 - 1
    }

    /// The rows of class `k`.
    fn rows_of(&self, k: u64) -> std::ops::Range<u64> {
        let k = k as usize;
        self.starts[k]..self.starts.get(k + 1).copied().unwrap_or(self.rows)
    }

    /// `region` of the array as the squeezed array's region (each class as its first
    /// row). Exact for a region the classes were cut from.
    pub(super) fn squeeze(&self, region: &Region) -> Region {
        let mut out = Region::default();
        for run in runs(region, self.width) {
            for k in self.class_at(run.lo)..self.class_at(run.hi) {
                for &(x, y) in &run.cols {
                    out.push(k * self.width + x, k * self.width + y);
                }
            }
        }
        out
    }

    /// A region of the squeezed array as the array's: each class's columns in every row
    /// of the class.
    pub(super) fn expand(&self, region: &Region) -> Region {
        let mut out = Region::default();
        for run in runs(region, self.width) {
            for k in run.lo..run.hi {
                for r in self.rows_of(k) {
                    for &(x, y) in &run.cols {
                        out.push(r * self.width + x, r * self.width + y);
                    }
                }
            }
        }
        out
    }

    /// Contiguous ranges of the squeezed array, each with a value, as the array's:
    /// sorted, adjacent ranges of one value merged.
    pub(super) fn expand_ranges<V: Copy + PartialEq>(
        &self,
        ranges: &[((u64, u64), V)],
    ) -> Vec<((u64, u64), V)> {
        let mut pieces: Vec<((u64, u64), V)> = Vec::new();
        for &((lo, hi), v) in ranges {
            for &(a, b) in &self.expand(&Region(vec![(lo, hi)])).0 {
                pieces.push(((a, b), v));
            }
        }
        pieces.sort_unstable_by_key(|p| p.0.0);
        let mut out: Vec<((u64, u64), V)> = Vec::with_capacity(pieces.len());
        for ((lo, hi), v) in pieces {
            match out.last_mut() {
                Some(((_, end), last)) if *end == lo && *last == v => *end = hi,
                _ => out.push(((lo, hi), v)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(r: &[(u64, u64)]) -> Region {
        Region(r.to_vec())
    }

    #[test]
    fn runs_gather_rows_with_the_same_columns() {
        // Rows of 10: a box of rows 1..4, columns 2..5, and one range over rows 5..8.
        let r = region(&[(12, 15), (22, 25), (32, 35), (53, 78)]);
        assert_eq!(
            runs(&r, 10),
            vec![
                Run {
                    lo: 1,
                    hi: 4,
                    cols: vec![(2, 5)]
                },
                Run {
                    lo: 5,
                    hi: 6,
                    cols: vec![(3, 10)]
                },
                Run {
                    lo: 6,
                    hi: 7,
                    cols: vec![(0, 10)]
                },
                Run {
                    lo: 7,
                    hi: 8,
                    cols: vec![(0, 8)]
                },
            ]
        );
        // Two ranges in one row, and full rows that continue a full row.
        let r = region(&[(0, 3), (5, 7), (10, 40)]);
        assert_eq!(
            runs(&r, 10),
            vec![
                Run {
                    lo: 0,
                    hi: 1,
                    cols: vec![(0, 3), (5, 7)]
                },
                Run {
                    lo: 1,
                    hi: 4,
                    cols: vec![(0, 10)]
                },
            ]
        );
    }

    /// Random regions of random arrays: squeezing then expanding gives each region back,
    /// and every row of a class is in the same regions.
    #[test]
    fn squeezed_regions_expand_to_themselves() {
        let mut rng = crate::array::rng::IterRng::new(7, &[]);
        let mut next = |m: u64| rng.below(m as usize) as u64;
        let mut squeezed = 0;
        for _ in 0..500 {
            let (rows, width) = (1 + next(40), 1 + next(9));
            let len = rows * width;
            let regions: Vec<Region> = (0..1 + next(4))
                .map(|_| {
                    // Boxes, or scattered ranges.
                    let mut r = Region::default();
                    if next(2) == 0 {
                        let (r0, c0) = (next(rows), next(width));
                        let (r1, c1) = (r0 + 1 + next(rows - r0), c0 + 1 + next(width - c0));
                        for i in r0..r1 {
                            r.push(i * width + c0, i * width + c1);
                        }
                    } else {
                        let mut at = 0;
                        while at < len {
                            let lo = at + next(len - at);
                            let hi = (lo + 1 + next(2 * width)).min(len);
                            r.push(lo, hi);
                            at = hi + 1 + next(width);
                        }
                    }
                    r
                })
                .collect();
            let rs = Rows::cut(&[rows as usize, width as usize], regions.iter()).expect("rows");
            if rs.starts.len() < rows as usize {
                squeezed += 1;
            }
            for r in &regions {
                assert_eq!(rs.expand(&rs.squeeze(r)), *r, "{rs:?}");
            }
            for k in 0..rs.starts.len() as u64 {
                let first = rs.rows_of(k).start;
                for row in rs.rows_of(k) {
                    for r in &regions {
                        let cols = |i: u64| -> Vec<bool> {
                            (0..width)
                                .map(|c| {
                                    let e = i * width + c;
                                    r.0.iter().any(|&(lo, hi)| lo <= e && e < hi)
                                })
                                .collect()
                        };
                        assert_eq!(cols(row), cols(first), "{rs:?} {r:?}");
                    }
                }
            }
        }
        assert!(squeezed > 200, "{squeezed} of 500 cases squeezed");
    }

    #[test]
    fn ranges_expand_sorted_and_merged() {
        // Rows of 4, classes {0, 1..3, 3}: class 1 stands for rows 1 and 2.
        let rs = Rows {
            width: 4,
            rows: 4,
            starts: vec![0, 1, 3],
        };
        let ranges = [((0, 6), 0usize), ((6, 8), 1), ((8, 12), 0)];
        assert_eq!(
            rs.expand_ranges(&ranges),
            vec![
                ((0, 6), 0),
                ((6, 8), 1),
                ((8, 10), 0),
                ((10, 12), 1),
                ((12, 16), 0)
            ]
        );
    }
}
