//! 1D and 2D schedules over the space's partitions.
//!
//! 1D plans run P blocks side by side. 2D plans run Orion's unordered schedule: worker `w`
//! runs block `(w, (w + t) mod P)` at step `t`; when it is done with a time partition it
//! hands it to worker `w - 1`, which needs it next. There is no barrier between steps: a
//! worker waits only for the one partition it needs.

use strads_analysis::{Candidate, LoopSpec, Partition, Placement, Unordered2d};

use super::{HandOff, Schedule, Step, Task, Unit, Window};

/// The schedule of a 1D (`parts = [space]`) or 2D (`parts = [space, time]`) candidate.
pub(crate) fn schedule(
    spec: &LoopSpec,
    c: &Candidate,
    parts: &[Partition],
    shapes: &[&[usize]],
    p: usize,
) -> Schedule {
    let two_d = parts.len() == 2;
    let n_blocks = p.pow(parts.len() as u32);
    let windows = (0..n_blocks)
        .map(|b| {
            let (s, t) = if two_d { (b / p, b % p) } else { (b, 0) };
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
        let ring = Unordered2d { p };
        let rotated: Vec<usize> = (0..spec.arrays.len())
            .filter(|&a| matches!(c.placements[a], Placement::Rotated(_)))
            .collect();
        (0..p)
            .map(|t| {
                let tasks = (0..p)
                    .map(|w| {
                        let (s, tp) = ring.block(w, t);
                        // The time partition comes from the worker that ran it last step.
                        let after = if t > 0 {
                            vec![(t - 1, (w + 1) % p)]
                        } else {
                            Vec::new()
                        };
                        if t + 1 < p && p > 1 {
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
                        Some(task(s * p + tp, after))
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

/// What block `(s, t)` may touch of `array`.
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
        Placement::Shared
        | Placement::Iterated
        | Placement::Unused
        | Placement::Tiled
        | Placement::Recorded => {
            return Window::All { writable: false };
        }
    };
    if !align.is_uniform() {
        // Strided accesses with different constants: the indices themselves.
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
