//! Test mode: record the order in which workers ran iterations, replay it serially, force
//! the serial loop (see the `trace` module), and what tests of strads' loops share: bit
//! patterns, medians, and the record-replay-compare assertion.

pub use crate::trace::{LoopRun, Trace, record, replay, serial};

mod check;
pub use check::{Bits, Element, assert_replay_equal, bits, median};
