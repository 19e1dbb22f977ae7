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

use super::{HandOff, Schedule, Step, Task, TileWindow, Unit, Window};

/// A planned wavefront.
pub(crate) struct Tiles {
    /// Time tiles per worker; block `s * time_tiles + t` is tile `(s, t)`, run by worker
    /// `s` at step `s + t`.
    pub(crate) time_tiles: usize,
    /// The tiles as blocks of the iteration space.
    pub(crate) tiling: Tiling,
    /// The pipeline.
    pub(crate) schedule: Schedule,
    /// Why the plan fell back to one worker, if it did.
    pub(crate) fallback: Option<String>,
}

/// Which iterations each tile holds: boxes of dims `dims` cut by `parts` when unskewed,
/// else the tile of each index ([`Tiling::block_of`]).
pub(crate) struct Tiling {
    pub(crate) dims: [usize; 2],
    pub(crate) parts: [Partition; 2],
    /// Skewed: the skew's rows of the two dims, the parts' lookup tables, and the key that
    /// names this tiling for the space's caches.
    pub(crate) skewed: Option<Skewed>,
    pub(crate) time_tiles: usize,
}

/// A skewed tiling's arithmetic.
pub(crate) struct Skewed {
    rows: [Vec<i64>; 2],
    tables: [Vec<u32>; 2],
    pub(crate) key: String,
}

impl Tiling {
    /// The block (tile) of iteration index `idx`, for a skewed tiling.
    pub(crate) fn block_of(&self, idx: &[usize]) -> usize {
        let sk = self.skewed.as_ref().expect("a skewed tiling");
        let (a, b) = (
            dot(&sk.rows[0], idx) as usize,
            dot(&sk.rows[1], idx) as usize,
        );
        sk.tables[0][a] as usize * self.time_tiles + sk.tables[1][b] as usize
    }
}

/// Time tiles per worker: enough for the pipeline to fill (efficiency `T / (P + T - 1)`).
const TILES_PER_WORKER: usize = 4;

fn dot(row: &[i64], p: &[usize]) -> i64 {
    row.iter().zip(p).map(|(c, &x)| c * x as i64).sum()
}

/// Plans candidate `c` (a wavefront) over a space of `extents` for `p` workers.
pub(crate) fn plan(
    spec: &LoopSpec,
    c: &Candidate,
    extents: &[usize],
    shapes: &[&[usize]],
    p: usize,
) -> Tiles {
    let Strategy::Wavefront {
        space: ks,
        time: kt,
        ..
    } = c.strategy
    else {
        unreachable!("wavefront plans only")
    };
    let skew = &c.skew;
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
    let first = attempt(spec, c, shapes, p, ks, kt, qs, qt);
    if first.fallback.is_none() || p == 1 {
        return first;
    }
    let why = first.fallback;
    let mut one = attempt(spec, c, shapes, 1, ks, kt, qs, qt);
    one.fallback = why;
    one
}

#[allow(clippy::too_many_arguments)]
fn attempt(
    spec: &LoopSpec,
    c: &Candidate,
    shapes: &[&[usize]],
    p: usize,
    ks: usize,
    kt: usize,
    qs: usize,
    qt: usize,
) -> Tiles {
    let skew = &c.skew;
    let time_tiles = (TILES_PER_WORKER * p).clamp(1, qt.max(1));
    let sp = Partition::uniform(qs, p);
    let tp = Partition::uniform(qt, time_tiles);
    // Without a skew the tiles are boxes of the original dims: no list of ids needed.
    let skewed = (!strads_analysis::is_identity(skew)).then(|| Skewed {
        rows: [skew[ks].clone(), skew[kt].clone()],
        tables: [sp.lookup_table(), tp.lookup_table()],
        key: format!("tiles:{skew:?}:{ks}:{kt}:{:?}:{:?}", sp.bounds, tp.bounds),
    });

    // Per array: the two forms over its axes and each access's shift of them.
    let arrays: Vec<Option<ArrayTiles>> = (0..spec.arrays.len())
        .map(|a| match c.placements[a] {
            Placement::Tiled => Some(ArrayTiles::new(spec, a, &skew[ks], &skew[kt])),
            Placement::Iterated if super::read_as_blocks(spec, a) => {
                Some(ArrayTiles::iterated(&skew[ks], &skew[kt]))
            }
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
    let schedule = pipeline(spec, c, windows, p, time_tiles);
    let fallback = schedule.overlap(shapes);
    Tiles {
        time_tiles,
        tiling: Tiling {
            dims: [ks, kt],
            parts: [sp, tp],
            skewed,
            time_tiles,
        },
        schedule,
        fallback,
    }
}

/// Worker `s` runs tiles `(s, 0), (s, 1), ..` at steps `s, s + 1, ..`, each after worker
/// `s - 1` has finished the same time tile. The equivalent serial order is by
/// anti-diagonal `s + t` (the step), worker by worker.
fn pipeline(
    spec: &LoopSpec,
    c: &Candidate,
    windows: Vec<Vec<Window>>,
    p: usize,
    time_tiles: usize,
) -> Schedule {
    let tiled: Vec<usize> = (0..spec.arrays.len())
        .filter(|&a| matches!(c.placements[a], Placement::Tiled))
        .collect();
    let mut handoffs = Vec::new();
    let steps = (0..p + time_tiles - 1)
        .map(|k| Step {
            tasks: (0..p)
                .map(|s| {
                    let t = k.checked_sub(s).filter(|&t| t < time_tiles)?;
                    let id = s * time_tiles + t;
                    if s + 1 < p {
                        // The tile's elements that the next worker's tile may read.
                        for &array in &tiled {
                            handoffs.push(HandOff {
                                array,
                                part: id,
                                from: s,
                                step: k,
                                to: s + 1,
                            });
                        }
                    }
                    Some(Task {
                        unit: Unit::Block(id),
                        windows: id,
                        after: if s > 0 {
                            vec![(k - 1, s - 1)]
                        } else {
                            Vec::new()
                        },
                        claim: None,
                    })
                })
                .collect(),
            applies: true,
            ..Step::default()
        })
        .collect();
    Schedule {
        workers: p,
        steps,
        windows,
        lists: Vec::new(),
        handoffs,
        apply: None,
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

    /// The iterated array of a dense space: its index is the iteration's, so each axis
    /// follows its own dim, and a tile reads exactly its own elements (no shift, no write).
    fn iterated(row_s: &[i64], row_t: &[i64]) -> Self {
        ArrayTiles {
            forms: [row_s.to_vec(), row_t.to_vec()],
            bounded: [true, true],
            write_shifts: Vec::new(),
            read_shifts: vec![[0, 0]],
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
