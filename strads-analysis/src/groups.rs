//! Task groups from recorded accesses (STRADS-AP sect. 4.2 and 4.4; Cyclades' connected
//! components).
//!
//! Reconnaissance records, per iteration, the elements of written arrays it touches. Two
//! iterations conflict when they touch a common element and one of them writes it. The
//! iterations are cut into consecutive batches (run one after another); inside a batch the
//! connected components of the conflict graph are the task groups: no two groups conflict,
//! so they may run on different workers at once. Groups are placed largest first on the
//! least-loaded worker; a worker runs its groups in that order, each group's iterations in
//! serial order. Smaller batches make smaller components (Cyclades); a component that still
//! spans most of a batch runs on one worker, which keeps the run serializable.

use petgraph::unionfind::UnionFind;

/// What every iteration touched, in compressed rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accesses {
    offsets: Vec<usize>,
    elems: Vec<u64>,
    writes: Vec<bool>,
}

impl Accesses {
    /// No iteration yet.
    pub fn new() -> Self {
        Accesses {
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// Records that the current iteration touches element `elem`.
    pub fn touch(&mut self, elem: u64, write: bool) {
        self.elems.push(elem);
        self.writes.push(write);
    }

    /// Ends the current iteration; the next touches belong to the next one.
    pub fn end_iteration(&mut self) {
        self.offsets.push(self.elems.len());
    }

    /// Number of recorded iterations.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Touches of iteration `i`: `(element, write)`.
    pub fn of(&self, i: usize) -> impl Iterator<Item = (u64, bool)> + '_ {
        let r = self.offsets[i]..self.offsets[i + 1];
        self.elems[r.clone()]
            .iter()
            .copied()
            .zip(self.writes[r].iter().copied())
    }

    /// Number of touches of iteration `i` (the load estimate).
    pub fn weight(&self, i: usize) -> usize {
        self.offsets[i + 1] - self.offsets[i]
    }
}

/// One batch of a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Per worker, the iterations it runs, in order.
    pub runs: Vec<Vec<u32>>,
    /// Per worker, the elements written in this batch that its iterations touch: the
    /// worker owns them for the batch.
    pub owned: Vec<Vec<u64>>,
    /// Per worker, the elements its iterations only read and nobody writes in the batch:
    /// what a worker on another machine prefetches.
    pub reads: Vec<Vec<u64>>,
    /// Number of task groups.
    pub groups: usize,
    /// Iterations in the largest group.
    pub largest: usize,
}

/// The plan of a loop under reconnaissance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupPlan {
    /// Number of workers.
    pub workers: usize,
    /// Batches, run one after another.
    pub batches: Vec<Batch>,
}

impl GroupPlan {
    /// Per worker, every element it reads over the whole loop without owning it: the bulk
    /// prefetch list of the cluster runtime.
    pub fn prefetch(&self, worker: usize) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .batches
            .iter()
            .flat_map(|b| b.reads[worker].iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// `(max, mean)` of the workers' loads (touches), summed over batches.
    pub fn load_balance(&self, acc: &Accesses) -> (usize, f64) {
        let mut load = vec![0usize; self.workers];
        for b in &self.batches {
            for (w, run) in b.runs.iter().enumerate() {
                load[w] += run.iter().map(|&i| acc.weight(i as usize)).sum::<usize>();
            }
        }
        let max = load.iter().copied().max().unwrap_or(0);
        let mean = load.iter().sum::<usize>() as f64 / self.workers.max(1) as f64;
        (max, mean)
    }
}

/// Groups the recorded iterations into batches of at most `batch_size` consecutive
/// iterations, components per batch, placed on `workers` workers. `n_elems` bounds the
/// element ids.
pub fn plan_groups(acc: &Accesses, n_elems: u64, workers: usize, batch_size: usize) -> GroupPlan {
    let workers = workers.max(1);
    let n = acc.len();
    let batch_size = batch_size.max(1);
    let n_elems = n_elems as usize;
    // Stamps (batch + 1) instead of clearing per batch.
    let mut written = vec![0u32; n_elems];
    let mut first_stamp = vec![0u32; n_elems];
    let mut first = vec![0u32; n_elems];
    let mut seen = vec![0u32; n_elems];
    let mut batches = Vec::new();
    for (b, start) in (0..n).step_by(batch_size).enumerate() {
        let end = (start + batch_size).min(n);
        let stamp = b as u32 + 1;
        for i in start..end {
            for (e, w) in acc.of(i) {
                if w {
                    written[e as usize] = stamp;
                }
            }
        }
        let mut uf = UnionFind::<u32>::new(end - start);
        for i in start..end {
            for (e, _) in acc.of(i) {
                let e = e as usize;
                if written[e] != stamp {
                    continue;
                }
                if first_stamp[e] != stamp {
                    first_stamp[e] = stamp;
                    first[e] = (i - start) as u32;
                } else {
                    uf.union(first[e], (i - start) as u32);
                }
            }
        }
        // Components in order of their first iteration.
        let mut group_of_root: Vec<u32> = vec![u32::MAX; end - start];
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for i in start..end {
            let root = uf.find((i - start) as u32) as usize;
            if group_of_root[root] == u32::MAX {
                group_of_root[root] = groups.len() as u32;
                groups.push(Vec::new());
            }
            groups[group_of_root[root] as usize].push(i as u32);
        }
        let weight = |g: &Vec<u32>| {
            g.iter()
                .map(|&i| acc.weight(i as usize).max(1))
                .sum::<usize>()
        };
        // Largest first (stable: ties keep the order of first iterations), each on the
        // least-loaded worker (ties: the lowest index).
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&g| std::cmp::Reverse(weight(&groups[g])));
        let mut load = vec![0usize; workers];
        let mut runs = vec![Vec::new(); workers];
        if workers == 1 {
            // One worker: nothing to balance; keep the serial order.
            runs[0] = (start as u32..end as u32).collect();
        } else {
            for g in order {
                let w = (0..workers)
                    .min_by_key(|&w| (load[w], w))
                    .expect("a worker");
                load[w] += weight(&groups[g]);
                runs[w].extend_from_slice(&groups[g]);
            }
        }
        let mut owned = vec![Vec::new(); workers];
        let mut reads = vec![Vec::new(); workers];
        for (w, run) in runs.iter().enumerate() {
            let tag = (b as u32 + 1).wrapping_mul(workers as u32 + 1) + w as u32 + 1;
            for &i in run {
                for (e, _) in acc.of(i as usize) {
                    let eu = e as usize;
                    if seen[eu] == tag {
                        continue;
                    }
                    seen[eu] = tag;
                    if written[eu] == stamp {
                        owned[w].push(e);
                    } else {
                        reads[w].push(e);
                    }
                }
            }
        }
        batches.push(Batch {
            largest: groups.iter().map(Vec::len).max().unwrap_or(0),
            groups: groups.len(),
            runs,
            owned,
            reads,
        });
    }
    GroupPlan { workers, batches }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(iters: &[&[(u64, bool)]]) -> Accesses {
        let mut a = Accesses::new();
        for it in iters {
            for &(e, w) in *it {
                a.touch(e, w);
            }
            a.end_iteration();
        }
        a
    }

    #[test]
    fn disjoint_writers_spread_and_shared_reads_do_not_conflict() {
        // Four iterations writing their own element and reading element 9 (never written).
        let a = acc(&[
            &[(0, true), (9, false)],
            &[(1, true), (9, false)],
            &[(2, true), (9, false)],
            &[(3, true), (9, false)],
        ]);
        let p = plan_groups(&a, 10, 2, 100);
        assert_eq!(p.batches.len(), 1);
        let b = &p.batches[0];
        assert_eq!(b.groups, 4);
        assert_eq!(b.runs, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(b.owned, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(b.reads, vec![vec![9], vec![9]]);
        assert_eq!(p.prefetch(1), vec![9]);
    }

    #[test]
    fn a_shared_written_element_joins_everyone() {
        let a = acc(&[&[(0, true)], &[(0, false), (1, true)], &[(2, true)]]);
        let p = plan_groups(&a, 3, 2, 100);
        let b = &p.batches[0];
        assert_eq!(b.groups, 2);
        assert_eq!(b.runs, vec![vec![0, 1], vec![2]]);
        assert_eq!(b.largest, 2);
    }

    #[test]
    fn batches_cut_components() {
        // Iterations 0 and 2 share element 5, but batches of 2 keep them apart.
        let a = acc(&[&[(5, true)], &[(6, true)], &[(5, true)], &[(7, true)]]);
        let p = plan_groups(&a, 8, 2, 2);
        assert_eq!(p.batches.len(), 2);
        assert!(p.batches.iter().all(|b| b.groups == 2));
    }
}
