//! What both of the cost model's timed choices share (the plan against the serial loop,
//! and on a cluster's driver where the plan runs): how measurements are averaged, and
//! the duel of two measured ways with trials of the loser.

/// The share of the time spent since the last trial that a trial of the losing way may
/// cost.
pub(crate) const TRIAL_BUDGET: f64 = 0.02;

/// Moving average of measurements: recent calls count most.
pub(crate) fn average(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| 0.5 * o + 0.5 * new)
}

/// Two measured ways: the cheaper runs, the other is tried again after enough calls that a
/// trial costs at most [`TRIAL_BUDGET`] of the time spent since the choice.
#[derive(Debug, Default)]
pub(crate) struct Duel {
    /// The way chosen once both were measured (`true`: the first).
    pub(crate) chose_first: Option<bool>,
    /// Calls since the way was chosen, and after how many the other is tried again.
    pub(crate) since: u64,
    pub(crate) trial_after: u64,
}

impl Duel {
    pub(crate) const fn new() -> Duel {
        Duel {
            chose_first: None,
            since: 0,
            trial_after: 0,
        }
    }

    /// With `first` and `second` each way's measured cost (the first wins a tie) and a
    /// trial of the loser taking `calls` calls: whether this call runs the first way, and
    /// the calls until the next trial when the choice changed now (to be said).
    pub(crate) fn pick(&mut self, first: f64, second: f64, calls: f64) -> (bool, Option<u64>) {
        let first_wins = first <= second;
        if self.chose_first != Some(first_wins) {
            self.chose_first = Some(first_wins);
            self.since = 0;
            let (lo, hi) = if first_wins {
                (first, second)
            } else {
                (second, first)
            };
            self.trial_after = (calls * (hi / lo.max(1e-9) - 1.0) / TRIAL_BUDGET)
                .ceil()
                .clamp(2.0, 10_000.0) as u64;
            return (first_wins, Some(self.trial_after));
        }
        self.since += 1;
        // A trial of the losing way when it is due.
        let trial = self.since >= self.trial_after;
        if trial {
            self.since = 0;
        }
        (first_wins != trial, None)
    }
}

#[cfg(test)]
mod tests {
    use super::Duel;

    /// The first way wins a tie; the loser runs once after `calls x (ratio - 1) / 2%`
    /// calls; a change of winner is said once.
    #[test]
    fn the_cheaper_runs_and_the_loser_is_tried_on_schedule() {
        let mut d = Duel::new();
        assert_eq!(d.pick(5.0, 5.0, 1.0), (true, Some(2)));
        // The second way at half the cost: it wins, the first tried after 50 calls.
        assert_eq!(d.pick(10.0, 5.0, 1.0), (false, Some(50)));
        let runs: Vec<bool> = (0..50).map(|_| d.pick(10.0, 5.0, 1.0).0).collect();
        assert!(runs[..49].iter().all(|first| !first));
        assert!(runs[49]);
        assert_eq!(d.pick(10.0, 5.0, 1.0), (false, None));
        // Two calls a trial double the wait.
        let mut two = Duel::new();
        assert_eq!(two.pick(10.0, 5.0, 2.0), (false, Some(100)));
    }
}
