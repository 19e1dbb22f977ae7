//! Regions of an array as sorted, disjoint ranges of flat (row-major) element offsets, and
//! the region a task's window covers.

use std::collections::HashMap;

use crate::plan::{Claimant, Schedule, TileWindow, Window};

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
    pub(crate) fn normalize(&mut self) {
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

/// Elements per index of `axis` of an array of `shape`, the axis' extent, and how many
/// blocks of the axis there are: `(inner, extent, outer)`.
fn strides(shape: &[usize], axis: usize) -> (u64, u64, u64) {
    let inner: u64 = shape[axis + 1..].iter().map(|&d| d as u64).product();
    let outer: u64 = shape[..axis].iter().map(|&d| d as u64).product();
    (inner, shape[axis] as u64, outer)
}

/// How a window of index ranges covers an array, and whether it is writable: `None` for
/// wavefront tiles (see [`tile_regions`]) and reconnaissance ownership.
pub fn window_region(window: &Window, shape: &[usize]) -> Option<(Region, bool)> {
    let len: u64 = shape.iter().map(|&d| d as u64).product();
    let strides = |axis: usize| strides(shape, axis);
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
            // Every index an access reaches, read or written (`task_regions` tells the
            // written ones apart).
            let (inner, extent, outer) = strides(align.axis);
            Some((
                lattice(align, (*lo, *hi), false, (inner, extent, outer)),
                *writable,
            ))
        }
        Window::Tiles(_) | Window::Owned { .. } => None,
    }
}

/// The elements of a lattice window: every index of the aligned axis that an iteration
/// of `lo..hi` reaches through some access (`write`: through a write), times the other
/// axes (`(inner, extent, outer)`: elements per index, the axis' extent, blocks of it).
fn lattice(
    align: &strads_analysis::Align,
    (lo, hi): (usize, usize),
    write: bool,
    (inner, extent, outer): (u64, u64, u64),
) -> Region {
    let xs: Vec<u64> = (0..extent)
        .filter(|&x| align.holds(lo, hi, x as usize, write))
        .collect();
    let mut r = Region::default();
    for o in 0..outer {
        let base = o * extent * inner;
        for &x in &xs {
            r.push(base + x * inner, base + (x + 1) * inner);
        }
    }
    r
}

/// The elements a task with `window` may touch and those it may write: `(access,
/// written)`; `None` for a reconnaissance window (rows decided by the call's claims).
pub fn task_regions(window: &Window, shape: &[usize]) -> Option<(Region, Region)> {
    match window {
        Window::Tiles(tile) => Some(tile_regions(tile, shape)),
        // A strided window reads indices it does not write (`x[2k]` beside `x[2k + 1]`):
        // what it touches and what it writes differ.
        Window::Lattice {
            align,
            lo,
            hi,
            writable,
        } => {
            let dims = strides(shape, align.axis);
            let touched = lattice(align, (*lo, *hi), false, dims);
            let written = if *writable {
                lattice(align, (*lo, *hi), true, dims)
            } else {
                Region::default()
            };
            Some((touched, written))
        }
        _ => {
            let (region, writable) = window_region(window, shape)?;
            let written = if writable {
                region.clone()
            } else {
                Region::default()
            };
            Some((region, written))
        }
    }
}

/// The rows each claimant of each batch owns in a reconnaissance schedule (step claims and
/// the claims pieces make when they start), sorted: what a task's `Window::Owned` covers.
#[derive(Debug, Default)]
pub struct Claims(HashMap<(usize, Claimant), Vec<u64>>);

impl Claims {
    /// The claims of `schedule`.
    pub fn of(schedule: &Schedule) -> Claims {
        let mut map: HashMap<(usize, Claimant), Vec<u64>> = HashMap::new();
        let steps = schedule.steps.iter();
        let made = steps.flat_map(|s| {
            let tasks = s.tasks.iter().flatten().filter_map(|t| t.claim.as_ref());
            s.claims.iter().chain(tasks)
        });
        for c in made {
            map.entry((c.batch, c.claimant))
                .or_default()
                .extend_from_slice(&c.rows);
        }
        for rows in map.values_mut() {
            rows.sort_unstable();
            rows.dedup();
        }
        Claims(map)
    }

    /// The elements a task of a rank whose workers are `local` may touch with `window` on
    /// an array of `shape`, and those it may write: `(access, written)`; `None` for a
    /// window that cannot cross. A reconnaissance task writes the rows its claimant owns,
    /// and reads those and every row the rank's workers only read in the batch: all carry
    /// the readers' stamp on the rank, so all must be current before any of its tasks runs.
    pub fn regions(
        &self,
        window: &Window,
        shape: &[usize],
        local: std::ops::Range<usize>,
    ) -> Option<(Region, Region)> {
        match window {
            Window::Owned {
                base,
                batch,
                claimant,
            } => {
                let rows = |c: Claimant| self.0.get(&(*batch, c)).map_or(&[][..], Vec::as_slice);
                let written = owned_region(rows(*claimant), *base as u64, shape);
                let read = local.fold(Region::default(), |r, w| {
                    r.union(&owned_region(
                        rows(Claimant::Readers(w)),
                        *base as u64,
                        shape,
                    ))
                });
                Some((written.union(&read), written))
            }
            _ => task_regions(window, shape),
        }
    }
}

/// The elements of rows `rows` (sorted element ids of a reconnaissance ownership table)
/// that belong to an array of `shape` whose row 0 is id `base`: what a task that owns
/// those rows may touch.
pub fn owned_region(rows: &[u64], base: u64, shape: &[usize]) -> Region {
    let n_rows = shape.first().copied().unwrap_or(0) as u64;
    let row_len: u64 = shape.iter().skip(1).map(|&d| d as u64).product();
    let mut out = Region::default();
    let from = rows.partition_point(|&r| r < base);
    for &r in rows[from..].iter().take_while(|&&r| r < base + n_rows) {
        let i = r - base;
        out.push(i * row_len, (i + 1) * row_len);
    }
    out
}

/// The elements a wavefront tile may touch and those it may write: `(access, written)`.
///
/// Each of the tile's regions is a box of the two forms' values; along the last axis of
/// the array each form is `c + a * x`, so for a fixed prefix of the other axes a box holds
/// one interval of `x`. Exact: an element is in `access` exactly when
/// `TileWindow::holds` puts it in a read or write region, in `written` when in a write
/// region.
pub fn tile_regions(t: &TileWindow, shape: &[usize]) -> (Region, Region) {
    let (mut access, mut written) = (Region::default(), Region::default());
    let Some((&last, outer_axes)) = shape.split_last() else {
        // A zero-dimensional array: its one element has form values 0.
        let hit = |boxes: &[[(i64, i64); 2]]| TileWindow::holds(boxes, (0, 0));
        if hit(&t.write) {
            written.push(0, 1);
        }
        if hit(&t.write) || hit(&t.read) {
            access.push(0, 1);
        }
        return (access, written);
    };
    let d = shape.len();
    let form = |k: usize, a: usize| t.forms[k].get(a).copied().unwrap_or(0);
    let outer: u64 = outer_axes.iter().map(|&n| n as u64).product();
    let mut idx = vec![0usize; d - 1];
    let row = |boxes: &[[(i64, i64); 2]], c: [i64; 2], out: &mut Vec<(u64, u64)>| {
        for b in boxes {
            let (mut lo, mut hi) = (0i64, last as i64);
            for k in 0..2 {
                let (x0, x1) = solve(c[k], form(k, d - 1), b[k]);
                lo = lo.max(x0);
                hi = hi.min(x1);
            }
            if lo < hi {
                out.push((lo as u64, hi as u64));
            }
        }
    };
    // In a 2-D array, a form that does not depend on the column bounds a box's rows
    // directly: rows outside the span of the boxes' row bounds hold nothing, and are not
    // visited.
    let rows = if d == 2 {
        let bounds = |b: &[(i64, i64); 2]| {
            (0..2)
                .filter(|&k| form(k, 1) == 0)
                .map(|k| solve(0, form(k, 0), b[k]))
                .fold((0i64, outer as i64), |(lo, hi), (x0, x1)| {
                    (lo.max(x0), hi.min(x1))
                })
        };
        let spans = t
            .write
            .iter()
            .chain(&t.read)
            .map(bounds)
            .filter(|(lo, hi)| lo < hi);
        let (lo, hi) = spans.fold((i64::MAX, i64::MIN), |(lo, hi), (x0, x1)| {
            (lo.min(x0), hi.max(x1))
        });
        if lo < hi { lo as u64..hi as u64 } else { 0..0 }
    } else {
        0..outer
    };
    if d == 2 {
        idx[0] = rows.start as usize;
    }
    let mut w_iv = Vec::new();
    let mut a_iv = Vec::new();
    for o in rows {
        let c = [0, 1].map(|k| {
            idx.iter()
                .enumerate()
                .map(|(a, &x)| form(k, a) * x as i64)
                .sum::<i64>()
        });
        w_iv.clear();
        a_iv.clear();
        row(&t.write, c, &mut w_iv);
        a_iv.extend_from_slice(&w_iv);
        row(&t.read, c, &mut a_iv);
        let base = o * last as u64;
        for (out, iv) in [(&mut written, &mut w_iv), (&mut access, &mut a_iv)] {
            iv.sort_unstable();
            for &(lo, hi) in iv.iter() {
                out.push(base + lo, base + hi);
            }
        }
        // The next prefix, last outer axis fastest (row-major).
        for a in (0..d - 1).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    (access, written)
}

/// The `x` with `lo <= c + a * x < hi`, as `[x0, x1)` (possibly empty or unbounded).
/// In 128 bits: unbounded tile coordinates are `i64::MIN..i64::MAX`.
fn solve(c: i64, a: i64, (lo, hi): (i64, i64)) -> (i64, i64) {
    let (lo, hi, a) = (lo as i128 - c as i128, hi as i128 - c as i128, a as i128);
    let (x0, x1) = match a {
        0 if lo <= 0 && 0 < hi => (i128::from(i64::MIN), i128::from(i64::MAX)),
        0 => (0, 0),
        // The unit coefficients of most tilings, without a division (a wavefront plans
        // every row of every tile through here).
        1 => (lo, hi),
        -1 => (1 - hi, 1 - lo),
        _ => solve_by_division(lo, hi, a),
    };
    let clamp = |x: i128| x.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
    (clamp(x0), clamp(x1))
}

/// [`solve`]'s `x` range for `lo <= a * x < hi`, `a` not 0.
fn solve_by_division(lo: i128, hi: i128, a: i128) -> (i128, i128) {
    match a.signum() {
        // a * x >= lo and a * x < hi: x from ceil(lo / a) to ceil(hi / a).
        1 => (-((-lo).div_euclid(a)), -((-hi).div_euclid(a))),
        // a < 0: x <= lo / a and x > hi / a: floor(hi / a) + 1 to floor(lo / a) + 1
        // (a floor by a negative divisor, as one by -a of -n).
        _ => ((-hi).div_euclid(-a) + 1, (-lo).div_euclid(-a) + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::{access, aff, array, spec};
    use strads_analysis::{Partition, SpaceKind, Strategy, analyze};

    #[test]
    fn a_dense_iterated_array_is_read_by_its_blocks() {
        // for ([u, k], &x) in w { s += x }: each block reads its own rows of `w`.
        let mut s = spec(&["u", "k"], vec![array("w", 2, false)], vec![], false);
        s.space = SpaceKind::Array {
            array: 0,
            sparse: false,
        };
        assert!(crate::plan::read_as_blocks(&s, 0));
        let an = analyze(&s);
        let one_d = an
            .candidates
            .iter()
            .find(|c| c.strategy == Strategy::OneD { dim: 0 })
            .expect("a 1D candidate over u");
        let shapes: [&[usize]; 1] = [&[5, 3]];
        let sched = crate::plan::grid::schedule(&s, one_d, &[Partition::uniform(5, 2)], &shapes, 2);
        let read = |lo, hi| Window::Range {
            axis: 0,
            lo,
            hi,
            writable: false,
        };
        assert_eq!(sched.windows, vec![vec![read(0, 2)], vec![read(2, 5)]]);
        // Indexed by the body as well (`w[[u, 0]]`), or a sparse space: the whole array.
        let mut indexed = s.clone();
        indexed.accesses = vec![access(0, false, vec![aff(&[1, 0], 0), aff(&[0, 0], 0)])].into();
        assert!(!crate::plan::read_as_blocks(&indexed, 0));
        let an = analyze(&indexed);
        let c = an
            .candidates
            .iter()
            .find(|c| c.strategy == Strategy::OneD { dim: 0 })
            .expect("a 1D candidate over u");
        let sched =
            crate::plan::grid::schedule(&indexed, c, &[Partition::uniform(5, 2)], &shapes, 2);
        assert!(
            sched
                .windows
                .iter()
                .all(|w| w == &vec![Window::All { writable: false }])
        );
        // A buffer (a `sync` replica), or an array a buffer's apply function updates.
        let mut buffered = s.clone();
        buffered.buffers = vec![strads_analysis::BufferSpec {
            array: 0,
            apply: None,
            average: true,
            merge: None,
            shared: false,
            stale: 0,
        }]
        .into();
        assert!(!crate::plan::read_as_blocks(&buffered, 0));
        let mut sparse = s.clone();
        sparse.space = SpaceKind::Array {
            array: 0,
            sparse: true,
        };
        assert!(!crate::plan::read_as_blocks(&sparse, 0));

        // DTW over its cost matrix: `for ([i, j], &c) in cost { d[i + 1, j + 1] = .. }`. A
        // tile reads exactly its own elements of `cost`, and writes none.
        let mut dtw = crate::plan::tests::dtw_spec();
        dtw.arrays = vec![array("d", 2, true), array("cost", 2, false)].into();
        dtw.space = SpaceKind::Array {
            array: 1,
            sparse: false,
        };
        let an = analyze(&dtw);
        let c = &an.candidates[0];
        assert!(matches!(c.strategy, Strategy::Wavefront { .. }));
        let shapes: [&[usize]; 2] = [&[5, 7], &[4, 6]];
        let t = crate::plan::wavefront::plan(&dtw, c, &[4, 6], &shapes, 2);
        assert_eq!(t.fallback, None);
        let time_tiles = t.time_tiles;
        let (sp, tp) = (&t.tiling.parts[0], &t.tiling.parts[1]);
        for (b, set) in t.schedule.windows.iter().enumerate() {
            let Window::Tiles(tile) = &set[1] else {
                panic!("block {b}: {:?}", set[1]);
            };
            assert!(!set[1].writable());
            let ((i0, i1), (j0, j1)) = (sp.range(b / time_tiles), tp.range(b % time_tiles));
            let mut want = Region::default();
            for i in i0..i1 {
                want.push((i * 6 + j0) as u64, (i * 6 + j1) as u64);
            }
            let (access, written) = tile_regions(tile, shapes[1]);
            assert_eq!((access, written.is_empty()), (want, true), "block {b}");
        }
    }

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

    /// `tile_regions` against `TileWindow::holds` element by element, for random forms
    /// (skewed, negative, zero coefficients), boxes and shapes of 1 to 3 axes.
    #[test]
    fn tile_regions_are_exactly_the_elements_the_tile_holds() {
        let mut x = 0x2545f4914f6cdd1du64;
        let mut next = |m: i64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (2 * m as u64 + 1)) as i64 - m
        };
        for _ in 0..400 {
            let d = 1 + (next(1) + 1) as usize;
            let shape: Vec<usize> = (0..d).map(|_| 1 + (next(3) + 3) as usize).collect();
            let forms = [0, 1].map(|_| (0..d).map(|_| next(2)).collect::<Vec<i64>>());
            let (nw, nr) = ((next(1) + 1) as usize, (next(1) + 2) as usize);
            let mut boxes = Vec::new();
            for _ in 0..nw + nr {
                boxes.push([0, 1].map(|_| {
                    let lo = next(8);
                    match next(4) {
                        // An unbounded coordinate, as the wavefront writes it.
                        4 => (i64::MIN, i64::MAX),
                        d => (lo, lo + d.abs() + 1),
                    }
                }));
            }
            let read = boxes.split_off(nw);
            let t = TileWindow {
                forms: forms.clone(),
                unit: None,
                write: boxes,
                read,
            };
            let (access, written) = tile_regions(&t, &shape);
            let len: usize = shape.iter().product();
            let inside = |r: &Region, f: u64| r.0.iter().any(|&(lo, hi)| lo <= f && f < hi);
            for flat in 0..len {
                let mut idx = vec![0usize; d];
                let mut rest = flat;
                for a in (0..d).rev() {
                    idx[a] = rest % shape[a];
                    rest /= shape[a];
                }
                let v = t.values(&idx);
                let w = TileWindow::holds(&t.write, v);
                let r = w || TileWindow::holds(&t.read, v);
                assert_eq!(inside(&written, flat as u64), w, "{t:?} {shape:?} {idx:?}");
                assert_eq!(inside(&access, flat as u64), r, "{t:?} {shape:?} {idx:?}");
            }
        }
    }

    #[test]
    fn unit_coefficients_solve_as_the_division_does() {
        let (min, max) = (i64::MIN, i64::MAX);
        let values = [min, min + 1, -7, -1, 0, 1, 3, 8, max - 1, max];
        for a in [1i64, -1] {
            for &c in &values {
                for &lo in &values {
                    for &hi in &values {
                        let (l, h) = (lo as i128 - c as i128, hi as i128 - c as i128);
                        let (x0, x1) = solve_by_division(l, h, a as i128);
                        let clamp = |x: i128| x.clamp(min.into(), max.into()) as i64;
                        assert_eq!(
                            solve(c, a, (lo, hi)),
                            (clamp(x0), clamp(x1)),
                            "c {c} a {a} [{lo}, {hi})"
                        );
                    }
                }
            }
        }
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
