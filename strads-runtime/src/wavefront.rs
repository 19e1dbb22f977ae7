//! Plans for wavefronts: tiles of the skewed nest, their windows, and the check that tiles
//! which may run at the same time never touch each other's elements.
//!
//! Worker `s` owns the space tiles `s` and runs time tiles `0, 1, ..` in order, each after
//! worker `s - 1` has finished the same time tile. So tile `(s1, t1)` may overlap in time
//! with `(s2, t2)` only when `s1 < s2` and `t1 > t2` (or the reverse): the worker further
//! up the pipeline is further ahead. Dependences of a fully permutable nest never go from a
//! tile to one with a smaller coordinate, so such tiles are independent; the windows make
//! that checkable, and [`plan`] checks it before running anything.

use std::sync::Arc;

use strads_analysis::{
    Candidate, LoopSpec, Partition, Placement, Strategy, Subscript, tile_axes, tile_bounded,
};

use crate::array::view::{TileWindow, Window};
use crate::space::Space;

/// A planned wavefront.
pub(crate) struct Tiles<B> {
    pub(crate) blocks: Arc<B>,
    /// Time tiles per worker; block `s * time_tiles + t` is tile `(s, t)`.
    pub(crate) time_tiles: usize,
    /// Workers (space tiles).
    pub(crate) p: usize,
    /// `windows[block][array]`.
    pub(crate) windows: Vec<Vec<Window>>,
    /// Why the plan fell back to one worker, if it did.
    pub(crate) fallback: Option<String>,
}

/// Time tiles per worker: enough for the pipeline to fill (efficiency `T / (P + T - 1)`).
const TILES_PER_WORKER: usize = 4;

fn dot(row: &[i64], p: &[usize]) -> i64 {
    row.iter().zip(p).map(|(c, &x)| c * x as i64).sum()
}

/// Plans candidate `c` (a wavefront) over `space` for `p` workers.
pub(crate) fn plan<S: Space>(
    spec: &LoopSpec,
    c: &Candidate,
    space: &S,
    p: usize,
) -> Tiles<S::Blocks> {
    let Strategy::Wavefront {
        space: ks,
        time: kt,
        ..
    } = c.strategy
    else {
        unreachable!("wavefront plans only")
    };
    let skew = &c.skew;
    let extents = space.extents();
    // Skew entries and indices are non-negative, so skewed coordinates lie in 0..=max.
    let max = |k: usize| {
        dot(
            &skew[k],
            &extents
                .iter()
                .map(|e| e.saturating_sub(1))
                .collect::<Vec<_>>(),
        )
    };
    let (qs, qt) = (max(ks) as usize + 1, max(kt) as usize + 1);
    let first = attempt(spec, c, space, p, ks, kt, qs, qt);
    if first.fallback.is_none() || p == 1 {
        return first;
    }
    let why = first.fallback;
    let mut one = attempt(spec, c, space, 1, ks, kt, qs, qt);
    one.fallback = why;
    one
}

#[allow(clippy::too_many_arguments)]
fn attempt<S: Space>(
    spec: &LoopSpec,
    c: &Candidate,
    space: &S,
    p: usize,
    ks: usize,
    kt: usize,
    qs: usize,
    qt: usize,
) -> Tiles<S::Blocks> {
    let skew = &c.skew;
    let time_tiles = (TILES_PER_WORKER * p).clamp(1, qt.max(1));
    let sp = Partition::uniform(qs, p);
    let tp = Partition::uniform(qt, time_tiles);
    let (st, tt) = (sp.lookup_table(), tp.lookup_table());
    let key = format!("tiles:{skew:?}:{ks}:{kt}:{:?}:{:?}", sp.bounds, tp.bounds);
    let (rs, rt) = (skew[ks].clone(), skew[kt].clone());
    let block_of = move |idx: &[usize]| {
        let (a, b) = (dot(&rs, idx) as usize, dot(&rt, idx) as usize);
        st[a] as usize * time_tiles + tt[b] as usize
    };
    // Without a skew the tiles are boxes of the original dims: no list of ids needed.
    let blocks = if strads_analysis::is_identity(skew) {
        space.blocks(&[ks, kt], &[sp.clone(), tp.clone()])
    } else {
        space.blocks_by(&key, p * time_tiles, &block_of)
    };

    // Per array: the two forms over its axes and each access's shift of them.
    let arrays: Vec<Option<ArrayTiles>> = (0..spec.arrays.len())
        .map(|a| match c.placements[a] {
            Placement::Tiled => Some(ArrayTiles::new(spec, a, &skew[ks], &skew[kt])),
            _ => None,
        })
        .collect();
    let tile_box = |s: usize, t: usize| {
        let (a, b) = sp.range(s);
        let (x, y) = tp.range(t);
        [(a as i64, b as i64), (x as i64, y as i64)]
    };
    let n_blocks = p * time_tiles;
    let windows: Vec<Vec<Window>> = (0..n_blocks)
        .map(|b| {
            let tb = tile_box(b / time_tiles, b % time_tiles);
            arrays
                .iter()
                .map(|at| match at {
                    Some(at) => Window::Tiles(Arc::new(at.window(&tb))),
                    None => Window::All { writable: false },
                })
                .collect()
        })
        .collect();
    let fallback = verify(&windows, p, time_tiles);
    Tiles {
        blocks,
        time_tiles,
        p,
        windows,
        fallback,
    }
}

struct ArrayTiles {
    forms: [Vec<i64>; 2],
    /// Whether the array's index tells each tiled coordinate; an unbounded coordinate's
    /// regions span every value.
    bounded: [bool; 2],
    write_shifts: Vec<[i64; 2]>,
    read_shifts: Vec<[i64; 2]>,
}

impl ArrayTiles {
    fn new(spec: &LoopSpec, array: usize, row_s: &[i64], row_t: &[i64]) -> Self {
        let axes = tile_axes(spec, array).expect("the analysis placed it as tiled");
        let bounded = tile_bounded(&axes, [row_s, row_t]);
        let rank = axes.len();
        let mut forms = [vec![0i64; rank], vec![0i64; rank]];
        let mut seen = Vec::new();
        for (ax, d) in axes.iter().enumerate() {
            // One axis per dim: a second axis following the same dim adds nothing.
            if let Some(d) = d.filter(|d| !seen.contains(d)) {
                seen.push(d);
                forms[0][ax] = row_s[d];
                forms[1][ax] = row_t[d];
            }
        }
        let mut write_shifts = Vec::new();
        let mut read_shifts = Vec::new();
        for acc in spec.accesses.iter().filter(|a| a.array == array) {
            let c: Vec<i64> = acc
                .subscripts
                .iter()
                .map(|s| match s {
                    Subscript::Affine(f) => f.constant,
                    _ => 0,
                })
                .collect();
            let shift = [0, 1].map(|k| forms[k].iter().zip(&c).map(|(f, x)| f * x).sum());
            if acc.kind == strads_analysis::AccessKind::Write && !write_shifts.contains(&shift) {
                write_shifts.push(shift);
            }
            if !read_shifts.contains(&shift) {
                read_shifts.push(shift);
            }
        }
        ArrayTiles {
            forms,
            bounded,
            write_shifts,
            read_shifts,
        }
    }

    fn window(&self, tile: &[(i64, i64); 2]) -> TileWindow {
        let shifted = |sh: &[i64; 2]| {
            [0, 1].map(|k| match self.bounded[k] {
                true => (tile[k].0 + sh[k], tile[k].1 + sh[k]),
                false => (i64::MIN, i64::MAX),
            })
        };
        let unit_axis = |f: &[i64]| -> Option<usize> {
            let mut nz = f.iter().enumerate().filter(|(_, c)| **c != 0);
            match (nz.next(), nz.next()) {
                (Some((a, 1)), None) => Some(a),
                _ => None,
            }
        };
        let unit = match (unit_axis(&self.forms[0]), unit_axis(&self.forms[1])) {
            (Some(a), Some(b)) => Some([a, b]),
            _ => None,
        };
        TileWindow {
            forms: self.forms.clone(),
            unit,
            write: self.write_shifts.iter().map(shifted).collect(),
            read: self.read_shifts.iter().map(shifted).collect(),
        }
    }
}

/// `None` when no two tiles that may run at once touch a common element with a write;
/// otherwise which ones do.
fn verify(windows: &[Vec<Window>], p: usize, time_tiles: usize) -> Option<String> {
    let tiles = |b: usize| -> Vec<&TileWindow> {
        windows[b]
            .iter()
            .filter_map(|w| match w {
                Window::Tiles(t) => Some(&**t),
                _ => None,
            })
            .collect()
    };
    let clash = |a: &TileWindow, b: &TileWindow| {
        a.write
            .iter()
            .any(|w| b.read.iter().any(|r| TileWindow::overlap(w, r)))
    };
    for s1 in 0..p {
        for s2 in s1 + 1..p {
            for t1 in 1..time_tiles {
                for t2 in 0..t1 {
                    let (b1, b2) = (s1 * time_tiles + t1, s2 * time_tiles + t2);
                    for (x, y) in tiles(b1).into_iter().zip(tiles(b2)) {
                        if clash(x, y) || clash(y, x) {
                            return Some(format!(
                                "tiles ({s1}, {t1}) and ({s2}, {t2}) may run at once and touch a \
                                 common element"
                            ));
                        }
                    }
                }
            }
        }
    }
    None
}
