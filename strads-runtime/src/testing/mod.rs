//! Test mode: record the order in which workers ran iterations, replay it serially, force
//! the serial loop (see the `trace` module), and what tests of strads' loops share: bit
//! patterns, medians, and the record-replay-compare assertion.

pub use crate::trace::{LoopRun, Trace, record, replay, serial};

mod check;
pub use check::{Bits, Element, assert_replay_equal, bits, median};

thread_local! {
    static SURVEYS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static HANDED_BACK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static PLAN_ALWAYS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static HOME_BUDGET: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    static ENTRY_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the bytes on other ranks that a cluster job's driver may bring home for a
/// call of this thread (to run it on its threads, or as its serial loop, when the cost
/// model finds crossing cannot pay) set to `bytes` instead of 64 MiB: for tests of arrays
/// in parts smaller than that.
pub fn with_home_budget<R>(bytes: u64, f: impl FnOnce() -> R) -> R {
    let prev = HOME_BUDGET.with(|b| b.replace(Some(bytes)));
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOME_BUDGET.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The budget [`with_home_budget`] set on this thread, if any.
pub(crate) fn home_budget() -> Option<u64> {
    HOME_BUDGET.with(|b| b.get())
}

/// Runs `f` with the most entries a LIBSVM file may hold ([`load::libsvm`](crate::load::libsvm),
/// `libsvm_pair`) set to `n` instead of `u32::MAX` (what its `u32` offsets hold; a larger
/// `n` stays `u32::MAX`), for the loads of this thread (on a cluster job's driver, the
/// loads in place it asks the ranks for): for tests of the limit on small files. The
/// generators are not affected (they check their sizes up front).
pub fn with_entry_limit<R>(n: u64, f: impl FnOnce() -> R) -> R {
    let prev = ENTRY_LIMIT.with(|b| b.replace(Some(n)));
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ENTRY_LIMIT.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The limit [`with_entry_limit`] set on this thread, if any.
pub(crate) fn entry_limit() -> Option<u64> {
    ENTRY_LIMIT.with(|b| b.get())
}

/// Runs `f` with every loop call on this thread running its plan, as `STRADS_COST=0`
/// does for the whole program: for tests of plans on loops too small to pay.
pub fn plan_always<R>(f: impl FnOnce() -> R) -> R {
    let prev = PLAN_ALWAYS.with(|p| p.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PLAN_ALWAYS.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(prev);
    f()
}

/// Whether [`plan_always`] is in force on this thread.
pub(crate) fn plans_always() -> bool {
    PLAN_ALWAYS.with(|p| p.get())
}

/// Calls made on this thread that the cost model handed back to the loop's serial body
/// (`STRADS_SERIAL=1` runs aside).
pub fn handed_back() -> u64 {
    HANDED_BACK.with(|s| s.get())
}

/// Counts one call handed back to its serial body on this thread.
pub(crate) fn note_handed_back() {
    HANDED_BACK.with(|s| s.set(s.get() + 1));
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
