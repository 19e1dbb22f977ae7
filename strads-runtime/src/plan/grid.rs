//! 1D and 2D schedules over the space's partitions.
//!
//! 1D plans run P blocks side by side. 2D plans run Orion's unordered schedule over `T = P *
//! split` time partitions ([`Unordered2d`]): worker `w` runs block `(w, (w * split + t) mod
//! T)` at step `t`; when it is done with a time partition it hands it to worker `w - 1`,
//! which needs it `split` steps later (with `split > 1` the hand-off travels while both
//! compute: what hides a transfer between processes). There is no barrier between steps:
//! a worker waits only for the one partition it needs.

use strads_analysis::{Candidate, LoopSpec, Partition, Placement, Unordered2d};

use super::{HandOff, Schedule, Step, Task, Unit, Window};

/// Time partitions per worker of a 2D plan on `p` workers: 2 when several workers share
/// the loop, so each hand-off has a step of compute to travel in (between processes a
/// block is sent while the next one computes); 1 for loops with write-back buffers, whose
/// application points come after every step. The same on threads and on a cluster, so
/// both run the same schedule.
pub(crate) fn time_split(spec: &LoopSpec, p: usize) -> usize {
    if p > 1 && spec.buffers.is_empty() {
        2
    } else {
        1
    }
}

/// The schedule of a 1D (`parts = [space]`) or 2D (`parts = [space, time]`) candidate. A
/// 2D plan's time partitions are `parts[1]`: `p * split` of them.
///
/// # Panics
/// When a 2D plan's time partitions are not a multiple of `p`.
pub(crate) fn schedule(
    spec: &LoopSpec,
    c: &Candidate,
    parts: &[Partition],
    shapes: &[&[usize]],
    p: usize,
) -> Schedule {
    let two_d = parts.len() == 2;
    let times = if two_d { parts[1].len() } else { 1 };
    assert!(
        !two_d || (times >= p && times % p == 0),
        "{times} time partitions for {p} workers"
    );
    let n_blocks = p * times;
    let windows = (0..n_blocks)
        .map(|b| {
            let (s, t) = (b / times, b % times);
            (0..spec.arrays.len())
                .map(|a| window(spec, c, parts, shapes, a, s, t))
                .collect()
        })
        .collect();
    let task = |id: usize, after: Vec<(usize, usize)>| Task {
        unit: Unit::Block(id),
        windows: id,
        after,
        claim: None,
    };
    let mut handoffs = Vec::new();
    let steps = if !two_d {
        vec![Step {
            tasks: (0..p).map(|w| Some(task(w, Vec::new()))).collect(),
            applies: true,
            ..Step::default()
        }]
    } else {
        let ring = Unordered2d {
            p,
            split: times / p,
        };
        let split = ring.split;
        let rotated: Vec<usize> = (0..spec.arrays.len())
            .filter(|&a| matches!(c.placements[a], Placement::Rotated(_)))
            .collect();
        (0..times)
            .map(|t| {
                let tasks = (0..p)
                    .map(|w| {
                        let (s, tp) = ring.block(w, t);
                        // The time partition comes from the worker that ran it `split`
                        // steps before.
                        let after = if t >= split {
                            vec![(t - split, (w + 1) % p)]
                        } else {
                            Vec::new()
                        };
                        if t + split < times && p > 1 {
                            for &array in &rotated {
                                handoffs.push(HandOff {
                                    array,
                                    part: tp,
                                    from: w,
                                    step: t,
                                    to: ring.next_holder(w),
                                });
                            }
                        }
                        Some(task(s * times + tp, after))
                    })
                    .collect();
                Step {
                    tasks,
                    applies: true,
                    ..Step::default()
                }
            })
            .collect()
    };
    Schedule {
        workers: p,
        steps,
        windows,
        lists: Vec::new(),
        handoffs,
        apply: None,
    }
}

/// How a read-only array's every access follows the partitioned dims: an axis whose
/// subscript is `k * p[dim] + c` in every access (one `k`, constants `c` within 64 of each
/// other: CSR's `offsets[s]` and `offsets[s + 1]`), for the space dim (`0`) or a 2D
/// plan's time dim (`1`). A block then reads only the image of its partition there (the
/// range from its least to its greatest index, every constant's), which is all a process
/// must receive of the array for it (the threads of one process read the array whole,
/// unchecked). The walker records every element a body reads (any other use of an array
/// is a compile error), so the image holds every read.
fn read_align(
    spec: &LoopSpec,
    c: &Candidate,
    n_parts: usize,
    array: usize,
) -> Option<(strads_analysis::Align, usize)> {
    let aligns = strads_analysis::alignments(spec, array);
    let uniform = |dim| aligns.iter().find(|a| a.dim == dim).copied();
    if let Some(al) = uniform(c.strategy.space_dim()) {
        return Some((al, 0));
    }
    let time = c.strategy.time_dim().filter(|_| n_parts == 2)?;
    uniform(time).map(|al| (al, 1))
}

/// What block `(s, t)` may touch of `array`: a window that may write for the arrays the
/// loop may write, a read-only one for arrays it reads by parts ([`read_align`]).
fn window(
    spec: &LoopSpec,
    c: &Candidate,
    parts: &[Partition],
    shapes: &[&[usize]],
    array: usize,
    s: usize,
    t: usize,
) -> Window {
    let writable = spec.arrays[array].mutable;
    let (align, part) = match c.placements[array] {
        Placement::Local(al) => (al, parts[0].range(s)),
        Placement::Rotated(al) => (al, parts[1].range(t)),
        Placement::Shared if !writable => match read_align(spec, c, parts.len(), array) {
            Some((al, 0)) => (al, parts[0].range(s)),
            Some((al, _)) => (al, parts[1].range(t)),
            None => return Window::All { writable: false },
        },
        // The iterated array of a dense space: a block reads its own elements, so its
        // window is the block's range of the space dim (for a 2D plan, every time
        // partition's: a superset of the block that stays with the worker).
        Placement::Iterated if super::read_as_blocks(spec, array) => {
            let axis = c.strategy.space_dim();
            let (lo, hi) = parts[0].range(s);
            return Window::Range {
                axis,
                lo,
                hi: hi.min(shapes[array][axis]),
                writable: false,
            };
        }
        Placement::Shared
        | Placement::Iterated
        | Placement::Unused
        | Placement::Tiled
        | Placement::Recorded => {
            return Window::All { writable: false };
        }
    };
    if !align.is_uniform() && writable {
        // Strided accesses with different constants: the indices themselves (a read-only
        // window is the range that holds them, below).
        return Window::Lattice {
            align,
            lo: part.0,
            hi: part.1,
            writable,
        };
    }
    let extent = shapes[array][align.axis];
    let (lo, hi) = align.image(part.0, part.1, extent);
    Window::Range {
        axis: align.axis,
        lo,
        hi,
        writable,
    }
}

/// Every iteration in one block (block 0), run by worker 0 of `p`: the others idle. The
/// block's iterations run in the space's own order, so the run is the serial loop's; each
/// array is whole in its window (writable when the loop may write it).
pub(crate) fn one_block(spec: &LoopSpec, p: usize) -> Schedule {
    let windows = vec![
        spec.arrays
            .iter()
            .map(|a| Window::All {
                writable: a.mutable,
            })
            .collect(),
    ];
    let mut tasks = vec![None; p.max(1)];
    tasks[0] = Some(Task {
        unit: Unit::Block(0),
        windows: 0,
        after: Vec::new(),
        claim: None,
    });
    Schedule {
        workers: p.max(1),
        steps: vec![Step {
            tasks,
            applies: true,
            ..Step::default()
        }],
        windows,
        lists: Vec::new(),
        handoffs: Vec::new(),
        apply: None,
    }
}
