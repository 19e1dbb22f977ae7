//! Reconnaissance's schedule: batches of task groups from the recorded accesses.
//!
//! Batch `b` takes `levels + 1` steps. Before its first step every worker claims the rows
//! its groups touch (worker 0 also marks the rows of split components as nobody's), and
//! all wait; the pieces of split components run at their levels, each after the pieces it
//! shares an element with and claiming its rows when it starts; the task groups run at the
//! last step, after which all wait again. An element of the plan is a row of an array the
//! loop may write (`bases[a] + row`).

use strads_analysis::{GroupPlan, LoopSpec};

use super::{Claim, Claimant, Schedule, Step, Task, Unit, Window};

/// The schedule of `groups` on `p` workers; `bases[a]` is the element id of row 0 of
/// array `a`.
pub(crate) fn schedule(spec: &LoopSpec, groups: GroupPlan, bases: &[u64], p: usize) -> Schedule {
    let mut sched = Schedule {
        workers: p,
        steps: Vec::new(),
        windows: Vec::new(),
        lists: Vec::new(),
        handoffs: Vec::new(),
        apply: None,
    };
    let mut windows = |batch: usize, claimant: Claimant| -> usize {
        sched.windows.push(
            (0..spec.arrays.len())
                .map(|a| {
                    if spec.writes(a) && p > 1 {
                        Window::Owned {
                            base: bases[a] as usize,
                            batch,
                            claimant,
                        }
                    } else {
                        // One worker owns everything; arrays nobody writes are read-only.
                        Window::All {
                            writable: spec.writes(a),
                        }
                    }
                })
                .collect(),
        );
        sched.windows.len() - 1
    };
    let mut steps = Vec::new();
    let mut lists = Vec::new();
    for (b, batch) in groups.batches.into_iter().enumerate() {
        let first = steps.len();
        let levels = batch.levels();
        let mut batch_steps: Vec<Step> = (0..=levels)
            .map(|_| Step {
                tasks: vec![None; p],
                ..Step::default()
            })
            .collect();
        if p > 1 {
            let mut claims: Vec<Claim> = batch
                .owned
                .into_iter()
                .enumerate()
                .map(|(w, rows)| Claim {
                    worker: w,
                    rows,
                    batch: b,
                    claimant: Claimant::Worker(w),
                })
                .collect();
            claims.push(Claim {
                worker: 0,
                rows: batch.shared,
                batch: b,
                claimant: Claimant::Nobody,
            });
            // What each worker only reads: stamped for readers, so that a rank can tell
            // the reads it has current from those it does not.
            claims.extend(
                batch
                    .reads
                    .into_iter()
                    .enumerate()
                    .filter(|(_, rows)| !rows.is_empty())
                    .map(|(w, rows)| Claim {
                        worker: w,
                        rows,
                        batch: b,
                        claimant: Claimant::Readers(w),
                    }),
            );
            batch_steps[0].claims = claims;
        }
        let at: Vec<(usize, usize)> = batch
            .pieces
            .iter()
            .map(|pc| (first + pc.level, pc.worker))
            .collect();
        for (k, pc) in batch.pieces.into_iter().enumerate() {
            lists.push(pc.iters);
            let task = Task {
                unit: Unit::Ids(lists.len() - 1),
                windows: windows(b, Claimant::Piece(k)),
                after: pc.after.iter().map(|&a| at[a as usize]).collect(),
                claim: Some(Claim {
                    worker: pc.worker,
                    rows: pc.elems,
                    batch: b,
                    claimant: Claimant::Piece(k),
                }),
            };
            let slot = &mut batch_steps[pc.level].tasks[pc.worker];
            debug_assert!(slot.is_none(), "a worker's pieces have levels of their own");
            *slot = Some(task);
        }
        let last = &mut batch_steps[levels];
        for (w, run) in batch.runs.into_iter().enumerate() {
            lists.push(run);
            last.tasks[w] = Some(Task {
                unit: Unit::Ids(lists.len() - 1),
                windows: windows(b, Claimant::Worker(w)),
                after: Vec::new(),
                claim: None,
            });
        }
        last.applies = true;
        last.barrier_after = true;
        steps.extend(batch_steps);
    }
    sched.steps = steps;
    sched.lists = lists;
    sched
}
