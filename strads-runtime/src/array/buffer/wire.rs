//! How a process's copies of a buffered array cross to the other processes at a merge:
//! per chunk of elements (a row, or [`FLAT_CHUNK`] elements of a 1-D array) one bit says
//! whether the copy differs, bit for bit, from the value at the last merge, and only the
//! chunks that differ follow, little-endian. Every rank holds the same value at the last
//! merge (the merges are the same everywhere), so a receiver rebuilds the copy exactly;
//! rows no worker touched since the last merge do not travel.

use std::ops::{Add, Sub};

use super::Buffered;
use crate::array::le;
use crate::sync::Parked;

/// Elements per chunk of a 1-D array.
pub(super) const FLAT_CHUNK: usize = 256;

/// Appends `copy` encoded against the last merge's value, given as its little-endian
/// bytes `base` ([`le::put`] once per merge, for every copy), in chunks of `chunk`
/// elements.
pub(super) fn encode<T: 'static>(copy: &[T], base: &[u8], chunk: usize, out: &mut Vec<u8>) {
    if copy.is_empty() {
        return;
    }
    let chunk = chunk.max(1);
    let chunks = copy.len().div_ceil(chunk);
    let size = base.len() / copy.len();
    let bitmap = out.len();
    out.resize(bitmap + chunks.div_ceil(8), 0);
    let mut a = Vec::new();
    for (k, (c, v)) in copy
        .chunks(chunk)
        .zip(base.chunks(chunk * size))
        .enumerate()
    {
        a.clear();
        le::put(c, &mut a);
        if a != v {
            out[bitmap + k / 8] |= 1 << (k % 8);
            out.extend_from_slice(&a);
        }
    }
}

/// The changed chunks of the copies a merge trades, counted alike by every process: how
/// many were sent in all (`sum`, one per copy or partial sum that changed it) and how many
/// differ in the union of them (`union`). The reduce-scatter sends `(P - 1) / P` of the
/// changed chunks and `(P - 1) / P` of the union's, the all-to-all `P - 1` times the
/// changed chunks: with disjoint changes (`union == sum`) the all-to-all sends less.
#[derive(Default)]
pub(super) struct Overlap {
    pub(super) sum: u64,
    union: Vec<u8>,
}

impl Overlap {
    /// Adds the map of changed chunks at the start of an encoding of `chunks` chunks.
    pub(super) fn add(&mut self, encoded: &[u8], chunks: usize) {
        let map = &encoded[..chunks.div_ceil(8).min(encoded.len())];
        self.sum += map.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        if self.union.len() < map.len() {
            self.union.resize(map.len(), 0);
        }
        for (u, b) in self.union.iter_mut().zip(map) {
            *u |= b;
        }
    }

    /// Chunks changed in the union.
    pub(super) fn union(&self) -> u64 {
        self.union.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    /// Whether the reduce-scatter pays over `ranks` processes for changes like these: it
    /// sends `1 / P + union / sum` times the all-to-all's bytes, and merges `1 / P` of the
    /// array where the all-to-all merges all of it, so it is taken up to 1.2 times the
    /// all-to-all's bytes (at 2 processes, while the union is at most 70% of the sum).
    pub(super) fn scatter_pays(&self, ranks: usize) -> bool {
        scatter_pays(ranks, self.union(), self.sum, false)
    }
}

/// [`Overlap::scatter_pays`] from the counts: `union` chunks changed in the merged value,
/// and `sum` chunks changed in the copies sent (or, `owners`, the `(P - 1) / P` of them
/// the segments' owners received in a reduce-scatter).
pub(super) fn scatter_pays(ranks: usize, union: u64, sum: u64, owners: bool) -> bool {
    let p = ranks.max(2) as u128;
    let (union, sum) = (u128::from(union), u128::from(sum));
    // 1 / P + union / total <= 6 / 5, that is 5 P union <= (6 P - 5) total, with total =
    // sum, or sum P / (P - 1) from the owners' counts.
    if owners {
        5 * (p - 1) * union <= (6 * p - 5) * sum
    } else {
        5 * p * union <= (6 * p - 5) * sum
    }
}

/// Rebuilds into `copy` a copy [`encode`]d against `base` (the same value on every rank)
/// from the start of `bytes`, elements of `size` bytes on the wire; returns the bytes it
/// read, or what does not fit.
pub(super) fn decode<T: Copy + 'static>(
    bytes: &[u8],
    base: &[T],
    chunk: usize,
    size: usize,
    copy: &mut [T],
) -> Result<usize, String> {
    let chunk = chunk.max(1);
    let chunks = copy.len().div_ceil(chunk);
    let Some(bitmap) = bytes.get(..chunks.div_ceil(8)) else {
        return Err(format!(
            "{} bytes, fewer than the {} of its map of changed chunks",
            bytes.len(),
            chunks.div_ceil(8)
        ));
    };
    let mut at = bitmap.len();
    for (k, (c, v)) in copy.chunks_mut(chunk).zip(base.chunks(chunk)).enumerate() {
        if bitmap[k / 8] & (1 << (k % 8)) == 0 {
            c.copy_from_slice(v);
            continue;
        }
        let n = c.len() * size;
        match bytes.get(at..at + n) {
            Some(b) if le::get(b, c) => at += n,
            _ => {
                return Err(format!(
                    "{} bytes, too few for chunk {k} of {chunks} ({n} bytes at {at})",
                    bytes.len()
                ));
            }
        }
    }
    Ok(at)
}

impl<T, const N: usize> Buffered<'_, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync + 'static,
{
    /// In a call across processes: trades this process's workers' copies for those of the
    /// workers in other processes (parked at the same point), so that every process
    /// merges all of them, in worker order, to the same value, the one the call would
    /// reach on as many threads. Copies cross as the chunks that changed since the last
    /// merge (`wire.rs`).
    pub(super) fn gather(&self, parked: &Parked<'_>) {
        let Some(peers) = parked.peers() else {
            return;
        };
        let _no_with = self.no_with();
        let size = crate::array::le::wire_size::<T>().unwrap_or_else(|| {
            peers.fail(format!(
                "the buffered array `{}` has elements that cannot cross processes",
                self.name
            ))
        });
        // Rows travel whole or not at all (1-D arrays in chunks): only what changed since
        // the last merge, whose value every rank holds.
        let chunk = if N >= 2 {
            self.len / self.shape[0].max(1)
        } else {
            FLAT_CHUNK
        };
        let base = self.base.slice(self.len);
        let local = peers.local();
        let mut live = vec![local.start];
        let mut mine = Vec::new();
        // `sync` replicas: a process whose workers form a node of the merge's tree sends
        // their partial sum of differences (against zero), not their copies; every rank
        // tells which by the same rule.
        let n = self.copies.len();
        let zero = self.zero.filter(|_| !self.hybrid);
        let partial = |r: &std::ops::Range<usize>| {
            zero.is_some() && r.len() > 1 && super::tree::is_node(r, n)
        };
        // Made once, and only when a partial sum travels (`partial` holds only if `zero`
        // is some).
        let zero_cell = std::cell::OnceCell::new();
        let zeros =
            || zero_cell.get_or_init(|| vec![zero.expect("a sync buffer's zero"); self.len]);
        let mut partials = Vec::new();
        let chunks = self.len.div_ceil(chunk.max(1));
        let mut overlap = Overlap::default();
        if partial(&local) {
            let copies: Vec<&[T]> = self.copies.iter().map(|c| &*c.slice(self.len)).collect();
            let sum = super::tree::partial(
                &copies,
                base,
                local.clone(),
                zero.expect("a sync buffer's zero"),
            );
            let mut zero_bytes = Vec::with_capacity(self.len * size);
            crate::array::le::put(zeros(), &mut zero_bytes);
            encode(&sum, &zero_bytes, chunk, &mut mine);
            overlap.add(&mine, chunks);
            // The merge takes this process's sum from here too, instead of summing again.
            partials.push((local.clone(), 0, sum));
        } else {
            let mut base_bytes = Vec::with_capacity(self.len * size);
            crate::array::le::put(base, &mut base_bytes);
            for slot in &self.copies[local] {
                let at = mine.len();
                encode(slot.slice(self.len), &base_bytes, chunk, &mut mine);
                overlap.add(&mine[at..], chunks);
            }
        }
        for (workers, bytes) in peers.merge(mine) {
            live.push(workers.start);
            if workers.end > self.copies.len() {
                peers.fail(format!(
                    "copies of buffer `{}` came from workers {workers:?}, beyond the call's {}",
                    self.name,
                    self.copies.len()
                ));
            }
            if partial(&workers) {
                let zeros = zeros();
                let mut sum = zeros.clone();
                match decode(&bytes, zeros, chunk, size, &mut sum) {
                    Ok(used) if used == bytes.len() => {
                        overlap.add(&bytes, chunks);
                        partials.push((workers, 0, sum));
                    }
                    Ok(used) => peers.fail(format!(
                        "the partial sum of buffer `{}` from workers {workers:?} is {} bytes, \
                         {} more than it holds",
                        self.name,
                        bytes.len(),
                        bytes.len() - used
                    )),
                    Err(e) => peers.fail(format!(
                        "the partial sum of buffer `{}` from workers {workers:?} does not fit: \
                         {e}",
                        self.name
                    )),
                }
                continue;
            }
            let mut at = 0;
            for (w, slot) in workers.clone().zip(&self.copies[workers.clone()]) {
                match decode(&bytes[at..], base, chunk, size, slot.slice(self.len)) {
                    Ok(n) => {
                        overlap.add(&bytes[at..], chunks);
                        at += n;
                    }
                    Err(e) => peers.fail(format!(
                        "the copy of buffer `{}` from worker {w} does not fit: {e}",
                        self.name
                    )),
                }
            }
            if at != bytes.len() {
                peers.fail(format!(
                    "the copies of buffer `{}` from workers {workers:?} are {} bytes, {} more \
                     than they hold",
                    self.name,
                    bytes.len(),
                    bytes.len() - at
                ));
            }
        }
        if self.hybrid {
            live.sort_unstable();
            *self.live.lock().unwrap_or_else(|e| e.into_inner()) = live;
        }
        *self.partials.lock().unwrap_or_else(|e| e.into_inner()) = partials;
        // Every process saw every copy's map: the same choice for the next merge.
        self.scatter.store(
            overlap.scatter_pays(peers.ranks()),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduce_scatter_is_taken_up_to_six_fifths_of_the_all_to_alls_bytes() {
        // Two processes: while the union is at most 70% of the changed chunks sent.
        assert!(scatter_pays(2, 7, 10, false) && !scatter_pays(2, 8, 10, false));
        // The same from the owners' counts (half of them at two processes).
        assert!(scatter_pays(2, 7, 5, true) && !scatter_pays(2, 8, 5, true));
        // Four processes with disjoint changes: 1/4 + 1 > 6/5, the all-to-all.
        assert!(!scatter_pays(4, 40, 40, false) && !scatter_pays(4, 40, 30, true));
        // The same rows everywhere: the reduce-scatter; nothing changed: either (it).
        assert!(scatter_pays(4, 10, 40, false) && scatter_pays(3, 0, 0, true));
        // Maps counted and united.
        let mut o = Overlap::default();
        o.add(&[0b0000_0101, 0b1], 9);
        o.add(&[0b0000_0110, 0b0, 0xff], 9);
        assert_eq!((o.sum, o.union()), (5, 4));
    }

    #[test]
    fn only_changed_chunks_travel_and_the_copy_comes_back_exactly() {
        let base: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let mut copy = base.clone();
        copy[3] = -0.0; // 0.0 in the base: a change bit for bit
        copy[700] += 1.0;
        copy[999] = f32::NAN;
        let mut base_bytes = Vec::new();
        le::put(&base, &mut base_bytes);
        let mut out = vec![7u8]; // whatever came before
        encode(&copy, &base_bytes, 100, &mut out);
        // 10 chunks: a 2-byte map and 3 changed chunks of 100 f32.
        assert_eq!(out.len(), 1 + 2 + 3 * 400);
        let mut back = vec![0.0f32; 1000];
        assert_eq!(
            decode(&out[1..], &base, 100, 4, &mut back),
            Ok(out.len() - 1)
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&copy));
        // An unchanged copy is its map alone; a short message is an error, not a panic.
        let mut same = Vec::new();
        encode(&base, &base_bytes, 100, &mut same);
        assert_eq!(same, [0, 0]);
        assert!(decode(&out[1..out.len() - 1], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[0xff, 0xff], &base, 100, 4, &mut back).is_err());
        // An empty array: nothing crosses.
        let mut none = Vec::new();
        encode::<f32>(&[], &[], 100, &mut none);
        assert!(none.is_empty());
        assert_eq!(decode::<f32>(&[], &[], 100, 4, &mut []), Ok(0));
    }
}
