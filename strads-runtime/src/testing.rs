//! Test mode: record the order in which workers ran iterations, replay it serially, force
//! the serial loop (see the `trace` module), and what tests of strads' loops share.

pub use crate::trace::{LoopRun, Trace, record, replay, serial};
