//! `sync = "ssp(s)"`: a worker runs up to `s` rounds (batches) ahead of the slowest, and
//! the merges run behind the workers instead of parking them.
//!
//! The value `B_m` is the merge of every worker's rounds before `m`:
//! `B_{m + 1} = merge(B_m, the tree sum of every worker's difference in round m, n)`. A
//! worker starts round `k` from `B_{max(0, k - s)}` plus its own differences of rounds
//! `max(0, k - s) .. k`, added in round order; its difference in round `k` is its replica
//! at the round's end minus that start. Every term is fixed by the rounds' iterations and
//! not by the timing, so a run is the same on every run, on threads and across processes
//! (a process's workers' differences cross as in `wire.rs`, against zero), and equal to its
//! replay; `s = 0` would be `bsp`. The executor (`exec/ahead.rs`) orders the phases:
//! worker `w` publishes round `r`'s difference into its ring slot `r % (s + 1)` and
//! rebuilds its replica for round `r + 1` once merge `r - s` is done; merge `m` runs once
//! every worker published round `m` and rebuilt from `B_m` (round `m + s`, or its last).
//! So a worker's phases touch only its own copy, start and slots, a merge reads slot
//! `m % (s + 1)` (which no worker writes until merge `m` is done) and writes the value,
//! which no rebuild reads meanwhile.

use std::ops::{Add, Range, Sub};

use super::collective::COLLECTIVE_BYTES;
use super::wire::{decode, encode, segment};
use super::{Buffered, MERGE_CHUNK, Partial, Slot, tree, wrap};
use crate::sync::{Parked, Phase};

/// A worker's state under `ssp(s)`: its replica as its round started, and its differences
/// of the last `s + 1` rounds (round `r` in `diffs[r % (s + 1)]`).
struct Ahead<T> {
    start: Slot<T>,
    diffs: Vec<Slot<T>>,
}

/// The `ssp(s)` state of a buffer in one process.
pub(super) struct Stale<T> {
    s: usize,
    /// This process's workers.
    local: Range<usize>,
    /// Per worker of this process (`local`, in order).
    workers: Vec<Ahead<T>>,
    /// Zero for the whole array: what differences crossing processes are encoded against
    /// (made at the first exchange).
    zeros: std::sync::OnceLock<Vec<T>>,
}

impl<T: Copy + 'static> Stale<T> {
    /// The state of the workers `local` for an array whose value is `from` (each worker's
    /// first round starts from it), its differences zero until published.
    fn new(from: &[T], zero: T, s: usize, local: Range<usize>) -> Self {
        let zeros = vec![zero; from.len()];
        Stale {
            s,
            workers: local
                .clone()
                .map(|_| Ahead {
                    start: Slot::new(from),
                    diffs: (0..=s).map(|_| Slot::new(&zeros)).collect(),
                })
                .collect(),
            local,
            zeros: std::sync::OnceLock::new(),
        }
    }

    /// Worker `w`'s state (a worker of this process).
    fn worker(&self, w: usize) -> &Ahead<T> {
        &self.workers[w - self.local.start]
    }
}

impl<T, const N: usize> Buffered<'_, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync + 'static,
{
    /// Runs an `ssp(s)` phase ([`Phase`]); the executor (`exec/ahead.rs`) orders them.
    pub(super) fn ahead(&self, parked: &Parked<'_>) {
        let local = parked
            .peers()
            .map_or(0..self.copies.len(), |peers| peers.local());
        let s = match parked.phase() {
            Phase::Merge => unreachable!("a merge of every copy is not an ssp phase"),
            Phase::Publish { stale, .. }
            | Phase::Rebuild { stale, .. }
            | Phase::MergeRound { stale, .. } => stale,
        };
        assert!(
            self.merge.is_some() && !self.hybrid && s > 0,
            "strads: the buffer `{}` is not an `ssp` replica (please report it)",
            self.name
        );
        let zero = self.zero.expect("a sync buffer's zero");
        let st = self.stale.get_or_init(|| {
            // This process's workers' copies made now, at the call's first phase, before any
            // merge writes the value: the phases reach them as they are, some at once.
            self.make_all(local.clone());
            Stale::new(self.array.as_slice(), zero, s, local.clone())
        });
        assert!(
            st.s == s && st.local == local,
            "strads: the buffer `{}` changed its `ssp` layout within a call (please report it)",
            self.name
        );
        match parked.phase() {
            Phase::Publish { worker, round, .. } => self.publish(st, worker, round),
            Phase::Rebuild { worker, round, .. } => self.rebuild(st, worker, round),
            Phase::MergeRound { round, .. } => self.merge_round(st, round, parked),
            Phase::Merge => {}
        }
    }

    /// Worker `w` ended round `r`: its difference from the round's start goes to its slot.
    fn publish(&self, st: &Stale<T>, w: usize, r: usize) {
        let _no_with = self.no_with_on(w..w + 1);
        let me = st.worker(w);
        let copy = self.copies[w].get(self.len);
        let start = me.start.get(self.len);
        let slot = me.diffs[r % (st.s + 1)].slice(self.len);
        tree::difference(slot, copy, start);
    }

    /// Worker `w` starts round `k`: its replica becomes the value (`B_{max(0, k - s)}`)
    /// plus its own differences since, in round order, and the round's start.
    fn rebuild(&self, st: &Stale<T>, w: usize, k: usize) {
        let _no_with = self.no_with_on(w..w + 1);
        let me = st.worker(w);
        let base = self.base.get(self.len);
        let copy = self.copies[w].slice(self.len);
        let start = me.start.slice(self.len);
        let own: Vec<&[T]> = (k.saturating_sub(st.s)..k)
            .map(|j| me.diffs[j % (st.s + 1)].get(self.len))
            .collect();
        for at in (0..self.len).step_by(MERGE_CHUNK) {
            let end = (at + MERGE_CHUNK).min(self.len);
            let c = &mut copy[at..end];
            c.copy_from_slice(&base[at..end]);
            for d in &own {
                for (x, &d) in c.iter_mut().zip(&d[at..end]) {
                    *x = wrap::add(*x, d);
                }
            }
            start[at..end].copy_from_slice(c);
        }
    }

    /// Merge `m`: every worker's difference of round `m`, summed in the workers' tree order
    /// (across processes after the round's exchange), merges into the value. Across
    /// processes an array of at least `COLLECTIVE_BYTES` goes by reduce-scatter and
    /// all-gather (`collective.rs`' segments: each process merges its segment from every
    /// process's share of it, then sends the merged segment to all), a smaller one all to
    /// all; every process takes the same way from the array's size and the layout.
    fn merge_round(&self, st: &Stale<T>, m: usize, parked: &Parked<'_>) {
        let slot = m % (st.s + 1);
        // The other processes' workers' copies receive their differences.
        let _no_with = self.no_with_on((0..self.copies.len()).filter(|w| !st.local.contains(w)));
        let Some(peers) = parked.peers() else {
            self.merge_span_ahead(st, slot, &[], 0..self.len);
            return;
        };
        let size = self.wire_size(peers);
        let chunk = self.wire_chunk();
        let chunks = self.len.div_ceil(chunk);
        let ranks = peers.ranks();
        let threads = st.local.len();
        if ranks * threads != self.copies.len() {
            peers.fail(format!(
                "buffer `{}` has {} copies for {ranks} processes of {threads} workers",
                self.name,
                self.copies.len()
            ));
        }
        // Always by the array's size, unlike `bsp`'s merges (`collective.rs`), which also
        // weigh the last merge's overlap: disjoint changes send up to `1 + 1/P` times the
        // all-to-all's bytes here.
        if self.len * size < COLLECTIVE_BYTES || chunks < ranks || ranks < 2 || threads == 0 {
            let partials = self.trade_round(st, slot, peers, size, chunk, None);
            self.merge_span_ahead(st, slot, &partials, 0..self.len);
            return;
        }
        let me = st.local.start / threads;
        let seg = |r: usize| segment(r, ranks, chunks, chunk, self.len);
        let mine = seg(me);
        let partials = self.trade_round(st, slot, peers, size, chunk, Some(&seg));
        // The segment's value before the merge, which the others still hold: the merged
        // segment travels as the chunks that changed against it.
        let before = self.base.get(self.len)[mine.clone()].to_vec();
        self.merge_span_ahead(st, slot, &partials, mine.clone());
        let mut merged = Vec::new();
        encode(
            &self.base.get(self.len)[mine.clone()],
            &before,
            chunk,
            &mut merged,
        );
        let theirs = peers.exchange_behind(crate::sync::to_others(merged, ranks, me));
        let base = self.base.slice(self.len);
        let mut values = Vec::new();
        for (q, bytes) in theirs {
            if q == me || q >= ranks {
                peers.fail(format!(
                    "a merged segment of buffer `{}` came from process {q} of {ranks}",
                    self.name
                ));
            }
            let s = seg(q);
            values.clear();
            values.extend_from_slice(&base[s.clone()]);
            match decode(&bytes, &base[s.clone()], chunk, size, &mut values) {
                Ok(used) if used == bytes.len() => base[s].copy_from_slice(&values),
                Ok(used) => peers.fail(format!(
                    "the merged segment of buffer `{}` from process {q} is {} bytes, {} more \
                     than it holds",
                    self.name,
                    bytes.len(),
                    bytes.len() - used
                )),
                Err(e) => peers.fail(format!(
                    "the merged segment of buffer `{}` from process {q} does not fit: {e}",
                    self.name
                )),
            }
        }
    }

    /// The merge of round `slot`'s differences over the elements `span`: every worker's
    /// (this process's from their slots, the others' as decoded, each a node of one
    /// worker, or a node's partial sum: `(workers, first element, sums)`), summed in the
    /// tree's order.
    fn merge_span_ahead(
        &self,
        st: &Stale<T>,
        slot: usize,
        partials: &[Partial<T>],
        span: Range<usize>,
    ) {
        let merge = self.merge.as_ref().expect("an ssp replica's merge");
        let zero = self.zero.expect("a sync buffer's zero");
        let n = self.copies.len();
        let base = self.base.slice(self.len);
        let diff_of = |w: usize| -> &[T] {
            if st.local.contains(&w) {
                st.worker(w).diffs[slot].get(self.len)
            } else {
                // Another process's worker: its difference is a partial of one worker
                // (`trade_round`), which the tree takes before any leaf.
                &[]
            }
        };
        let diffs: Vec<&[T]> = (0..n).map(diff_of).collect();
        let mut summed: Vec<T> = Vec::with_capacity(MERGE_CHUNK.min(self.len));
        let mut scratch = Vec::new();
        debug_assert!(
            partials
                .iter()
                .all(|(_, from, p)| { *from <= span.start && span.end <= from + p.len() })
        );
        for at in span.clone().step_by(MERGE_CHUNK) {
            let end = (at + MERGE_CHUNK).min(span.end);
            summed.clear();
            summed.resize(end - at, zero);
            let leaf = |w: usize, out: &mut [T]| out.copy_from_slice(&diffs[w][at..end]);
            let known = |r: &Range<usize>| {
                partials
                    .iter()
                    .find(|(w, ..)| w == r)
                    .map(|(_, from, p)| &p[at - from..end - from])
            };
            tree::sum(0..n, &mut summed, &leaf, &known, &mut scratch, 0);
            merge(&mut base[at..end], &summed, n);
        }
    }

    /// Across processes: sends this process's differences of the round in `slot` (their
    /// partial sum when its workers form a node of the tree), against zero, to every other
    /// process whole, or with `segments` each process its segment `segments(r)`; returns
    /// what the others sent (whole, or this process's segment) as partial sums, one per
    /// node or per worker, and this process's (`(workers, first element, sums)`).
    fn trade_round(
        &self,
        st: &Stale<T>,
        slot: usize,
        peers: &dyn crate::sync::Peers,
        size: usize,
        chunk: usize,
        segments: Option<&dyn Fn(usize) -> Range<usize>>,
    ) -> Vec<Partial<T>> {
        let n = self.copies.len();
        let zero = self.zero.expect("a sync buffer's zero");
        let zeros = st.zeros.get_or_init(|| vec![zero; self.len]);
        let ranks = peers.ranks();
        let threads = st.local.len().max(1);
        let me = st.local.start / threads;
        let whole = 0..self.len;
        let span_of = |r: usize| segments.map_or(whole.clone(), |f| f(r));
        let node = |r: &Range<usize>| r.len() > 1 && tree::is_node(r, n);
        let mine_of = |w: usize| -> &[T] { st.worker(w).diffs[slot].get(self.len) };
        let mut partials = Vec::new();
        // What this process sends: its partial sum, or each worker's difference.
        let sum = node(&st.local).then(|| {
            tree::partial_by(self.len, st.local.clone(), zero, &|w, at, out| {
                out.copy_from_slice(&mine_of(w)[at..at + out.len()])
            })
        });
        let encode_span = |s: &Range<usize>, out: &mut Vec<u8>| match &sum {
            Some(sum) => encode(&sum[s.clone()], &zeros[s.clone()], chunk, out),
            None => {
                for w in st.local.clone() {
                    encode(&mine_of(w)[s.clone()], &zeros[s.clone()], chunk, out);
                }
            }
        };
        let theirs: Vec<(Range<usize>, Vec<u8>)> = match segments {
            None => {
                let mut mine = Vec::new();
                encode_span(&whole, &mut mine);
                peers.merge_behind(mine)
            }
            Some(_) => {
                let mut to = vec![Vec::new(); ranks];
                for (r, out) in to.iter_mut().enumerate().filter(|&(r, _)| r != me) {
                    encode_span(&span_of(r), out);
                }
                let theirs = peers.exchange_behind(to);
                if let Some((q, _)) = theirs.iter().find(|(q, _)| *q >= ranks) {
                    peers.fail(format!(
                        "differences of buffer `{}` came from process {q} of {ranks}",
                        self.name
                    ));
                }
                crate::sync::by_workers(theirs, threads)
            }
        };
        let here = span_of(me);
        if let Some(sum) = sum {
            let sum = if here == whole {
                sum
            } else {
                sum[here.clone()].to_vec()
            };
            partials.push((st.local.clone(), here.start, sum));
        }
        for (workers, bytes) in theirs {
            if workers.end > n || workers == st.local {
                peers.fail(format!(
                    "differences of buffer `{}` came from workers {workers:?}, of the call's {n}",
                    self.name
                ));
            }
            let mut at = 0;
            if node(&workers) {
                let mut sum = zeros[here.clone()].to_vec();
                match decode(&bytes, &zeros[here.clone()], chunk, size, &mut sum) {
                    Ok(used) => at = used,
                    Err(e) => peers.fail(format!(
                        "the partial sum of buffer `{}` from workers {workers:?} does not fit: \
                         {e}",
                        self.name
                    )),
                }
                partials.push((workers.clone(), here.start, sum));
            } else {
                for w in workers.clone() {
                    // Decoded for this round's merge only: a node of one worker.
                    let mut diff = zeros[here.clone()].to_vec();
                    match decode(&bytes[at..], &zeros[here.clone()], chunk, size, &mut diff) {
                        Ok(used) => {
                            at += used;
                            partials.push((w..w + 1, here.start, diff));
                        }
                        Err(e) => peers.fail(format!(
                            "the difference of buffer `{}` from worker {w} does not fit: {e}",
                            self.name
                        )),
                    }
                }
            }
            if at != bytes.len() {
                peers.fail(format!(
                    "the differences of buffer `{}` from workers {workers:?} are {} bytes, {} \
                     more than they hold",
                    self.name,
                    bytes.len(),
                    bytes.len() - at
                ));
            }
        }
        partials
    }

    /// Whether the buffer ran `ssp(s)`'s phases in this call: the value then holds every
    /// round's merge, and the copies are the workers' stale replicas.
    pub(super) fn ran_ahead(&self) -> bool {
        self.stale.get().is_some()
    }
}

#[cfg(test)]
mod tests;
