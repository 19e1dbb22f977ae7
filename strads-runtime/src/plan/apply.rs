//! Where write-back buffers are applied: the one rule the executor, the replay and the
//! traces share.
//!
//! With several workers, a step whose buffers apply (`Step::applies`) runs in *rounds*:
//! round `r` of a task is its iterations `r * n .. (r + 1) * n` (`n = max_delay`, or the
//! whole task without it); the step lasts as many rounds as its longest task needs (at
//! least one), and after every round every worker is parked while the buffers are
//! applied. With one worker the points are every `n` iterations of the whole call (the
//! serial loop's points) and no step ends one. Either way the buffers are applied once
//! more after the call.

use std::ops::Range;

/// The application points of one call.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyPoints {
    /// `max_delay`: at least every `n` iterations of each worker.
    pub every: Option<usize>,
    /// Workers of the call.
    pub workers: usize,
}

impl ApplyPoints {
    /// Points for a call on `workers` workers with `max_delay = every`.
    pub fn new(every: Option<usize>, workers: usize) -> Self {
        ApplyPoints {
            every: every.map(|n| n.max(1)),
            workers,
        }
    }

    /// Whether the buffers are applied before iteration `i`: of the task, with several
    /// workers; of the call, with one.
    #[inline]
    pub fn before(&self, i: usize) -> bool {
        matches!(self.every, Some(n) if i > 0 && i % n == 0)
    }

    /// Rounds of an applying step whose tasks have `lens` iterations (several workers).
    pub fn rounds(&self, lens: impl IntoIterator<Item = usize>) -> usize {
        match self.every {
            Some(n) => lens
                .into_iter()
                .map(|l| l.div_ceil(n))
                .max()
                .unwrap_or(0)
                .max(1),
            None => 1,
        }
    }

    /// Positions of a task of `len` iterations that round `r` runs.
    pub fn round(&self, r: usize, len: usize) -> Range<usize> {
        match self.every {
            Some(n) => r.saturating_mul(n).min(len)..(r + 1).saturating_mul(n).min(len),
            None if r == 0 => 0..len,
            None => len..len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_follow_the_longest_task() {
        let a = ApplyPoints::new(Some(3), 2);
        assert_eq!(a.rounds([7, 2]), 3);
        assert_eq!(a.rounds([0, 0]), 1);
        assert_eq!(
            (0..3).map(|r| a.round(r, 7)).collect::<Vec<_>>(),
            vec![0..3, 3..6, 6..7]
        );
        assert_eq!(a.round(2, 2), 2..2);
        assert!(!a.before(0) && a.before(3) && !a.before(4) && a.before(6));
    }

    #[test]
    fn without_max_delay_a_step_is_one_round() {
        let a = ApplyPoints::new(None, 4);
        assert_eq!(a.rounds([10, 1, 0]), 1);
        assert_eq!(a.round(0, 10), 0..10);
        assert!((0..100).all(|i| !a.before(i)));
    }

    #[test]
    fn max_delay_zero_means_every_iteration() {
        let a = ApplyPoints::new(Some(0), 1);
        assert!(a.before(1) && a.before(2) && !a.before(0));
    }
}
