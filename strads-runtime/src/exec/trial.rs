//! What both of the cost model's timed choices share (the plan against the serial loop,
//! and on a cluster's driver where the plan runs): how measurements are averaged, and
//! what a trial of the losing way may cost.

/// The share of the time spent since the last trial that a trial of the losing way may
/// cost.
pub(crate) const TRIAL_BUDGET: f64 = 0.02;

/// Moving average of measurements: recent calls count most.
pub(crate) fn average(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| 0.5 * o + 0.5 * new)
}
