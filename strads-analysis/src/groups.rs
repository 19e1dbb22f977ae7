//! Task groups from recorded accesses (STRADS-AP sect. 4.2 and 4.4; Cyclades' connected
//! components).
//!
//! Reconnaissance records, per iteration, the elements of written arrays it touches. Two
//! iterations conflict when they touch a common element and one of them writes it. The
//! iterations are cut into consecutive batches (run one after another); inside a batch the
//! connected components of the conflict graph are the task groups: no two groups conflict,
//! so they may run on different workers at once. Groups are placed largest first on the
//! least-loaded worker; a worker runs its iterations in serial order (its groups never
//! conflict with each other, so interleaving them is free and keeps the data access order
//! of the original loop). Smaller batches make smaller components (Cyclades).
//!
//! A component that still outweighs a worker's fair share of its batch is split among the
//! workers (STRADS-AP sect. 4.4), but without locks: its iterations, in serial order, are
//! cut into one contiguous chunk per worker and each chunk into rounds; these *pieces* form
//! a dependence graph (piece `(r, w)` runs after every earlier piece, in `(round, worker)`
//! order, that touches a common element), so a worker waits only for the pieces it depends
//! on and the run stays equal to one serial order: pieces by `(level, worker)`. For an
//! `ordered` loop that order must be the loop's own: there the edges follow `(worker,
//! round)` order, which is the serial order of the pieces' iterations, so every pair of
//! conflicting iterations keeps its serial order (a chain then rarely pays to split). A split is
//! kept only when a simulation of that graph (weights = touches) finishes the component in
//! at most three quarters of its serial time; otherwise (every piece depending on the one
//! before, as when a few elements occur in every iteration) the component runs whole on one
//! worker.

use petgraph::unionfind::UnionFind;

/// What every iteration touched, in compressed rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accesses {
    offsets: Vec<usize>,
    elems: Vec<u64>,
    writes: Vec<bool>,
    /// Reused by `end_iteration` (empty between calls).
    scratch: Vec<(u64, bool)>,
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

    /// Ends the current iteration; the next touches belong to the next one. Repeated
    /// touches of one element become one (a write if any of them writes).
    pub fn end_iteration(&mut self) {
        let start = *self.offsets.last().expect("offsets start with 0");
        let n = self.elems.len() - start;
        if n > 1 {
            let mut touches = std::mem::take(&mut self.scratch);
            touches.extend(
                self.elems[start..]
                    .iter()
                    .copied()
                    .zip(self.writes[start..].iter().copied()),
            );
            touches.sort_unstable_by_key(|t| t.0);
            touches.dedup_by(|later, kept| {
                if later.0 == kept.0 {
                    kept.1 |= later.1;
                    true
                } else {
                    false
                }
            });
            self.elems.truncate(start);
            self.writes.truncate(start);
            for &(e, w) in &touches {
                self.elems.push(e);
                self.writes.push(w);
            }
            touches.clear();
            self.scratch = touches;
        }
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

    /// Touches of iteration `i`: `(element, write)`, each element once, in element order.
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
    /// Pieces of the components split among workers, in the order they were cut. Worker
    /// `w` runs its pieces (`worker == w`, in this order) before `runs[w]`.
    pub pieces: Vec<Piece>,
    /// Every element the pieces touch: no worker owns them for the whole batch; each piece
    /// claims its own while it runs.
    pub shared: Vec<u64>,
    /// Number of components split.
    pub split: usize,
}

/// Part of a split component: consecutive iterations of one worker's chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    /// The worker that runs it.
    pub worker: usize,
    /// Its place in the replay order: pieces of one level touch disjoint elements, and a
    /// piece's level exceeds those of the pieces it runs after.
    pub level: usize,
    /// The iterations, in serial order.
    pub iters: Vec<u32>,
    /// Pieces (indices into [`Batch::pieces`]) that must be done before it starts.
    pub after: Vec<u32>,
    /// The elements it touches (of written arrays), without repeats.
    pub elems: Vec<u64>,
}

/// The plan of a loop under reconnaissance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupPlan {
    /// Number of workers.
    pub workers: usize,
    /// Batches, run one after another.
    pub batches: Vec<Batch>,
}

impl Batch {
    /// Number of piece levels: the batch's replay order is level `0..levels()` (each level
    /// worker by worker), then `runs`.
    pub fn levels(&self) -> usize {
        self.pieces.iter().map(|p| p.level + 1).max().unwrap_or(0)
    }
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
            for pc in &b.pieces {
                load[pc.worker] += pc
                    .iters
                    .iter()
                    .map(|&i| acc.weight(i as usize))
                    .sum::<usize>();
            }
        }
        let max = load.iter().copied().max().unwrap_or(0);
        let mean = load.iter().sum::<usize>() as f64 / self.workers.max(1) as f64;
        (max, mean)
    }
}

/// Components with fewer than this many iterations per worker are never split.
const MIN_SPLIT: usize = 16;
/// Rounds per chunk of a split component.
const ROUNDS: usize = 16;
/// Pieces per batch at most (each takes a stamp of its own at run time).
pub const MAX_PIECES: usize = 1 << 14;

/// A component cut into pieces, with the workers' simulated finishing times.
struct Cut {
    pieces: Vec<Piece>,
    clock: Vec<usize>,
}

/// Cuts component `g` (iterations in serial order) into `workers` chunks of `ROUNDS`
/// rounds, makes every piece wait for the last earlier piece touching each of its elements, and
/// simulates the run from the workers' clocks `clock`. "Earlier" is `(round, worker)`
/// order, one serial order of the component's iterations among many; with `ordered`, it
/// is `(worker, round)` order, the serial order itself (chunks are consecutive), so every
/// conflicting pair of pieces runs in the order of its iterations. Only elements written in the batch
/// (`written[e] == stamp`) make pieces wait; `last` is scratch indexed by element, `stamp` tells
/// this batch's entries from stale ones.
#[allow(clippy::too_many_arguments)]
fn split_component(
    acc: &Accesses,
    g: &[u32],
    workers: usize,
    clock: &[usize],
    last: &mut [(u32, u32)],
    written: &[u32],
    stamp: u32,
    ordered: bool,
) -> Cut {
    let w_of = |i: u32| acc.weight(i as usize).max(1);
    let total: usize = g.iter().map(|&i| w_of(i)).sum();
    // Chunks and rounds by cumulative weight: iteration with weight prefix `c` goes to
    // chunk `c * workers / total`, round by its prefix inside the chunk.
    let mut chunks: Vec<Vec<u32>> = vec![Vec::new(); workers];
    let mut cum = 0usize;
    for &i in g {
        chunks[(cum * workers / total).min(workers - 1)].push(i);
        cum += w_of(i);
    }
    let rounds = ROUNDS
        .min(chunks.iter().map(Vec::len).min().unwrap_or(0) / 4)
        .max(1);
    let mut cells: Vec<Vec<Vec<u32>>> = vec![vec![Vec::new(); workers]; rounds];
    for (w, chunk) in chunks.iter().enumerate() {
        let cw: usize = chunk.iter().map(|&i| w_of(i)).sum::<usize>().max(1);
        let mut c = 0usize;
        for &i in chunk {
            cells[(c * rounds / cw).min(rounds - 1)][w].push(i);
            c += w_of(i);
        }
    }
    let mut pieces: Vec<Piece> = Vec::new();
    let mut clock = clock.to_vec();
    let mut finish: Vec<usize> = Vec::new();
    let mut level_of_worker: Vec<Option<usize>> = vec![None; workers];
    // Pieces in the order their edges point: (round, worker), or the serial order.
    let mut cut: Vec<(usize, Vec<u32>)> = Vec::with_capacity(rounds * workers);
    if ordered {
        for w in 0..workers {
            for row in cells.iter_mut() {
                cut.push((w, std::mem::take(&mut row[w])));
            }
        }
    } else {
        for row in cells {
            cut.extend(row.into_iter().enumerate());
        }
    }
    {
        for (w, iters) in cut {
            if iters.is_empty() {
                continue;
            }
            let me = pieces.len() as u32;
            let mut after: Vec<u32> = Vec::new();
            let mut elems: Vec<u64> = Vec::new();
            for &i in &iters {
                for (e, _) in acc.of(i as usize) {
                    if written[e as usize] != stamp {
                        continue; // only read in this batch: no conflict
                    }
                    let slot = &mut last[e as usize];
                    if slot.0 == stamp && slot.1 == me {
                        continue; // already seen in this piece
                    }
                    if slot.0 == stamp {
                        after.push(slot.1);
                    }
                    *slot = (stamp, me);
                    elems.push(e);
                }
            }
            after.sort_unstable();
            after.dedup();
            let start = after
                .iter()
                .map(|&a| finish[a as usize])
                .fold(clock[w], usize::max);
            let level = after
                .iter()
                .map(|&a| pieces[a as usize].level + 1)
                .chain(level_of_worker[w].map(|l| l + 1))
                .max()
                .unwrap_or(0);
            let end = start + iters.iter().map(|&i| w_of(i)).sum::<usize>();
            finish.push(end);
            clock[w] = end;
            level_of_worker[w] = Some(level);
            pieces.push(Piece {
                worker: w,
                level,
                iters,
                after,
                elems,
            });
        }
    }
    Cut { pieces, clock }
}

/// Groups the recorded iterations into batches of at most `batch_size` consecutive
/// iterations, components per batch, placed on `workers` workers. `n_elems` bounds the
/// element ids. Components too large for one worker are split when that pays.
pub fn plan_groups(acc: &Accesses, n_elems: u64, workers: usize, batch_size: usize) -> GroupPlan {
    plan_groups_with(acc, n_elems, workers, batch_size, true, false)
}

/// [`plan_groups`], splitting large components only when `split` is true. With `ordered`
/// (an `ordered` loop), every two iterations that conflict run in their serial order:
/// batches are consecutive and run one after another, a worker runs its task groups'
/// iterations in serial order, and the pieces of a split component wait for every earlier
/// piece *in serial order* they share an element with (see `split_component`).
pub fn plan_groups_with(
    acc: &Accesses,
    n_elems: u64,
    workers: usize,
    batch_size: usize,
    split: bool,
    ordered: bool,
) -> GroupPlan {
    let workers = workers.max(1);
    let n = acc.len();
    let batch_size = batch_size.max(1);
    let n_elems = n_elems as usize;
    // Stamps (batch + 1) instead of clearing per batch.
    let mut written = vec![0u32; n_elems];
    let mut first_stamp = vec![0u32; n_elems];
    let mut first = vec![0u32; n_elems];
    let mut seen = vec![0u32; n_elems];
    // Per element, (batch stamp, piece) of the last piece that touched it while splitting.
    let mut last_toucher = vec![(0u32, 0u32); n_elems];
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
        let total: usize = groups.iter().map(weight).sum();
        let largest = groups.iter().map(Vec::len).max().unwrap_or(0);
        // Components above a fair share, largest first, split while splitting pays.
        let mut clock = vec![0usize; workers];
        let mut pieces = Vec::new();
        let mut n_split = 0;
        if workers > 1 && split {
            let mut big: Vec<usize> = (0..groups.len())
                .filter(|&g| {
                    weight(&groups[g]) * workers > total && groups[g].len() >= MIN_SPLIT * workers
                })
                .collect();
            big.sort_by_key(|&g| std::cmp::Reverse(weight(&groups[g])));
            for g in big {
                let cut = split_component(
                    acc,
                    &groups[g],
                    workers,
                    &clock,
                    &mut last_toucher,
                    &written,
                    stamp,
                    ordered,
                );
                let before = clock.iter().copied().max().unwrap_or(0);
                let after = cut.clock.iter().copied().max().unwrap_or(0);
                if (after - before) * 4 > weight(&groups[g]) * 3
                    || pieces.len() + cut.pieces.len() > MAX_PIECES
                {
                    continue; // runs whole, on one worker
                }
                let base = pieces.len() as u32;
                let level0 = pieces
                    .iter()
                    .map(|p: &Piece| p.level + 1)
                    .max()
                    .unwrap_or(0);
                for mut pc in cut.pieces {
                    pc.level += level0;
                    pc.after.iter_mut().for_each(|a| *a += base);
                    pieces.push(pc);
                }
                clock = cut.clock;
                groups[g].clear();
                n_split += 1;
            }
        }
        let mut shared: Vec<u64> = pieces
            .iter()
            .flat_map(|p| p.elems.iter().copied())
            .collect();
        shared.sort_unstable();
        shared.dedup();
        // Largest first (stable: ties keep the order of first iterations), each on the
        // least-loaded worker (ties: the lowest index); a worker's pieces come first.
        let mut order: Vec<usize> = (0..groups.len())
            .filter(|&g| !groups[g].is_empty())
            .collect();
        order.sort_by_key(|&g| std::cmp::Reverse(weight(&groups[g])));
        let mut load = clock;
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
            // A worker's groups never conflict with each other, so it may interleave them:
            // in serial order its iterations walk the data as the original loop does.
            for run in &mut runs {
                run.sort_unstable();
            }
        }
        let mut owned = vec![Vec::new(); workers];
        let mut reads = vec![Vec::new(); workers];
        for (w, run) in runs.iter().enumerate() {
            let tag = (b as u32 + 1).wrapping_mul(workers as u32 + 1) + w as u32 + 1;
            // The pieces' written elements are `shared`, claimed piece by piece; what the
            // pieces only read is prefetched like the rest.
            let mine = pieces
                .iter()
                .filter(|p| p.worker == w)
                .flat_map(|p| p.iters.iter().map(|&i| (i, true)));
            for (i, in_piece) in mine.chain(run.iter().map(|&i| (i, false))) {
                for (e, _) in acc.of(i as usize) {
                    if in_piece && written[e as usize] == stamp {
                        continue;
                    }
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
            largest,
            groups: groups.len(),
            runs,
            owned,
            reads,
            pieces,
            shared,
            split: n_split,
        });
    }
    GroupPlan { workers, batches }
}

#[cfg(test)]
mod tests;
