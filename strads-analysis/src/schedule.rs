//! Partitions of iteration dims and the static schedules that run them.

/// A split of `0..extent` into consecutive ranges, one per partition.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Partition {
    /// `bounds[k]..bounds[k + 1]` is partition `k`; `bounds[0] == 0`, the last is the extent.
    pub bounds: Vec<usize>,
}

impl Partition {
    /// `p` ranges of (nearly) equal length.
    pub fn uniform(extent: usize, p: usize) -> Self {
        let p = p.max(1);
        Partition {
            bounds: (0..=p).map(|k| extent * k / p).collect(),
        }
    }

    /// `p` ranges holding (nearly) equal counts, from a histogram of iterations per index
    /// (Orion sect. 3.4.4): boundary `k` is the first index where the running count
    /// reaches `k/p` of the total.
    pub fn balanced(hist: &[u64], p: usize) -> Self {
        let p = p.max(1);
        let total: u64 = hist.iter().sum();
        let mut bounds = Vec::with_capacity(p + 1);
        bounds.push(0);
        let mut acc = 0u64;
        let mut k = 1;
        for (i, &h) in hist.iter().enumerate() {
            // Close every partition whose share the count before index `i` reaches.
            while k < p && acc * p as u64 >= total * k as u64 && acc > 0 {
                bounds.push(i);
                k += 1;
            }
            acc += h;
        }
        while bounds.len() < p {
            bounds.push(hist.len());
        }
        bounds.push(hist.len());
        Partition { bounds }
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Whether there is no partition.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The range of partition `k`.
    pub fn range(&self, k: usize) -> (usize, usize) {
        (self.bounds[k], self.bounds[k + 1])
    }

    /// The partition holding index `x` (the last one for `x` past the extent).
    pub fn part_of(&self, x: usize) -> usize {
        self.bounds[1..]
            .partition_point(|&b| b <= x)
            .min(self.len() - 1)
    }

    /// A table mapping every index below the extent to its partition, for bucketing many
    /// iterations without a search each.
    pub fn lookup_table(&self) -> Vec<u32> {
        let mut t = Vec::with_capacity(*self.bounds.last().unwrap_or(&0));
        for k in 0..self.len() {
            let (lo, hi) = self.range(k);
            t.extend(std::iter::repeat_n(k as u32, hi - lo));
        }
        t
    }
}

/// The unordered 2D schedule (Orion fig. 3.8c): `p` space partitions and `p * split` time
/// partitions over `p * split` steps; at step `t` worker `w` runs block
/// `(w, (w * split + t) mod (p * split))`. Every time partition visits every worker once,
/// and at any step no two workers share a space or a time partition. With `split = 1`
/// worker `w - 1` needs a time partition the step after worker `w` ran it; with finer time
/// partitions (`split > 1`, Orion's "time partitions cut finer than P") it needs it only
/// `split` steps later, so the hand-off travels while both compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Unordered2d {
    /// Number of workers and space partitions.
    pub p: usize,
    /// Time partitions per worker (at least 1).
    pub split: usize,
}

impl Unordered2d {
    /// Time partitions, and steps.
    pub fn time_parts(&self) -> usize {
        self.p * self.split.max(1)
    }

    /// The block `(space, time)` worker `w` runs at step `t`.
    pub fn block(&self, w: usize, t: usize) -> (usize, usize) {
        (w, (w * self.split.max(1) + t) % self.time_parts())
    }

    /// The worker that runs time partition `time` after worker `w` has run it: the time
    /// partitions travel around a ring, from worker `w` to worker `w - 1`, which runs it
    /// `split` steps later.
    pub fn next_holder(&self, w: usize) -> usize {
        (w + self.p - 1) % self.p
    }

    /// Every step's blocks, worker by worker.
    pub fn steps(&self) -> Vec<Vec<(usize, usize)>> {
        (0..self.time_parts())
            .map(|t| (0..self.p).map(|w| self.block(w, t)).collect())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_bounds() {
        assert_eq!(Partition::uniform(10, 3).bounds, vec![0, 3, 6, 10]);
        assert_eq!(Partition::uniform(2, 4).bounds, vec![0, 0, 1, 1, 2]);
    }

    #[test]
    fn balanced_by_count() {
        // One heavy index first: it gets a partition of its own.
        let p = Partition::balanced(&[10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2);
        assert_eq!(p.bounds, vec![0, 1, 11]);
        let p = Partition::balanced(&[1; 8], 4);
        assert_eq!(p.bounds, vec![0, 2, 4, 6, 8]);
        let p = Partition::balanced(&[0, 0, 5, 0, 0, 5, 0], 2);
        assert_eq!(p.bounds, vec![0, 3, 7]);
        let p = Partition::balanced(&[], 3);
        assert_eq!(p.bounds, vec![0, 0, 0, 0]);
    }

    #[test]
    fn part_of_and_lookup_agree() {
        let p = Partition {
            bounds: vec![0, 2, 2, 5, 9],
        };
        let t = p.lookup_table();
        assert_eq!(t, vec![0, 0, 2, 2, 2, 3, 3, 3, 3]);
        for (x, &k) in t.iter().enumerate() {
            assert_eq!(p.part_of(x), k as usize);
        }
    }

    #[test]
    fn unordered_schedule_is_a_latin_square() {
        let s = Unordered2d { p: 4, split: 1 };
        let steps = s.steps();
        assert_eq!(steps[1], vec![(0, 1), (1, 2), (2, 3), (3, 0)]);
        for step in &steps {
            let mut times: Vec<_> = step.iter().map(|b| b.1).collect();
            times.sort();
            assert_eq!(times, vec![0, 1, 2, 3]);
        }
        // Worker w needs, at step t + 1, the time partition worker w + 1 ran at step t.
        for t in 0..3 {
            for w in 0..4 {
                let next = s.block(w, t + 1).1;
                assert_eq!(next, s.block((w + 1) % 4, t).1);
                assert_eq!(s.next_holder((w + 1) % 4), w);
            }
        }
    }

    #[test]
    fn finer_time_partitions_leave_split_steps_for_each_hand_off() {
        let s = Unordered2d { p: 3, split: 2 };
        let steps = s.steps();
        assert_eq!(steps.len(), 6);
        assert_eq!(steps[0], vec![(0, 0), (1, 2), (2, 4)]);
        assert_eq!(steps[1], vec![(0, 1), (1, 3), (2, 5)]);
        let mut seen = std::collections::BTreeSet::new();
        for step in &steps {
            let mut times: Vec<_> = step.iter().map(|b| b.1).collect();
            times.sort();
            times.dedup();
            assert_eq!(times.len(), 3, "no time partition twice in a step");
            seen.extend(step.iter().copied());
        }
        assert_eq!(seen.len(), 18, "every block once");
        // Worker w runs at step t + 2 the time partition worker w + 1 ran at step t.
        for t in 0..4 {
            for w in 0..3 {
                assert_eq!(s.block(w, t + 2).1, s.block((w + 1) % 3, t).1);
            }
        }
    }
}
