//! On a cluster job's driver, where a call's plan runs (`exec::cost` asks): across the
//! ranks, or on the driver's threads as the job's workers.

use super::trial::{Duel, average};

/// On a cluster job's driver, where a call's plan runs: across the ranks, or on the
/// driver's threads as the job's workers (the same schedule, so the same bits). Measured
/// like the serial loop against the plan: nanoseconds per iteration of each way, the
/// cheaper chosen, the other tried again after calls that make the trial cost at most
/// [`TRIAL_BUDGET`](super::trial::TRIAL_BUDGET) of the time since. When every rank is on the driver's machine the
/// driver's threads always run it: they share its cores with the other ranks, and do the
/// same work without the network. Before any measurement a call runs on the driver (a
/// crossing's first call pays the shipping of everything it reads: it can cost many times
/// the loop itself); crossing is then tried on two calls, the first a warm-up, at once
/// when the job has more workers than the driver's cores, else after
/// [`FIRST_TRIAL_ROOMY`] calls. Only calls whose arrays fit the driver are placed
/// (`exec::across::HOME_BUDGET`); others run where their parts are.
#[derive(Debug, Default)]
pub(crate) struct Place {
    cross: Option<f64>,
    local: Option<f64>,
    /// The driver's threads (first) against crossing, once both were measured; before
    /// that, with a core for every worker, calls until the first crossing.
    duel: Duel,
    /// The way of the last call. While `repeat` is set the call running is the first after
    /// a switch of way: a warm-up (crossing after the driver's threads re-ships what came
    /// home; the driver's threads after crossing fetch what stayed away), not recorded;
    /// the next call then runs the same way, and is.
    last: Option<Where>,
    repeat: Option<Where>,
    /// Crossing was refused (captured values too large, ...): the driver's threads run
    /// every call.
    refused: bool,
    /// Whether the one-machine decision was said.
    said_one_host: bool,
}

/// With a core for every worker of the job on the driver's machine, crossing is first
/// tried after this many calls on the driver's threads (a trial of up to twice their time
/// then costs at most [`TRIAL_BUDGET`](super::trial::TRIAL_BUDGET) of the time spent).
const FIRST_TRIAL_ROOMY: u64 = 50;

impl Place {
    pub(crate) const fn new() -> Place {
        Place {
            cross: None,
            local: None,
            duel: Duel::new(),
            last: None,
            repeat: None,
            refused: false,
            said_one_host: false,
        }
    }

    /// Crossing was refused: the driver's threads run every call from now on.
    pub(crate) fn refuse(&mut self) {
        self.refused = true;
    }

    /// Whether this is the first call placed because every rank is on this machine (its
    /// decision is said once).
    pub(crate) fn first_on_one_host(&mut self) -> bool {
        !std::mem::replace(&mut self.said_one_host, true)
    }

    /// Where the next call runs, and the decision line when the decision changes. `roomy`:
    /// the driver's machine has a core for every worker of the job, so its threads run
    /// the job's workers at full speed and crossing can only gain by other machines'
    /// memory and caches: it is first tried only after [`FIRST_TRIAL_ROOMY`] calls.
    pub(crate) fn next(&mut self, workers: usize, roomy: bool) -> (Where, Option<String>) {
        if self.refused {
            return (Where::Driver, None);
        }
        if let Some(w) = self.repeat.take() {
            self.last = Some(w);
            return (w, None);
        }
        let (w, line) = self.choose(workers, roomy);
        if self.last.is_some_and(|l| l != w) {
            self.repeat = Some(w);
        }
        self.last = Some(w);
        (w, line)
    }

    fn choose(&mut self, workers: usize, roomy: bool) -> (Where, Option<String>) {
        let (cross, local) = match (self.cross, self.local) {
            (Some(c), Some(l)) => (c, l),
            (None, None) => {
                let when = if roomy {
                    format!(
                        "after {FIRST_TRIAL_ROOMY} calls (this machine has a core for each \
                         worker)"
                    )
                } else {
                    "on the next call".to_string()
                };
                let line = format!(
                    "runs on the driver's threads as the job's {workers} workers: a first \
                     call, whose arrays fit the driver (crossing would first ship them \
                     out); crossing is tried {when}, timed twice"
                );
                return (Where::Driver, Some(line));
            }
            (None, Some(_)) => {
                let d = &mut self.duel;
                d.since += 1;
                if roomy && d.since < FIRST_TRIAL_ROOMY {
                    return (Where::Driver, None);
                }
                d.since = 0;
                return (Where::Across, None);
            }
            (Some(_), None) => return (Where::Driver, None),
        };
        // A trial is two calls (a warm-up and a measured one).
        let (local_runs, changed) = self.duel.pick(local, cross, 2.0);
        let way = if local_runs {
            Where::Driver
        } else {
            Where::Across
        };
        let line = changed.map(|after| {
            format!(
                "{} (measured: across the ranks {cross:.1} ns per iteration, on the driver's \
                 threads as the job's {workers} workers {local:.1}; the other is tried again \
                 after {after} calls)",
                if local_runs {
                    "runs on the driver's threads"
                } else {
                    "runs across the ranks"
                }
            )
        });
        (way, line)
    }

    /// A call ran `per` nanoseconds per iteration `at` its place: recorded unless it was a
    /// warm-up.
    pub(crate) fn ran(&mut self, at: Where, per: f64) {
        if self.repeat.is_some() {
            return;
        }
        let slot = match at {
            Where::Across => &mut self.cross,
            Where::Driver => &mut self.local,
        };
        *slot = Some(average(*slot, per));
    }

    /// The cheaper way measured, per iteration, once both were.
    pub(crate) fn best(&self) -> Option<f64> {
        Some(self.cross?.min(self.local?))
    }
}

/// Where the driver runs a call's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where {
    /// Across the job's ranks.
    Across,
    /// On the driver's threads, as the job's workers.
    Driver,
}

#[cfg(test)]
mod tests {
    use super::{Place, Where};

    /// The first call runs on the driver, then two crossings (a warm-up, then one
    /// measured), then the cheaper way, the other tried again (twice) after the calls its
    /// cost allows; with a core for every worker, crossing waits 50 calls.
    #[test]
    fn the_driver_first_then_two_crossings_then_the_cheaper_with_trials() {
        let mut p = Place::default();
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Driver);
        assert!(line.unwrap().contains("a first call"));
        p.ran(Where::Driver, 10.0);
        assert_eq!(p.next(2, false), (Where::Across, None));
        p.ran(Where::Across, 1000.0); // the warm-up: not recorded
        assert_eq!(p.cross, None);
        assert_eq!(p.next(2, false), (Where::Across, None));
        p.ran(Where::Across, 30.0);
        // Crossing costs 3x: the driver wins, crossing tried after 2 (3 - 1) / 2% = 200.
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Driver);
        assert!(line.unwrap().contains("after 200 calls"));
        p.ran(Where::Driver, 10.0); // the warm-up back on the driver
        assert_eq!(p.local, Some(10.0));
        assert_eq!(p.next(2, false), (Where::Driver, None)); // its repeat
        p.ran(Where::Driver, 10.0);
        let ways: Vec<Where> = (0..200).map(|_| p.next(2, false).0).collect();
        assert!(ways[..199].iter().all(|w| *w == Where::Driver));
        assert_eq!(ways[199], Where::Across);
        assert_eq!(p.next(2, false), (Where::Across, None)); // the trial's second call
        // Crossing measured cheaper now: it wins, said once.
        p.cross = Some(5.0);
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Across);
        assert!(line.unwrap().starts_with("runs across the ranks"));
        assert_eq!(p.best(), Some(5.0));

        let mut roomy = Place::default();
        assert!(roomy.next(2, true).1.unwrap().contains("after 50 calls"));
        roomy.ran(Where::Driver, 10.0);
        let ways: Vec<Where> = (0..50).map(|_| roomy.next(2, true).0).collect();
        assert!(ways[..49].iter().all(|w| *w == Where::Driver));
        assert_eq!(ways[49], Where::Across);
        roomy.refuse();
        assert_eq!(roomy.next(2, true), (Where::Driver, None));
    }
}
