//! The executor on hand-made schedules: waits, barriers, application points and the
//! serialized replay's order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use strads_analysis::{LoopSpec, SpaceKind};

use super::block::Block;
use super::state::LoopState;
use super::threads::{Execution, execute};
use crate::plan::{ApplyPoints, Schedule, Step, Task, Unit, Window};
use crate::space::{RangeSpace, Space};
use crate::sync::Parked;

static STATE: LoopState = LoopState::new(LoopSpec::new(
    "hand_made",
    &[std::borrow::Cow::Borrowed("i")],
    SpaceKind::Range,
    &[],
    &[],
    false,
));

/// `(step, worker)`.
type Seq = (usize, usize);

/// A schedule of `steps[t][w]` iteration lists (`None`: no task), with `after` waits.
fn schedule(steps: &[Vec<Option<Vec<u32>>>], after: &[(Seq, Seq)]) -> Schedule {
    let p = steps[0].len();
    let mut lists = Vec::new();
    let steps = steps
        .iter()
        .enumerate()
        .map(|(t, row)| Step {
            tasks: row
                .iter()
                .enumerate()
                .map(|(w, ids)| {
                    ids.as_ref().map(|ids| {
                        lists.push(ids.clone());
                        Task {
                            unit: Unit::Ids(lists.len() - 1),
                            windows: 0,
                            after: after
                                .iter()
                                .filter(|(of, _)| *of == (t, w))
                                .map(|(_, on)| *on)
                                .collect(),
                            claim: None,
                        }
                    })
                })
                .collect(),
            ..Step::default()
        })
        .collect();
    Schedule {
        workers: p,
        steps,
        windows: vec![vec![Window::All { writable: false }]],
        lists,
        handoffs: Vec::new(),
        apply: None,
    }
}

/// Runs `sched`, logging `(seq, iteration)` in the order iterations ran (and `apply` for
/// each application point as `((usize::MAX, applications), usize::MAX)`).
fn run(sched: &Schedule, serialized: bool, buffered: bool) -> Vec<((usize, usize), usize)> {
    let space = RangeSpace::new(0, 64);
    let log = Mutex::new(Vec::new());
    let applied = AtomicUsize::new(0);
    let apply = |_: &Parked| {
        let k = applied.fetch_add(1, Ordering::SeqCst);
        log.lock().unwrap().push(((usize::MAX, k), usize::MAX));
    };
    let exec = Execution {
        state: &STATE,
        space: &space,
        blocks: None,
        schedule: sched,
        owners: None,
        apply: buffered.then_some(&apply as &(dyn Fn(&Parked) + Sync)),
        serialized,
        tracing: false,
        peers: None,
    };
    let f = |blk: &mut Block<'_, RangeSpace>| {
        let seq = blk.seq();
        // Slow enough that a missing wait would show.
        std::thread::sleep(std::time::Duration::from_millis(2));
        blk.for_each(|i| log.lock().unwrap().push((seq, i)));
    };
    execute(&exec, &f);
    let _ = space.len();
    log.into_inner().unwrap()
}

fn position(log: &[((usize, usize), usize)], seq: (usize, usize)) -> (usize, usize) {
    let at: Vec<usize> = (0..log.len()).filter(|&k| log[k].0 == seq).collect();
    (at[0], *at.last().unwrap())
}

#[test]
fn a_task_starts_after_the_tasks_it_waits_for() {
    // Worker 0's step-1 task waits for worker 1's step-0 task, which is slow to start.
    let sched = schedule(
        &[
            vec![Some(vec![0]), Some(vec![1, 2, 3, 4, 5, 6])],
            vec![Some(vec![7]), Some(vec![8])],
        ],
        &[((1, 0), (0, 1))],
    );
    for _ in 0..5 {
        let log = run(&sched, false, false);
        let (_, done) = position(&log, (0, 1));
        let (start, _) = position(&log, (1, 0));
        assert!(done < start, "{log:?}");
        assert_eq!(log.len(), 9);
    }
}

#[test]
fn a_serialized_run_is_the_serial_order() {
    let sched = schedule(
        &[
            vec![Some(vec![0, 1]), Some(vec![2]), Some(vec![3, 4])],
            vec![None, Some(vec![5]), Some(vec![6])],
            vec![Some(vec![7]), None, Some(vec![8, 9])],
        ],
        &[],
    );
    let log = run(&sched, true, false);
    let ids: Vec<usize> = log.iter().map(|x| x.1).collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
}

#[test]
fn buffers_apply_at_every_round_of_a_step_with_every_worker_parked() {
    // Rounds of 2 iterations; step 0's longest task has 5: three rounds, an application
    // after each; step 1 one round. One worker is idle in step 1 but takes part.
    let mut sched = schedule(
        &[
            vec![Some(vec![0, 1, 2, 3, 4]), Some(vec![5, 6])],
            vec![Some(vec![7]), None],
        ],
        &[],
    );
    for step in &mut sched.steps {
        step.applies = true;
    }
    sched.apply = Some(ApplyPoints::new(Some(2), 2));
    let serial = run(&sched, true, true);
    let order: Vec<usize> = serial.iter().map(|x| x.1).collect();
    let m = usize::MAX;
    // Round by round, worker by worker, the buffers applied after each round.
    assert_eq!(order, vec![0, 1, 5, 6, m, 2, 3, m, 4, m, 7, m]);
    // Live, the same points: no iteration of a round runs before the previous application.
    for _ in 0..5 {
        let live = run(&sched, false, true);
        let applications: Vec<usize> = (0..live.len()).filter(|&k| live[k].1 == m).collect();
        assert_eq!(applications.len(), 4, "{live:?}");
        let round_of = |i: usize| match i {
            0 | 1 | 5 | 6 => 0,
            2 | 3 => 1,
            4 => 2,
            _ => 3,
        };
        for (k, &(_, i)) in live.iter().enumerate() {
            if i != m {
                let before = applications.iter().filter(|&&a| a < k).count();
                assert_eq!(before, round_of(i), "{live:?}");
            }
        }
    }
}

#[test]
fn one_worker_applies_every_n_iterations_of_the_call() {
    let mut sched = schedule(&[vec![Some(vec![0, 1, 2])], vec![Some(vec![3, 4])]], &[]);
    for step in &mut sched.steps {
        step.applies = true;
    }
    sched.apply = Some(ApplyPoints::new(Some(2), 1));
    let log = run(&sched, false, true);
    let m = usize::MAX;
    let order: Vec<usize> = log.iter().map(|x| x.1).collect();
    assert_eq!(order, vec![0, 1, m, 2, 3, m, 4]);
}

#[test]
fn a_block_counts_its_iterations_once() {
    let mut sched = schedule(&[vec![Some(vec![0, 1, 2])]], &[]);
    sched.steps[0].applies = true;
    sched.apply = Some(ApplyPoints::new(Some(2), 1));
    let space = RangeSpace::new(0, 8);
    let apply = |_: &Parked| ();
    let exec = Execution {
        state: &STATE,
        space: &space,
        blocks: None,
        schedule: &sched,
        owners: None,
        apply: Some(&apply as &(dyn Fn(&Parked) + Sync)),
        serialized: false,
        tracing: false,
        peers: None,
    };
    let twice = |blk: &mut Block<'_, RangeSpace>| {
        blk.for_each(|_| ());
        blk.for_each(|_| ());
    };
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(&exec, &twice)))
        .expect_err("a second for_each is refused");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`for_each` ran twice on one block of loop `hand_made`"),
        "{msg}"
    );
}
