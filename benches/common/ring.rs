//! An experiment on how a parallel call starts, not a second executor: the 2D ring of
//! `strads-runtime/src/plan/grid.rs` (with `T = p * split` time partitions, worker `w` runs
//! block `(w, (w * split + t) mod T)` at step `t`, then hands its time partition to worker
//! `w - 1`, which runs it `split` steps later) rebuilt in safe Rust over the blocks of
//! strads' own plan (taken from a recorded run), started in one of two ways:
//!
//! - [`Start::Broadcast`]: `ThreadPool::broadcast` from the calling thread, which then
//!   blocks until every worker is done: what `exec::run` does;
//! - [`Start::CallerJoins`]: the calling thread runs worker 0 itself and the pool (one
//!   thread fewer) runs the others (`ThreadPool::in_place_scope`).
//!
//! Rows are reached through `&mut` chunks: each worker owns its range of `w` rows, and the
//! `h` ranges travel around the ring through channels, so the arithmetic and the order are
//! exactly strads' and the result is bit-identical to its run (the bench checks it).

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

use strads::prelude::*;

/// How the call starts its workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    Broadcast,
    CallerJoins,
}

/// Strads' plan for a 2D loop with `p` workers, as data: `blocks[t][w]` holds the ratings
/// worker `w` runs at step `t` (block `(w, (w * split + t) mod T)`), contiguous; `users[s]`
/// and `items[tp]` are the first ids of each partition (and the end).
pub(crate) struct RingPlan {
    p: usize,
    /// Time partitions (and steps): `p * split`.
    times: usize,
    blocks: Vec<Vec<Vec<(u32, u32, f32)>>>,
    users: Vec<usize>,
    items: Vec<usize>,
}

impl RingPlan {
    /// The plan of a recorded strads run (`steps[t][w]` = ids of the ratings `flat`), and
    /// whether its space dim is the items (then `w` rotates: swap the factor matrices).
    pub(crate) fn from_steps(
        steps: &[Vec<Vec<usize>>],
        flat: &[(u32, u32, f32)],
        shape: [usize; 2],
    ) -> (Self, bool) {
        let plan = |swap: bool| {
            let block = |ids: &Vec<usize>| -> Vec<(u32, u32, f32)> {
                ids.iter()
                    .map(|&i| {
                        let (u, it, r) = flat[i];
                        if swap { (it, u, r) } else { (u, it, r) }
                    })
                    .collect()
            };
            let blocks: Vec<Vec<Vec<(u32, u32, f32)>>> = steps
                .iter()
                .map(|ws| ws.iter().map(block).collect())
                .collect();
            let shape = if swap { [shape[1], shape[0]] } else { shape };
            RingPlan::with_blocks(blocks, shape)
        };
        match plan(false) {
            Some(p) => (p, false),
            None => (plan(true).expect("a 2D plan over users or items"), true),
        }
    }

    /// Partition s of the space dim is worker s's (it runs blocks (s, *)); time partition
    /// tp is the one worker w runs at step t when tp = (w * split + t) mod T. Both are id
    /// ranges; `None` when the blocks do not fit that (the space dim is the other one).
    fn with_blocks(blocks: Vec<Vec<Vec<(u32, u32, f32)>>>, shape: [usize; 2]) -> Option<Self> {
        let times = blocks.len();
        let p = blocks.first().map_or(1, Vec::len);
        let split = times / p;
        let counts = [p, times];
        let (mut lo, mut hi) = (
            [vec![usize::MAX; p], vec![usize::MAX; times]],
            [vec![0; p], vec![0; times]],
        );
        for (t, ws) in blocks.iter().enumerate() {
            for (w, b) in ws.iter().enumerate() {
                for (d, part) in [w, (w * split + t) % times].into_iter().enumerate() {
                    for x in b.iter().map(|e| if d == 0 { e.0 } else { e.1 } as usize) {
                        lo[d][part] = lo[d][part].min(x);
                        hi[d][part] = hi[d][part].max(x + 1);
                    }
                }
            }
        }
        let mut bounds = [vec![0usize], vec![0usize]];
        for d in 0..2 {
            for s in 0..counts[d] {
                let (l, h) = (lo[d][s], hi[d][s]);
                let start = *bounds[d].last().expect("a start");
                if l != usize::MAX && l < start {
                    return None;
                }
                let end = if s + 1 == counts[d] {
                    shape[d]
                } else {
                    h.max(start)
                };
                bounds[d].push(end);
            }
        }
        let [users, items] = bounds;
        Some(RingPlan {
            p,
            times,
            blocks,
            users,
            items,
        })
    }
}

/// Time partitions a worker holds, by index.
type Held<'a> = Vec<(usize, &'a mut [f32])>;

/// A worker's channels: from worker `w + 1`, to worker `w - 1`.
type Ends<'a> = (
    Receiver<(usize, &'a mut [f32])>,
    Sender<(usize, &'a mut [f32])>,
);

/// One epoch of the ring over `plan`, started as `start` on `pool` (which has `p` threads
/// for `Broadcast`, `p - 1` for `CallerJoins`); with `ahead > 0`, each worker prefetches the
/// rows of the rating `ahead` places later in its block (`sgd::prefetch_row`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn ring_epoch(
    plan: &RingPlan,
    start: Start,
    pool: &rayon::ThreadPool,
    transposed: bool,
    ahead: usize,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
) {
    let (p, times, k) = (plan.p, plan.times, w.row_len());
    let split = times / p;
    let (w, h) = if transposed { (h, w) } else { (w, h) };
    // Each worker's own `w` rows, and the `h` partitions it runs in its first `split` steps
    // (`w * split ..`).
    let mut w_parts: Vec<Option<&mut [f32]>> = Vec::with_capacity(p);
    let mut rest = w.as_mut_slice();
    for s in 0..p {
        let (a, b) = rest.split_at_mut((plan.users[s + 1] - plan.users[s]) * k);
        w_parts.push(Some(a));
        rest = b;
    }
    let mut h_parts: Vec<Option<Held>> = (0..p).map(|_| Some(Vec::new())).collect();
    let mut rest = h.as_mut_slice();
    for tp in 0..times {
        let (a, b) = rest.split_at_mut((plan.items[tp + 1] - plan.items[tp]) * k);
        h_parts[tp / split]
            .as_mut()
            .expect("made above")
            .push((tp, a));
        rest = b;
    }
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..p).map(|_| channel()).unzip();
    let mut txs: Vec<Option<Sender<_>>> = txs.into_iter().map(Some).collect();
    let mut ends: Vec<Option<Ends>> = Vec::with_capacity(p);
    for (wk, rx) in rxs.into_iter().enumerate() {
        let tx = txs[(wk + p - 1) % p].take().expect("one sender per worker");
        ends.push(Some((rx, tx)));
    }
    let state = Mutex::new((w_parts, h_parts, ends));
    let take = |wk: usize| {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        (
            s.0[wk].take().expect("once"),
            s.1[wk].take().expect("once"),
            s.2[wk].take().expect("once"),
        )
    };
    let worker = |wk: usize| {
        let (wu_rows, first, (from_next, to_prev)) = take(wk);
        let u0 = plan.users[wk];
        let mut first = first.into_iter();
        for t in 0..times {
            let held = match first.next() {
                Some(h) => h,
                None => from_next
                    .recv()
                    .expect("the ring's previous holder hands over"),
            };
            let (tp, h_rows) = (held.0, &mut *held.1);
            debug_assert_eq!(tp, (wk * split + t) % times);
            let i0 = plan.items[tp];
            let block = &plan.blocks[t][wk];
            for (n, &(u, i, r)) in block.iter().enumerate() {
                if ahead > 0
                    && let Some(&(pu, pi, _)) = block.get(n + ahead)
                {
                    let (pu, pi) = (pu as usize - u0, pi as usize - i0);
                    super::sgd::prefetch_row(&wu_rows[pu * k..(pu + 1) * k]);
                    super::sgd::prefetch_row(&h_rows[pi * k..(pi + 1) * k]);
                }
                let (u, i) = (u as usize - u0, i as usize - i0);
                let wu = &mut wu_rows[u * k..(u + 1) * k];
                let hi = &mut h_rows[i * k..(i + 1) * k];
                let err = r - dot(wu, hi);
                super::sgd::update(wu, hi, err, lr, reg);
            }
            if t + split < times {
                let _ = to_prev.send(held);
            }
        }
    };
    match start {
        Start::Broadcast => {
            pool.broadcast(|ctx| worker(ctx.index()));
        }
        Start::CallerJoins => pool.in_place_scope(|s| {
            for wk in 1..p {
                let worker = &worker;
                s.spawn(move |_| worker(wk));
            }
            worker(0);
        }),
    }
}
