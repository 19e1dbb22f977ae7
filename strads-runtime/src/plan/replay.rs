//! The schedule of a recorded run: each worker's recorded iterations per step, as lists,
//! to be run again one task at a time in the serial order the run is equivalent to.

use super::{ApplyPoints, Schedule, Step, Task, Unit, Window};

/// The schedule that replays `steps[t][w]` (iteration ids) with buffers applied after
/// the steps `applied` marks (and every `max_delay` iterations, see [`ApplyPoints`]).
/// Every array is reachable whole: the replay runs one task at a time.
pub(crate) fn schedule(
    steps: &[Vec<Vec<usize>>],
    applied: &[bool],
    max_delay: Option<usize>,
    buffered: bool,
    n_arrays: usize,
) -> Schedule {
    let p = steps.first().map_or(1, Vec::len).max(1);
    let mut lists = Vec::new();
    let steps = steps
        .iter()
        .enumerate()
        .map(|(t, step)| Step {
            tasks: step
                .iter()
                .map(|ids| {
                    lists.push(ids.iter().map(|&i| i as u32).collect());
                    Some(Task {
                        unit: Unit::Ids(lists.len() - 1),
                        windows: 0,
                        after: Vec::new(),
                        claim: None,
                    })
                })
                .collect(),
            applies: applied.get(t).copied().unwrap_or(false),
            ..Step::default()
        })
        .collect();
    Schedule {
        workers: p,
        steps,
        windows: vec![vec![Window::All { writable: true }; n_arrays]],
        lists,
        handoffs: Vec::new(),
        apply: buffered.then(|| ApplyPoints::new(max_delay, p)),
    }
}
