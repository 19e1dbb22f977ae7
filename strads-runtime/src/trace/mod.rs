//! Traces of runs: record the order in which workers ran iterations, replay it serially,
//! force the serial loop. The correctness oracle of strads (STRADS' dual testing): a
//! parallel run must equal the serial replay of its recorded order, bit for bit (except
//! a `sync = "hybrid"` loop's, whose threads share a replica as their timing goes). The
//! replay runs the schedule `plan::replay` rebuilds from a [`LoopRun`], through the same
//! executor as the run, one segment at a time.

use std::cell::RefCell;
use std::collections::VecDeque;

use crate::pool::Restore;

/// One parallel loop call as the workers ran it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopRun {
    /// The annotated function's name.
    pub loop_name: String,
    /// The strategy line, as `STRADS_EXPLAIN` prints it.
    pub plan: String,
    /// `steps[t][w]`: the iteration ids worker `w` ran at step `t`, in the order it ran
    /// them. Ids are positions in the loop's serial order.
    pub steps: Vec<Vec<Vec<usize>>>,
    /// Loops with write-back buffers: `applied[t]` tells whether the buffers were applied
    /// after step `t` (all `false` without buffers).
    pub applied: Vec<bool>,
    /// Loops with write-back buffers and `max_delay = n`: `Some(n)`. The buffers were also
    /// applied after every `n` iterations of each worker within a step (with one worker:
    /// every `n` iterations of the call, and not after steps).
    pub max_delay: Option<usize>,
}

impl LoopRun {
    /// A serial order equivalent to the parallel run: step by step, worker by worker.
    /// Blocks of one step touch disjoint data, and every block of step `t + 1` starts after
    /// the blocks of step `t` it depends on, so this order gives the same result.
    pub fn order(&self) -> Vec<usize> {
        self.steps.iter().flatten().flatten().copied().collect()
    }

    /// Iterations each worker ran, in order.
    pub fn per_worker(&self) -> Vec<Vec<usize>> {
        let n = self.steps.first().map_or(0, |s| s.len());
        (0..n)
            .map(|w| {
                self.steps
                    .iter()
                    .flat_map(|s| s[w].iter().copied())
                    .collect()
            })
            .collect()
    }
}

/// Every parallel loop call made inside [`record`], in call order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The calls.
    pub runs: Vec<LoopRun>,
}

thread_local! {
    static RECORDING: RefCell<Option<Vec<LoopRun>>> = const { RefCell::new(None) };
    static REPLAYING: RefCell<Option<VecDeque<LoopRun>>> = const { RefCell::new(None) };
    static FORCE_SERIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, recording every parallel loop call it makes on this thread. When `f` panics,
/// recording ends as well (the calls recorded so far are dropped).
pub fn record<R>(f: impl FnOnce() -> R) -> (R, Trace) {
    /// Puts the previous mode back, on return and on a panic alike.
    struct Restore(Option<Option<Vec<LoopRun>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(prev) = self.0.take() {
                RECORDING.with(|r| *r.borrow_mut() = prev);
            }
        }
    }
    let mut restore = Restore(Some(RECORDING.with(|r| r.replace(Some(Vec::new())))));
    let out = f();
    let prev = restore.0.take().expect("put back once");
    let runs = RECORDING.with(|r| r.replace(prev)).unwrap_or_default();
    (out, Trace { runs })
}

/// Runs `f` with every parallel loop call replaying, serially on this thread, the order of
/// the next recorded call of `trace`.
///
/// # Panics
/// When `f` calls a loop other than the next recorded one, or more loops than recorded.
pub fn replay<R>(trace: &Trace, f: impl FnOnce() -> R) -> R {
    let mut prev = REPLAYING.with(|r| r.replace(Some(trace.runs.iter().cloned().collect())));
    let _restore = Restore(move || {
        REPLAYING.with(|r| *r.borrow_mut() = prev.take());
    });
    f()
}

/// Runs `f` with every `#[parallel_for]` loop running its original serial loop.
pub fn serial<R>(f: impl FnOnce() -> R) -> R {
    let prev = FORCE_SERIAL.with(|s| s.replace(true));
    let _restore = Restore(move || FORCE_SERIAL.with(|s| s.set(prev)));
    f()
}

pub(crate) fn forced_serial() -> bool {
    FORCE_SERIAL.with(|s| s.get())
}

pub(crate) fn recording() -> bool {
    RECORDING.with(|r| r.borrow().is_some())
}

pub(crate) fn replaying() -> bool {
    REPLAYING.with(|r| r.borrow().is_some())
}

pub(crate) fn push_run(run: LoopRun) {
    RECORDING.with(|r| {
        if let Some(runs) = r.borrow_mut().as_mut() {
            runs.push(run);
        }
    });
}

/// The run to replay for the loop `name`, when replaying.
pub(crate) fn next_replay(name: &str) -> Option<LoopRun> {
    REPLAYING.with(|r| {
        let mut r = r.borrow_mut();
        let queue = r.as_mut()?;
        let run = queue.pop_front().unwrap_or_else(|| {
            panic!("strads replay: `{name}` was called, but the trace has no more loop calls")
        });
        assert_eq!(
            run.loop_name, name,
            "strads replay: the trace's next call is `{}`, but `{name}` was called",
            run.loop_name
        );
        Some(run)
    })
}
