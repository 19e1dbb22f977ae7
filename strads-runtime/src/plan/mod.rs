//! Schedules as data: what every worker of a loop call runs, step by step, what it may
//! touch, what it waits for, what moves between workers and where write-back buffers are
//! applied. No threads, pointers or time in here: the thread executor (`exec`) runs a
//! [`Schedule`], the serialized replay runs the one rebuilt from a recorded run, and the
//! cluster will ship one.
//!
//! - `grid`: 1D blocks and Orion's unordered 2D rotation, from the space's partitions.
//! - `wavefront`: tiles of a (skewed) nest run as a pipeline.
//! - `recon`: reconnaissance's batches of task groups and split pieces.
//! - `replay`: the schedule of a recorded run, to replay it serially.
//! - [`apply`]: where buffers are applied (`max_delay` included), one rule for all.
//! - `window`: what a task may touch of each array, and the check that tasks which may
//!   run at once never overlap a write.

pub mod apply;
pub(crate) mod grid;
pub(crate) mod recon;
pub(crate) mod replay;
pub(crate) mod summary;
pub(crate) mod wavefront;
pub(crate) mod window;

#[cfg(test)]
mod read_windows_tests;
#[cfg(test)]
pub(crate) mod tests;

pub use apply::ApplyPoints;

/// Whether `array` is the iterated array of a dense space that the body does not index:
/// each block then reads exactly its own elements, and its window says so (a call across
/// processes sends a rank only the parts its blocks read, and reads parts left on other
/// ranks where they are). An array the body also indexes, a buffer (a `sync` replica) or
/// an array a buffer's apply function updates keeps the whole array as its window.
pub(crate) fn read_as_blocks(spec: &strads_analysis::LoopSpec, array: usize) -> bool {
    let applied = spec
        .buffers
        .iter()
        .filter_map(|b| b.apply.as_ref())
        .any(|f| f.targets.contains(&array));
    matches!(
        spec.space,
        strads_analysis::SpaceKind::Array { array: a, sparse: false } if a == array
    ) && !spec.accesses.iter().any(|acc| acc.array == array)
        && !spec.is_buffer(array)
        && !applied
}
pub use window::{Claimant, TileWindow, Window};
pub(crate) use window::{READERS, WORKER_BITS, stamp};

/// The plan of one loop call for `workers` workers.
///
/// Step `t` of worker `w` runs `steps[t].tasks[w]`, if any. A worker runs its tasks in
/// step order; a task starts after the tasks in its `after` list are done (hand-offs,
/// pieces), and after every task of earlier steps when a barrier separates them (a step
/// with claims, a step ending with `barrier_after`, or buffers applied at a step's end).
/// The serial order equivalent to the run is step by step, worker by worker: every
/// dependence the plan keeps points forward in it.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Workers.
    pub workers: usize,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Window sets: `windows[k][array]`; a task names its set by `k`.
    pub windows: Vec<Vec<Window>>,
    /// Iteration lists (positions in the serial order) that tasks run by [`Unit::Ids`].
    pub lists: Vec<Vec<u32>>,
    /// What travels between workers after a task: the cluster's messages. The thread
    /// executor only waits (`Task::after`); here the hand-offs are named.
    pub handoffs: Vec<HandOff>,
    /// Where write-back buffers are applied, when the loop has them.
    pub apply: Option<ApplyPoints>,
}

impl Schedule {
    /// Checks a schedule another process made against this one's data before anything
    /// indexes by it: a task per worker and step, window sets of `arrays` windows, lists of
    /// iterations below `len`, waits that point backwards in the schedule, ownership windows
    /// and claims inside a table of `owned` rows.
    pub(crate) fn check_against(
        &self,
        arrays: usize,
        len: usize,
        owned: u64,
    ) -> Result<(), String> {
        let p = self.workers;
        if p == 0 {
            return Err("a schedule of no workers".into());
        }
        if let Some(set) = self.windows.iter().find(|set| set.len() != arrays) {
            return Err(format!(
                "a window set of {} arrays, not {arrays}",
                set.len()
            ));
        }
        if let Some(&i) = self.lists.iter().flatten().find(|&&i| i as usize >= len) {
            return Err(format!("iteration {i} of a space of {len}"));
        }
        let bad_owned = self.windows.iter().flatten().any(|w| match w {
            Window::Owned { base, .. } => *base as u64 > owned,
            _ => false,
        });
        if bad_owned {
            return Err(format!(
                "an ownership window beyond a table of {owned} rows"
            ));
        }
        for (t, step) in self.steps.iter().enumerate() {
            if step.tasks.len() != p {
                return Err(format!(
                    "step {t} has {} tasks for {p} workers",
                    step.tasks.len()
                ));
            }
            for c in step
                .claims
                .iter()
                .chain(step.tasks.iter().flatten().filter_map(|k| k.claim.as_ref()))
            {
                if c.worker >= p || c.rows.iter().any(|&r| r >= owned) {
                    return Err(format!("step {t} claims rows outside a table of {owned}"));
                }
            }
            for task in step.tasks.iter().flatten() {
                if task.windows >= self.windows.len() {
                    return Err(format!("step {t} names window set {}", task.windows));
                }
                if let Unit::Ids(k) = task.unit
                    && k >= self.lists.len()
                {
                    return Err(format!("step {t} names list {k}"));
                }
                if task.after.iter().any(|&(u, v)| u >= t || v >= p) {
                    return Err(format!("step {t} waits for a task not before it"));
                }
            }
        }
        Ok(())
    }
}

/// One step of a schedule.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// Per worker, the task it runs in this step.
    pub tasks: Vec<Option<Task>>,
    /// Rows claimed before the step, each by the worker named, after every task of the
    /// earlier steps and before any task of this one (a barrier on each side).
    pub claims: Vec<Claim>,
    /// Every worker waits for all after the step.
    pub barrier_after: bool,
    /// Write-back buffers are applied at the end of the step (and at its `max_delay`
    /// rounds), with every worker parked.
    pub applies: bool,
}

/// What a worker runs in one step.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Task {
    /// The iterations.
    pub unit: Unit,
    /// Its window set (an index into [`Schedule::windows`]).
    pub windows: usize,
    /// Tasks that must be done before it starts, as `(step, worker)`.
    pub after: Vec<(usize, usize)>,
    /// Rows it claims when it starts (a piece of a split component).
    pub claim: Option<Claim>,
}

/// The iterations of a task.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Block `id` of the space's blocks (buckets, boxes or tiles).
    Block(usize),
    /// The iteration list [`Schedule::lists`]`[k]`.
    Ids(usize),
}

/// Rows of written arrays that a worker claims for a batch (reconnaissance).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The worker that writes the claim.
    pub worker: usize,
    /// Element ids (a row of a written array each; see `recon`).
    pub rows: Vec<u64>,
    /// The batch.
    pub batch: usize,
    /// Who may touch them.
    pub claimant: Claimant,
}

/// A part of an array that moves from one worker to another after a step.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct HandOff {
    /// The array (an index into the spec).
    pub array: usize,
    /// Which part: a time partition (2D) or a tile (wavefront).
    pub part: usize,
    /// The worker that had it, and the step after which it leaves.
    pub from: usize,
    pub step: usize,
    /// The worker that needs it next.
    pub to: usize,
}

impl Schedule {
    /// The task of worker `w` at step `t`.
    pub fn task(&self, t: usize, w: usize) -> Option<&Task> {
        self.steps.get(t)?.tasks.get(w)?.as_ref()
    }

    /// Whether a barrier separates step `t` from step `t + 1`.
    pub fn barrier_between(&self, t: usize) -> bool {
        let here = &self.steps[t];
        let multi = self.workers > 1;
        multi
            && (here.barrier_after
                || (here.applies && self.apply.is_some())
                || self.steps.get(t + 1).is_some_and(|n| !n.claims.is_empty()))
    }

    /// The place of each task in the serial order equivalent to the run (steps in order,
    /// workers in order), indexed `[step][worker]`: reductions fold their parts in it.
    pub fn fold_order(&self) -> Vec<Vec<Option<usize>>> {
        let mut k = 0;
        self.steps
            .iter()
            .map(|s| {
                s.tasks
                    .iter()
                    .map(|t| {
                        t.as_ref().map(|_| {
                            k += 1;
                            k - 1
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// For every task, as `[step][worker]`, the latest task of each worker that is done
    /// before it starts (a vector clock; `None`: none of that worker's). Two tasks may
    /// run at once exactly when neither's clock covers the other.
    pub fn clocks(&self) -> Vec<Vec<Vec<Option<usize>>>> {
        let p = self.workers;
        let mut clocks: Vec<Vec<Vec<Option<usize>>>> = Vec::with_capacity(self.steps.len());
        // What each worker has seen after its last task.
        let mut seen: Vec<Vec<Option<usize>>> = vec![vec![None; p]; p];
        let join = |a: &mut Vec<Option<usize>>, b: &[Option<usize>]| {
            for (x, y) in a.iter_mut().zip(b) {
                *x = (*x).max(*y);
            }
        };
        for (t, step) in self.steps.iter().enumerate() {
            if t > 0 && self.barrier_between(t - 1) {
                let mut all = vec![None; p];
                for s in &seen {
                    join(&mut all, s);
                }
                seen.iter_mut().for_each(|s| s.clone_from(&all));
            }
            let row: Vec<Vec<Option<usize>>> = seen
                .iter()
                .zip(&step.tasks)
                .map(|(s, task)| {
                    let mut c = s.clone();
                    for &(u, v) in task.iter().flat_map(|t| &t.after) {
                        c[v] = c[v].max(Some(u));
                        join(&mut c, &clocks[u][v]);
                    }
                    c
                })
                .collect();
            for (w, task) in step.tasks.iter().enumerate() {
                if task.is_some() {
                    let mut mine = row[w].clone();
                    mine[w] = Some(t);
                    seen[w] = mine;
                }
            }
            clocks.push(row);
        }
        clocks
    }

    /// Pairs of tasks `((t1, w1), (t2, w2))` on different workers that may run at once.
    pub fn concurrent_pairs(&self) -> Vec<((usize, usize), (usize, usize))> {
        let clocks = self.clocks();
        let tasks: Vec<(usize, usize)> = (0..self.steps.len())
            .flat_map(|t| (0..self.workers).map(move |w| (t, w)))
            .filter(|&(t, w)| self.task(t, w).is_some())
            .collect();
        let before = |(t1, w1): (usize, usize), (t2, w2): (usize, usize)| {
            clocks[t2][w2][w1].is_some_and(|c| c >= t1)
        };
        let mut out = Vec::new();
        for (i, &a) in tasks.iter().enumerate() {
            for &b in &tasks[i + 1..] {
                if a.1 != b.1 && !before(a, b) && !before(b, a) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// `None` when no two tasks that may run at once have windows that overlap where
    /// one of them writes; otherwise which ones do. `shapes` are the arrays' shapes.
    pub fn overlap(&self, shapes: &[&[usize]]) -> Option<String> {
        for ((t1, w1), (t2, w2)) in self.concurrent_pairs() {
            let (a, b) = (
                self.task(t1, w1).expect("a task"),
                self.task(t2, w2).expect("a task"),
            );
            let (wa, wb) = (&self.windows[a.windows], &self.windows[b.windows]);
            for (arr, (x, y)) in wa.iter().zip(wb).enumerate() {
                if window::clash(x, y, shapes.get(arr).copied()) {
                    return Some(format!(
                        "the tasks of workers {w1} (step {t1}) and {w2} (step {t2}) may run at \
                         once and touch a common element of array {arr}"
                    ));
                }
            }
        }
        None
    }

    /// Tasks in the serial order equivalent to the run: `(step, worker, task)`.
    pub fn serial_order(&self) -> impl Iterator<Item = (usize, usize, &Task)> {
        self.steps.iter().enumerate().flat_map(|(t, s)| {
            s.tasks
                .iter()
                .enumerate()
                .filter_map(move |(w, task)| task.as_ref().map(|task| (t, w, task)))
        })
    }
}
