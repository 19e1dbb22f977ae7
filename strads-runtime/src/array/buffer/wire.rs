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

/// Appends `copy` encoded against `base` (the last merge's value, or zero for a partial
/// sum), in chunks of `chunk` elements: a chunk travels when its bytes differ.
pub(super) fn encode<T: 'static>(copy: &[T], base: &[T], chunk: usize, out: &mut Vec<u8>) {
    encode_with(copy, base, chunk, out, true);
}

/// [`encode`], comparing the memory bytes where they are the wire bytes and `borrow`
/// allows it, else each chunk's wire bytes made (the same output either way).
fn encode_with<T: 'static>(copy: &[T], base: &[T], chunk: usize, out: &mut Vec<u8>, borrow: bool) {
    if copy.is_empty() {
        return;
    }
    let chunk = chunk.max(1);
    let chunks = copy.len().div_ceil(chunk);
    let bitmap = out.len();
    out.resize(bitmap + chunks.div_ceil(8), 0);
    let mark = |out: &mut Vec<u8>, k: usize, bytes: &[u8]| {
        out[bitmap + k / 8] |= 1 << (k % 8);
        out.extend_from_slice(bytes);
    };
    if let (true, Some(c), Some(v)) = (borrow, le::bytes(copy), le::bytes(base)) {
        // The memory bytes are the wire bytes: compared and sent as they are. At the first
        // chunk that travels, room for it and every later one (growing would copy what is
        // there).
        let size = c.len() / copy.len();
        let mut reserved = false;
        for (k, (cb, v)) in c
            .chunks(chunk * size)
            .zip(v.chunks(chunk * size))
            .enumerate()
        {
            if cb != v {
                if !reserved {
                    out.reserve(c.len() - k * chunk * size);
                    reserved = true;
                }
                mark(out, k, cb);
            }
        }
        return;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (k, (c, v)) in copy.chunks(chunk).zip(base.chunks(chunk)).enumerate() {
        a.clear();
        b.clear();
        le::put(c, &mut a);
        le::put(v, &mut b);
        if a != b {
            mark(out, k, &a);
        }
    }
}

/// The bytes of a copy [`encode`]d over `chunks` chunks at the start of `bytes` when no
/// chunk changed (its map alone, all zero), else `None`.
fn unchanged(bytes: &[u8], chunks: usize) -> Option<usize> {
    let n = chunks.div_ceil(8);
    bytes
        .get(..n)
        .filter(|map| map.iter().all(|&b| b == 0))
        .map(|_| n)
}

/// Another process's worker's copy [`encode`]d against `base` at the start of `bytes`, as
/// a merge keeps it (`Buffered::received`): the bytes read and the copy, empty when no
/// chunk changed (the copy is the value).
pub(super) fn decode_copy<T: Copy + 'static>(
    bytes: &[u8],
    base: &[T],
    chunk: usize,
    size: usize,
) -> Result<(usize, Vec<T>), String> {
    if let Some(n) = unchanged(bytes, base.len().div_ceil(chunk.max(1))) {
        return Ok((n, Vec::new()));
    }
    let mut copy = base.to_vec();
    decode(bytes, base, chunk, size, &mut copy).map(|n| (n, copy))
}

/// The chunks process `r` of `ranks` merges in a reduce-scatter (`collective.rs`): of
/// `chunks` chunks, a contiguous run.
pub(super) fn segment_chunks(r: usize, ranks: usize, chunks: usize) -> std::ops::Range<usize> {
    r * chunks / ranks..(r + 1) * chunks / ranks
}

/// The elements process `r` of `ranks` merges for all: whole chunks of `chunk` elements,
/// `chunks` of them covering the `len` elements.
pub(super) fn segment(
    r: usize,
    ranks: usize,
    chunks: usize,
    chunk: usize,
    len: usize,
) -> std::ops::Range<usize> {
    let c = segment_chunks(r, ranks, chunks);
    (c.start * chunk).min(len)..(c.end * chunk).min(len)
}

/// The changed chunks of the copies a merge trades, counted alike by every process: in
/// all (`sum`: one per copy, or partial sum, that changed it), of those in their sender's
/// own segment (`own`: a reduce-scatter does not send them), and in their union
/// (`union`). The all-to-all sends `(P - 1) sum` chunks; the reduce-scatter `sum - own`,
/// and `(P - 1) union` with the merged segments.
#[derive(Default)]
pub(super) struct Overlap {
    pub(super) sum: u64,
    pub(super) own: u64,
    union: Vec<u8>,
}

impl Overlap {
    /// Adds the map of changed chunks at the start of an encoding of `chunks` chunks, of
    /// which those in `own` are in the sender's own segment.
    pub(super) fn add(&mut self, encoded: &[u8], chunks: usize, own: std::ops::Range<usize>) {
        let map = &encoded[..chunks.div_ceil(8).min(encoded.len())];
        let bit = |k: usize| map.get(k / 8).is_some_and(|b| b & (1 << (k % 8)) != 0);
        self.sum += map.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        self.own += own.filter(|&k| bit(k)).count() as u64;
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
}

/// Whether the reduce-scatter pays over `ranks` processes for changes like these (`sum`,
/// `own` and `union` as in [`Overlap`]): it is taken while it sends at most 1.2 times the
/// all-to-all's bytes, since it also merges `1 / P` of the array where the all-to-all
/// merges all of it (at 2 processes changing the same rows: equal bytes; changing
/// disjoint rows: 1.5 times).
pub(super) fn scatter_pays(ranks: usize, sum: u64, own: u64, union: u64) -> bool {
    let p = ranks.max(2) as u128;
    let (sum, own, union) = (u128::from(sum), u128::from(own), u128::from(union));
    // (sum - own) + (P - 1) union <= 6 / 5 (P - 1) sum
    5 * (sum.saturating_sub(own) + (p - 1) * union) <= 6 * (p - 1) * sum
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
    /// Elements of a chunk on the wire: a row, or [`FLAT_CHUNK`] of a 1-D array.
    pub(super) fn wire_chunk(&self) -> usize {
        if N >= 2 {
            self.len / self.shape[0].max(1)
        } else {
            FLAT_CHUNK
        }
        .max(1)
    }

    /// An element's bytes on the wire; stops the job when the elements cannot cross.
    pub(super) fn wire_size(&self, peers: &dyn crate::sync::Peers) -> usize {
        crate::array::le::wire_size::<T>().unwrap_or_else(|| {
            peers.fail(format!(
                "the buffered array `{}` has elements that cannot cross processes",
                self.name
            ))
        })
    }

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
        let size = self.wire_size(peers);
        // Rows travel whole or not at all (1-D arrays in chunks): only what changed since
        // the last merge, whose value every rank holds.
        let chunk = self.wire_chunk();
        let local = peers.local();
        let mut live = vec![local.start];
        let mut mine = Vec::new();
        // `sync` replicas: a process whose workers form a node of the merge's tree sends
        // their partial sum of differences (against zero), not their copies; every rank
        // tells which by the same rule.
        let n = self.copies.len();
        let zero = self.zero.filter(|_| !self.hybrid);
        let base = self.base.get(self.len);
        let partial = |r: &std::ops::Range<usize>| {
            zero.is_some() && r.len() > 1 && super::tree::is_node(r, n)
        };
        // Made once, and only when a partial sum travels (`partial` holds only if `zero`
        // is some).
        let zero_cell = std::cell::OnceCell::new();
        let zeros =
            || zero_cell.get_or_init(|| vec![zero.expect("a sync buffer's zero"); self.len]);
        let mut partials = Vec::new();
        let mut received = Vec::new();
        let chunks = self.len.div_ceil(chunk.max(1));
        let ranks = peers.ranks();
        let own_of = |workers: &std::ops::Range<usize>| {
            segment_chunks(workers.start / workers.len().max(1), ranks, chunks)
        };
        let mut overlap = Overlap::default();
        // This process's workers' copies (a `sync` replica's never made is the value), read
        // only until the others' are decoded.
        let copies: Vec<&[T]> = (0..n)
            .map(|w| match local.contains(&w) {
                true => self.made_copy(w).map_or(base, |c| &*c),
                false => base,
            })
            .collect();
        if partial(&local) {
            let sum = super::tree::partial(
                &copies,
                base,
                local.clone(),
                zero.expect("a sync buffer's zero"),
            );
            encode(&sum, zeros(), chunk, &mut mine);
            overlap.add(&mine, chunks, own_of(&local));
            // The merge takes this process's sum from here too, instead of summing again.
            partials.push((local.clone(), 0, sum));
        } else {
            for copy in &copies[local.clone()] {
                let at = mine.len();
                encode(copy, base, chunk, &mut mine);
                overlap.add(&mine[at..], chunks, own_of(&local));
            }
        }
        drop(copies);
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
                        overlap.add(&bytes, chunks, own_of(&workers));
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
            for w in workers.clone() {
                // Decoded for the merge, which reads it as worker `w`'s copy; its slot here
                // stays unmade.
                match decode_copy(&bytes[at..], base, chunk, size) {
                    Ok((n, copy)) => {
                        overlap.add(&bytes[at..], chunks, own_of(&workers));
                        at += n;
                        received.push((w, 0, copy));
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
        *self.received.lock().unwrap_or_else(|e| e.into_inner()) = received;
        // Every process saw every copy's map: the same choice for the next merge.
        self.scatter.store(
            scatter_pays(ranks, overlap.sum, overlap.own, overlap.union()),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduce_scatter_is_taken_up_to_six_fifths_of_the_all_to_alls_bytes() {
        // Two processes changing the same 10 chunks, half in each one's own segment:
        // equal bytes (10 + 10 against 20); disjoint halves: 5 + 10 against 10.
        assert!(scatter_pays(2, 20, 10, 10) && !scatter_pays(2, 10, 5, 10));
        // Changes only in the others' segments, disjoint: twice the all-to-all's bytes.
        assert!(!scatter_pays(2, 10, 0, 10) && !scatter_pays(4, 40, 0, 40));
        // Four processes changing the same rows: the reduce-scatter; nothing changed too.
        assert!(scatter_pays(4, 40, 10, 10) && scatter_pays(3, 0, 0, 0));
        // Maps counted, their own segments' bits, and united.
        let mut o = Overlap::default();
        o.add(&[0b0000_0101, 0b1], 9, 0..2);
        o.add(&[0b0000_0110, 0b0, 0xff], 9, 2..9);
        assert_eq!((o.sum, o.own, o.union()), (5, 2, 4));
    }

    #[test]
    fn only_changed_chunks_travel_and_the_copy_comes_back_exactly() {
        let base: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let mut copy = base.clone();
        copy[3] = -0.0; // 0.0 in the base: a change bit for bit
        copy[700] += 1.0;
        copy[999] = f32::NAN;
        let mut out = vec![7u8]; // whatever came before
        encode(&copy, &base, 100, &mut out);
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
        encode(&base, &base, 100, &mut same);
        assert_eq!(same, [0, 0]);
        assert!(decode(&out[1..out.len() - 1], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[0xff, 0xff], &base, 100, 4, &mut back).is_err());
        // Chunks made element by element (where memory bytes are not wire bytes) give the
        // same message.
        let mut made = vec![7u8];
        encode_with(&copy, &base, 100, &mut made, false);
        assert_eq!(made, out);
        let (a, b) = ([1usize, 2, 3, 4, 5], [1usize, 2, 9, 4, 5]);
        let (mut borrowed, mut made) = (Vec::new(), Vec::new());
        encode_with(&a, &b, 2, &mut borrowed, true);
        encode_with(&a, &b, 2, &mut made, false);
        assert_eq!(borrowed, made);
        assert_eq!(made, [0b10, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]);
        // As a merge keeps another process's copy: whole, or empty when unchanged.
        let (read, kept) = decode_copy(&out[1..], &base, 100, 4).unwrap();
        assert_eq!((read, bits(&kept)), (out.len() - 1, bits(&copy)));
        assert_eq!(decode_copy(&same, &base, 100, 4), Ok((2, Vec::new())));
        assert!(decode_copy(&out[1..out.len() - 1], &base, 100, 4).is_err());
        // An empty array: nothing crosses.
        let mut none = Vec::new();
        encode::<f32>(&[], &[], 100, &mut none);
        assert!(none.is_empty());
        assert_eq!(decode::<f32>(&[], &[], 100, 4, &mut []), Ok(0));
    }
}
