//! Test mode: record the order in which workers ran iterations, replay it serially, force
//! the serial loop (see the `trace` module), and what tests of strads' loops share: bit
//! patterns, medians, and the record-replay-compare assertion.

pub use crate::trace::{LoopRun, Trace, record, replay, serial};

mod check;
pub use check::{Bits, Element, assert_replay_equal, bits, median};

thread_local! {
    static SURVEYS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Reconnaissance surveys this thread has run (each records a loop's accesses once and
/// makes a plan): a test calls a loop again and checks whether it was planned again.
pub fn surveys() -> u64 {
    SURVEYS.with(|s| s.get())
}

/// Counts one survey run on this thread.
pub(crate) fn note_survey() {
    SURVEYS.with(|s| s.set(s.get() + 1));
}
