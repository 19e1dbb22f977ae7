//! A merge across processes as a reduce-scatter and an all-gather: the array's chunks
//! (rows, or [`FLAT_CHUNK`](super::wire::FLAT_CHUNK) elements of a 1-D array) are cut
//! into one contiguous segment per process; each process sends every other process the
//! part of its workers' copies (or of their partial sum, `tree.rs`) in that process's
//! segment, merges its own segment from what it receives, and sends the merged segment
//! to every other process. Each
//! process sends `2 (P - 1) / P` of a copy's changed bytes, where the all-to-all of
//! `wire.rs` sends `P - 1` copies, and merges `1 / P` of the elements, where that merges
//! them all. Each element is still merged by the same tree over the same workers' values
//! (a segment's owner folds them in the fixed order), so every layout gives the bits of
//! as many threads in one process.
//!
//! It takes two rounds where the all-to-all takes one, so arrays below
//! [`COLLECTIVE_BYTES`] keep the all-to-all, whose one round is what their merge's time
//! is made of; `sync = "hybrid"` replicas and apply functions keep it too (every process
//! hands every summed update to the function). When the processes change disjoint rows
//! (the union of their changes as large as their sum) the reduce-scatter would send up to
//! `1 + 1 / P` times the all-to-all's bytes: every merge counts the changed chunks
//! (`wire::Overlap`; the segments' owners send their counts with the merged segments) and
//! the next merge takes the way that sends less, every process alike.

use std::ops::{Add, Range, Sub};

use super::wire::{Overlap, decode, decode_copy, encode, scatter_pays, segment, segment_chunks};
use super::{Buffered, tree};
use crate::array::le;
use crate::sync::Parked;

/// Arrays of at least this many bytes merge across processes by reduce-scatter and
/// all-gather; smaller ones by one all-to-all round.
pub(super) const COLLECTIVE_BYTES: usize = 64 << 10;

impl<T, const N: usize> Buffered<'_, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync + 'static,
{
    /// In a call across processes, merges the copies by reduce-scatter and all-gather
    /// (above) and returns `true`; returns `false`, having done nothing, where the
    /// all-to-all of [`gather`](Self::gather) merges instead (every process takes the same
    /// way: the rule reads only the array's shape and the layout).
    pub(super) fn reduce_scatter(&self, parked: &Parked<'_>) -> bool {
        let Some(peers) = parked.peers() else {
            return false;
        };
        let (ranks, local) = (peers.ranks(), peers.local());
        // Elements that cannot cross: `gather` says so.
        let Some(size) = le::wire_size::<T>() else {
            return false;
        };
        let chunk = self.wire_chunk();
        let chunks = self.len.div_ceil(chunk);
        if self.hybrid || ranks < 2 || local.is_empty() || chunks < ranks {
            return false;
        }
        // Small arrays, and changes so disjoint that the all-to-all sends less (the last
        // merge said so, alike on every process): the all-to-all.
        if self.len * size < COLLECTIVE_BYTES
            || !self.scatter.load(std::sync::atomic::Ordering::Relaxed)
        {
            return false;
        }
        let threads = local.len();
        let me = local.start / threads;
        let n = self.copies.len();
        if ranks * threads != n {
            peers.fail(format!(
                "buffer `{}` has {n} copies for {ranks} processes of {threads} workers",
                self.name
            ));
        }
        let seg = |r: usize| segment(r, ranks, chunks, chunk, self.len);
        let zero = self.zero;
        let partial = |r: &Range<usize>| zero.is_some() && r.len() > 1 && tree::is_node(r, n);
        let mine = seg(me);
        let seg_chunks = segment_chunks(me, ranks, chunks).len();
        // This process's changed chunks in its own segment (they do not travel).
        let mut own_changes = Overlap::default();
        let mut scratch = Vec::new();

        // Round 1: to each process, this one's share of its segment.
        // This segment's value before the merge, which the others still hold: the merged
        // segment travels as the chunks that changed against it.
        let before: Vec<T>;
        let (to, own) = {
            let _no_with = self.no_with();
            let base = self.base.get(self.len);
            before = base[mine.clone()].to_vec();
            // This process's workers' copies (one never made is the value; the others'
            // workers' are not read here).
            let copies: Vec<&[T]> = (0..n)
                .map(|w| match local.contains(&w) {
                    true => self.made_copy(w).map_or(base, |c| &*c),
                    false => base,
                })
                .collect();
            let mut to = vec![Vec::new(); ranks];
            let mut own = None;
            if partial(&local) {
                let zero = zero.expect("a sync buffer's zero");
                let sum = tree::partial(&copies, base, local.clone(), zero);
                let zeros = vec![zero; self.len];
                for (r, out) in to.iter_mut().enumerate().filter(|&(r, _)| r != me) {
                    let s = seg(r);
                    encode(&sum[s.clone()], &zeros[s], chunk, out);
                }
                encode(
                    &sum[mine.clone()],
                    &zeros[mine.clone()],
                    chunk,
                    &mut scratch,
                );
                own_changes.add(&scratch, seg_chunks, 0..seg_chunks);
                own = Some(sum[mine.clone()].to_vec());
            } else {
                for (r, out) in to.iter_mut().enumerate().filter(|&(r, _)| r != me) {
                    let s = seg(r);
                    for copy in &copies[local.clone()] {
                        encode(&copy[s.clone()], &base[s.clone()], chunk, out);
                    }
                }
                for copy in &copies[local.clone()] {
                    scratch.clear();
                    encode(
                        &copy[mine.clone()],
                        &base[mine.clone()],
                        chunk,
                        &mut scratch,
                    );
                    own_changes.add(&scratch, seg_chunks, 0..seg_chunks);
                }
            }
            (to, own)
        };
        let theirs = peers.exchange(to);
        let mut partials = Vec::new();
        let mut received = Vec::new();
        // This segment's changed chunks as the others sent them.
        let mut got = Overlap::default();
        {
            let _no_with = self.no_with();
            let base = &self.base.get(self.len)[mine.clone()];
            for (q, bytes) in theirs {
                let workers = q * threads..(q + 1) * threads;
                if q == me || workers.end > n {
                    peers.fail(format!(
                        "a merge of buffer `{}` came from process {q} of {ranks}",
                        self.name
                    ));
                }
                if partial(&workers) {
                    let zeros = vec![zero.expect("a sync buffer's zero"); mine.len()];
                    let mut sum = zeros.clone();
                    match decode(&bytes, &zeros, chunk, size, &mut sum) {
                        Ok(used) if used == bytes.len() => {
                            got.add(&bytes, seg_chunks, 0..0);
                            partials.push((workers, mine.start, sum));
                        }
                        Ok(used) => peers.fail(format!(
                            "the partial sum of buffer `{}` from workers {workers:?} is {} \
                             bytes, {} more than it holds",
                            self.name,
                            bytes.len(),
                            bytes.len() - used
                        )),
                        Err(e) => peers.fail(format!(
                            "the partial sum of buffer `{}` from workers {workers:?} does not \
                             fit: {e}",
                            self.name
                        )),
                    }
                    continue;
                }
                let mut at = 0;
                for w in workers.clone() {
                    // Decoded for the merge, which reads it as worker `w`'s copy; its slot
                    // here stays unmade.
                    match decode_copy(&bytes[at..], base, chunk, size) {
                        Ok((used, copy)) => {
                            got.add(&bytes[at..], seg_chunks, 0..0);
                            at += used;
                            received.push((w, mine.start, copy));
                        }
                        Err(e) => peers.fail(format!(
                            "the copy of buffer `{}` from worker {w} does not fit: {e}",
                            self.name
                        )),
                    }
                }
                if at != bytes.len() {
                    peers.fail(format!(
                        "the copies of buffer `{}` from workers {workers:?} are {} bytes, {} \
                         more than they hold",
                        self.name,
                        bytes.len(),
                        bytes.len() - at
                    ));
                }
            }
            if let Some(sum) = own {
                partials.push((local.clone(), mine.start, sum));
            }
        }
        *self.partials.lock().unwrap_or_else(|e| e.into_inner()) = partials;
        *self.received.lock().unwrap_or_else(|e| e.into_inner()) = received;
        self.merge_span(mine.clone());

        // Round 2: every process's merged segment to every other, after the counts of its
        // changed chunks (received, and merged) that choose the next merge's way.
        let mut merged_map = Vec::new();
        {
            let _no_with = self.no_with();
            let merged = &self.base.slice(self.len)[mine.clone()];
            encode(merged, &before, chunk, &mut merged_map);
        }
        let mut changed = Overlap::default();
        changed.add(&merged_map, seg_chunks, 0..0);
        // This segment's changed chunks: sent to it, kept here, and merged.
        let counts = [got.sum, own_changes.sum, changed.union()];
        let mut out = Vec::with_capacity(24 + merged_map.len());
        for c in counts {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&merged_map);
        let [mut sent, mut kept, mut union] = counts;
        let theirs = peers.exchange(crate::sync::to_others(out, ranks, me));
        let _no_with = self.no_with();
        let base = self.base.slice(self.len);
        let mut segment = Vec::new();
        for (q, message) in theirs {
            let s = seg(q);
            let Some((counts, bytes)) = message.split_first_chunk::<24>() else {
                peers.fail(format!(
                    "the merged segment of buffer `{}` from process {q} is {} bytes, without \
                     its counts",
                    self.name,
                    message.len()
                ));
            };
            let count = |k: usize| {
                u64::from_le_bytes(counts[8 * k..8 * k + 8].try_into().expect("8 bytes"))
            };
            sent = sent.saturating_add(count(0));
            kept = kept.saturating_add(count(1));
            union = union.saturating_add(count(2));
            // Decoded against the last merge's value (still this segment's base here), then
            // set as the value and in every copy made.
            segment.clear();
            segment.extend_from_slice(&base[s.clone()]);
            match decode(bytes, &base[s.clone()], chunk, size, &mut segment) {
                Ok(used) if used == bytes.len() => {}
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
            base[s.clone()].copy_from_slice(&segment);
            for w in 0..n {
                if let Some(c) = self.made_copy(w) {
                    c[s.clone()].copy_from_slice(&segment);
                }
            }
        }
        // The segments' owners received `(P - 1) / P` of the changed chunks; every process
        // has every owner's counts: the same choice for the next merge.
        self.scatter.store(
            scatter_pays(ranks, sent.saturating_add(kept), kept, union),
            std::sync::atomic::Ordering::Relaxed,
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::{Fake, Hub, each};
    use super::*;
    use crate::array::DistArray;
    use crate::sync::Peers;
    use std::sync::atomic::Ordering;

    /// What worker `w` adds to its copy in round `k`: a few rows (or elements), with
    /// values whose sum depends on the order they are added in.
    /// With `shared`, every worker touches the same elements.
    fn touch<const N: usize>(
        w: usize,
        k: usize,
        shared: bool,
        c: &mut crate::array::buffer::CopyView<'_, f32, N>,
    ) {
        let s = c.as_mut_slice();
        let len = s.len();
        let spread = if shared { 0 } else { w * 7919 };
        for j in 0..40 {
            let e = (spread + k * 104_729 + j * 613) % len;
            s[e] += if j % 2 == 0 { 1e7 } else { 0.3 + w as f32 };
        }
    }

    /// Two application points of a buffer of `shape` merged by `workers` in one process,
    /// and by `ranks` processes of `workers / ranks` each: the final bits, each process's
    /// bytes sent, and its rounds (all-to-all, exchanges).
    fn merged<const N: usize>(
        shape: [usize; N],
        sync: bool,
        shared: bool,
        ranks: usize,
        workers: usize,
    ) -> (Vec<u32>, Vec<(u64, u64, u64)>) {
        let init = DistArray::<f32, N>::random(shape, 5);
        let run = |peers: Option<&Fake<'_>>| {
            let mut a = init.clone();
            let b = Buffered::new(&mut a, workers);
            let b = if sync { b.averaged() } else { b };
            let local = peers.map_or(0..workers, |p| p.local());
            for k in 0..2 {
                for w in local.clone() {
                    b.with(w, |c| touch(w, k, shared, c));
                }
                let dyn_peers = peers.map(|p| p as &dyn Peers);
                b.apply(&Parked::next(7, dyn_peers));
            }
            // The copies of other processes' workers cross into the merge and are never
            // made here (no memory for them); this process's workers' copies are.
            let made: Vec<bool> = b.copies.iter().map(|c| c.made.is_completed()).collect();
            let expected: Vec<bool> = (0..workers).map(|w| local.contains(&w)).collect();
            assert_eq!(
                made, expected,
                "copies made, {local:?} of {workers} workers"
            );
            b.finish();
            a.as_slice()
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<u32>>()
        };
        let alone = run(None);
        let hub = Hub::default();
        let threads = workers / ranks;
        let fakes = hub.processes(ranks, threads);
        let results: Vec<Vec<u32>> = each(&fakes, |f| run(Some(f)));
        for (r, bits) in results.iter().enumerate() {
            assert!(
                *bits == alone,
                "process {r} of {ranks} differs from one process"
            );
        }
        let stats = fakes
            .iter()
            .map(|f| {
                (
                    f.sent.load(Ordering::Relaxed),
                    f.all_to_all.load(Ordering::Relaxed),
                    f.exchanges.load(Ordering::Relaxed),
                )
            })
            .collect();
        (alone, stats)
    }

    #[test]
    fn processes_merge_by_reduce_scatter_to_the_bits_of_one_process() {
        // 4096 rows of 8 f32 (128 KiB): reduce-scatter and all-gather, two exchanges a
        // merge; plain buffers and `sync` replicas, one and two workers a process (two: a
        // process's workers form a node of the tree and send its partial sum). Workers
        // that change the same rows keep the reduce-scatter; workers whose changes are
        // disjoint take it once, and the counts it trades send the second merge the
        // all-to-all way (which then sends less), on every process alike.
        for sync in [false, true] {
            for (ranks, workers) in [(2, 2), (3, 3), (4, 4), (2, 4), (3, 6)] {
                let (_, stats) = merged([4096, 8], sync, true, ranks, workers);
                for &(_, all_to_all, exchanges) in &stats {
                    assert_eq!((all_to_all, exchanges), (0, 4), "{ranks} x {workers}");
                }
                let (_, stats) = merged([4096, 8], sync, false, ranks, workers);
                for &(_, all_to_all, exchanges) in &stats {
                    assert_eq!((all_to_all, exchanges), (1, 2), "{ranks} x {workers}");
                }
            }
        }
        // A 1-D array in chunks of 256 elements: every process takes the same ways.
        let (_, stats) = merged([40_000], true, false, 3, 3);
        assert!(
            stats
                .iter()
                .all(|s| s.2 >= 2 && (s.1, s.2) == (stats[0].1, stats[0].2))
        );
        // Below `COLLECTIVE_BYTES`: one all-to-all round a merge.
        let (_, stats) = merged([1000, 8], true, false, 3, 3);
        assert!(stats.iter().all(|s| s.1 == 2 && s.2 == 0));
    }

    #[test]
    fn reduce_scatter_sends_less_than_the_all_to_all() {
        // Four processes whose workers change the same 40 rows: the all-to-all would send
        // each process's changed rows to three others; the collective sends 3/4 of them
        // and 3/4 of the merged rows, half as many bytes (and a map of 128 rows a process).
        let (_, stats) = merged([4096, 8], true, true, 4, 4);
        // Two merges, each of 40 changed rows of 8 f32 and a map of 4096 rows, to three
        // processes.
        let all_to_all = 2 * 3 * (40 * 8 * 4 + 4096 / 8);
        for &(sent, ..) in &stats {
            assert!(
                (sent as usize) < all_to_all * 6 / 10,
                "a process sent {sent} bytes, the all-to-all {all_to_all}"
            );
        }
    }

    #[test]
    fn segments_are_whole_chunks_covering_the_array_once() {
        // 10 rows of 3 elements over 4 processes: 2, 3, 2, 3 rows.
        let segs: Vec<_> = (0..4).map(|r| segment(r, 4, 10, 3, 30)).collect();
        assert_eq!(segs, vec![0..6, 6..15, 15..21, 21..30]);
        // A 1-D array whose last chunk is short.
        let segs: Vec<_> = (0..3).map(|r| segment(r, 3, 5, 256, 1100)).collect();
        assert_eq!(segs, vec![0..256, 256..768, 768..1100]);
        // As many chunks as processes: one each.
        let segs: Vec<_> = (0..2).map(|r| segment(r, 2, 2, 256, 300)).collect();
        assert_eq!(segs, vec![0..256, 256..300]);
    }
}
