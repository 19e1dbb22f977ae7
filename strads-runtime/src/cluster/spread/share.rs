//! A rank's part of a spread array ([`Share`]), and the parts this process keeps, by the
//! driver's array id.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::array::le;
use crate::space::{Buckets, Filled};

/// What the driver learns of the part each rank made: enough for the array's facts (its
/// entry count, and whether the entries are in index order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Facts {
    pub count: u64,
    /// Whether the part's own entries are in index order.
    pub sorted: bool,
    pub first: Vec<u32>,
    pub last: Vec<u32>,
}

impl Facts {
    /// Whether the parts one after the other are in index order.
    pub(crate) fn in_order(parts: &[Facts]) -> bool {
        let mut last: Option<&Vec<u32>> = None;
        for f in parts.iter().filter(|f| f.count > 0) {
            if !f.sorted || last.is_some_and(|l| *l > f.first) {
                return false;
            }
            last = Some(&f.last);
        }
        true
    }
}

/// A rank's part of a spread array: a contiguous range of its entries.
pub(crate) trait Share: Any + Send {
    fn facts(&self) -> Facts;
    /// Bytes of its entries.
    fn bytes(&self) -> u64;
    /// The part as [`SpreadOps::gather`](crate::array::spread::SpreadOps::gather) sends it.
    fn encode(&self) -> Vec<u8>;
    /// How many of its entries have each index of `dim` (below `extent`).
    fn histogram(&self, dim: usize, extent: usize) -> Result<Vec<u64>, String>;
    /// How many of its entries fall in each of `n_blocks` blocks.
    fn block_counts(&self, block_of: &dyn Fn(&[u32]) -> usize, n_blocks: usize) -> Vec<u64>;
    /// Its entries by destination rank (`owner(block)`): each message holds this part's
    /// count of every block, then the entries of each block the destination owns, in order:
    /// their indices, their positions in this part, and their values.
    fn bucket_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Vec<Vec<u8>>;
    /// This rank's blocks from every rank's messages ([`bucket_out`](Share::bucket_out)),
    /// each block's entries in rank order: a [`Buckets`] of the array's type. Each entry's
    /// id is its position in the array: the parts one after the other (every rank's count
    /// is the sum of the block counts its message starts with).
    fn assemble(
        &self,
        messages: Vec<Vec<u8>>,
        n_blocks: usize,
        mine: &dyn Fn(usize) -> bool,
    ) -> Result<(Arc<dyn Any + Send + Sync>, usize), String>;
    /// The entries whose positions in this part `keep` says, as a new part.
    fn select(&self, keep: &dyn Fn(usize) -> bool) -> Box<dyn Share>;
    /// The checksums of its indices and of its values (`array::spread::digest_entries`).
    fn digest(&self) -> [crate::checkpoint::Poly; 2];
    /// Its values, a `Vec` of the array's element type (for an operation that knows it).
    fn values_any(&self) -> &dyn Any;
}

/// A part of entries of `T` with `N` indices each.
pub(crate) struct Part<T, const N: usize> {
    pub keys: Vec<[u32; N]>,
    pub values: Vec<T>,
}

/// A part to keep.
pub(crate) fn part<T, const N: usize>(mut keys: Vec<[u32; N]>, mut values: Vec<T>) -> Box<dyn Share>
where
    T: Clone + Send + Sync + 'static,
{
    // Kept for the array's life: without more than an eighth spare (a rank's entries
    // received piece by piece, or read line by line, grew by pushing).
    if keys.capacity() - keys.len() > keys.len() / 8 {
        keys.shrink_to_fit();
    }
    if values.capacity() - values.len() > values.len() / 8 {
        values.shrink_to_fit();
    }
    Box::new(Part { keys, values })
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i * 8..i * 8 + 8)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

impl<T: Clone + Send + Sync + 'static, const N: usize> Share for Part<T, N> {
    fn facts(&self) -> Facts {
        Facts {
            count: self.keys.len() as u64,
            sorted: self.keys.is_sorted(),
            first: self.keys.first().map_or(Vec::new(), |k| k.to_vec()),
            last: self.keys.last().map_or(Vec::new(), |k| k.to_vec()),
        }
    }

    fn bytes(&self) -> u64 {
        (self.keys.len() * (4 * N + std::mem::size_of::<T>())) as u64
    }

    fn encode(&self) -> Vec<u8> {
        crate::array::spread::encode_part(&self.keys, &self.values)
    }

    fn digest(&self) -> [crate::checkpoint::Poly; 2] {
        crate::array::spread::digest_entries(&self.keys, &self.values)
    }

    fn histogram(&self, dim: usize, extent: usize) -> Result<Vec<u64>, String> {
        if dim >= N {
            return Err(format!("dim {dim} of an array of {N}"));
        }
        let mut h = vec![0u64; extent];
        for k in &self.keys {
            *h.get_mut(k[dim] as usize)
                .ok_or_else(|| format!("index {} beyond {extent}", k[dim]))? += 1;
        }
        Ok(h)
    }

    fn block_counts(&self, block_of: &dyn Fn(&[u32]) -> usize, n_blocks: usize) -> Vec<u64> {
        let mut c = vec![0u64; n_blocks];
        for k in &self.keys {
            c[block_of(k)] += 1;
        }
        c
    }

    fn bucket_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Vec<Vec<u8>> {
        let blocks: Vec<u32> = self.keys.iter().map(|k| block_of(k) as u32).collect();
        let (order, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
        drop(blocks);
        let mut header = Vec::with_capacity(8 * n_blocks);
        for b in 0..n_blocks {
            header.extend_from_slice(&((offsets[b + 1] - offsets[b]) as u64).to_le_bytes());
        }
        let mut out = vec![header; ranks];
        let mut values = Vec::new();
        for b in 0..n_blocks {
            let to = &mut out[owner(b)];
            let ids = &order[offsets[b]..offsets[b + 1]];
            for &i in ids {
                for &x in &self.keys[i as usize] {
                    to.extend_from_slice(&x.to_le_bytes());
                }
            }
            for &i in ids {
                to.extend_from_slice(&i.to_le_bytes());
            }
            values.clear();
            values.extend(ids.iter().map(|&i| self.values[i as usize].clone()));
            le::put(&values, to);
        }
        out
    }

    fn assemble(
        &self,
        mut messages: Vec<Vec<u8>>,
        n_blocks: usize,
        mine: &dyn Fn(usize) -> bool,
    ) -> Result<(Arc<dyn Any + Send + Sync>, usize), String> {
        let size = le::wire_size::<T>().ok_or("a part of a type without bytes")?;
        let head = 8 * n_blocks;
        let ours: Vec<usize> = (0..n_blocks).filter(|&b| mine(b)).collect();
        let mut lens = vec![0usize; n_blocks];
        // Where each rank's part starts in the array. Every count is checked against its
        // message's length before anything is sized by it: a message of another length
        // is refused.
        let mut starts = Vec::with_capacity(messages.len() + 1);
        let mut total = 0usize;
        let entry = 4 * N + 4 + size;
        for (r, m) in messages.iter().enumerate() {
            starts.push(total);
            let cut = || format!("rank {r}'s counts are cut short");
            let wrong = || format!("rank {r}'s message does not hold the entries it counts");
            for (b, len) in lens.iter_mut().enumerate() {
                let n = usize::try_from(u64_at(m, b).ok_or_else(cut)?).map_err(|_| wrong())?;
                *len = len.checked_add(n).ok_or_else(wrong)?;
                total = total.checked_add(n).ok_or_else(wrong)?;
            }
            let mut bytes = Some(head);
            for &b in &ours {
                let n = u64_at(m, b).unwrap_or(0) as usize;
                bytes = bytes
                    .zip(n.checked_mul(entry))
                    .and_then(|(a, x)| a.checked_add(x));
            }
            if bytes != Some(m.len()) {
                return Err(wrong());
            }
        }
        starts.push(total);
        // Ids are 32 bits (as a bucketed array's on one process): an array with more
        // entries keeps none (its calls cannot be traced), and crosses all the same.
        let numbered = total <= u32::MAX as usize;
        // Where each kept block's next entry goes: the blocks in order, each block's
        // entries in rank order. The messages are read one rank at a time, each dropped
        // once read, into arrays allocated zeroed (pages backed as they are written), so
        // the messages and the blocks together hold about one copy of the entries.
        let mut next = vec![0usize; n_blocks];
        let mut held = 0usize;
        let mut counts = vec![0usize; n_blocks];
        for &b in &ours {
            next[b] = held;
            held += lens[b];
            counts[b] = lens[b];
        }
        let mut keys = vec![[0u32; N]; held];
        let mut ids = vec![0u32; held];
        let mut value_bytes = vec![0u8; held * size];
        for r in 0..messages.len() {
            let m = std::mem::take(&mut messages[r]);
            let mut at = head;
            for &b in &ours {
                let n = u64_at(&m, b).unwrap_or(0) as usize;
                let k_end = at + n * 4 * N;
                let i_end = k_end + n * 4;
                let v_end = i_end + n * size;
                let (Some(kb), Some(ib), Some(vb)) =
                    (m.get(at..k_end), m.get(k_end..i_end), m.get(i_end..v_end))
                else {
                    return Err(format!("rank {r}'s entries of block {b} are cut short"));
                };
                // Within the block's room: its length is every rank's count of it.
                let to = next[b]..next[b] + n;
                for (k, chunk) in keys[to.clone()].iter_mut().zip(kb.chunks_exact(4 * N)) {
                    for (x, c) in k.iter_mut().zip(chunk.chunks_exact(4)) {
                        *x = u32::from_le_bytes(c.try_into().expect("4 bytes"));
                    }
                }
                for (id, c) in ids[to.clone()].iter_mut().zip(ib.chunks_exact(4)) {
                    let i = starts[r] + u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize;
                    if i >= starts[r + 1] {
                        return Err(format!("rank {r} sent an entry beyond its part"));
                    }
                    *id = if numbered { i as u32 } else { u32::MAX };
                }
                value_bytes[to.start * size..to.end * size].copy_from_slice(vb);
                next[b] = to.end;
                at = v_end;
            }
            // `at` is the message's length now: it was checked to hold just these entries.
        }
        let values = le::get_vec::<T>(&value_bytes).ok_or("the entries' values do not decode")?;
        drop(value_bytes);
        let bytes = keys.len() * (4 * N + 4 + size);
        let filled = Filled::from_parts(keys, ids, values, &counts, lens);
        Ok((Arc::new(Buckets::filled(filled)), bytes))
    }

    fn select(&self, keep: &dyn Fn(usize) -> bool) -> Box<dyn Share> {
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        for (i, (k, v)) in self.keys.iter().zip(&self.values).enumerate() {
            if keep(i) {
                keys.push(*k);
                values.push(v.clone());
            }
        }
        part(keys, values)
    }

    fn values_any(&self) -> &dyn Any {
        &self.values
    }
}

/// The parts this process keeps, by the driver's array id.
static PARTS: Mutex<BTreeMap<u64, Box<dyn Share>>> = Mutex::new(BTreeMap::new());

/// Keeps `part` of the driver's array `id`.
pub(crate) fn keep(id: u64, part: Box<dyn Share>) {
    PARTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, part);
}

/// Runs `f` on this process's part of array `id`.
pub(crate) fn with_part<R>(id: u64, f: impl FnOnce(&dyn Share) -> R) -> Result<R, String> {
    let parts = PARTS.lock().unwrap_or_else(|e| e.into_inner());
    let p = parts
        .get(&id)
        .ok_or_else(|| format!("this rank holds no part of array {id}"))?;
    Ok(f(p.as_ref()))
}

/// Drops this process's part of array `id` (the driver dropped the array).
pub(crate) fn forget(id: u64) {
    PARTS.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}

/// The parts kept, and their bytes.
pub(crate) fn held() -> (usize, u64) {
    let parts = PARTS.lock().unwrap_or_else(|e| e.into_inner());
    (parts.len(), parts.values().map(|p| p.bytes()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ranks' parts of a 2 x 4 grid of blocks over a `[4, 8]` array: block `b` is
    /// `(k[0] / 2) * 4 + k[1] / 2`, blocks below 4 owned by rank 0.
    fn messages() -> (Vec<Vec<u8>>, Vec<Vec<u8>>, usize) {
        let block_of = |k: &[u32]| (k[0] / 2) as usize * 4 + (k[1] / 2) as usize;
        let owner = |b: usize| usize::from(b >= 4);
        let a = Part {
            keys: vec![[0u32, 1], [3, 7], [1, 0], [2, 2], [0, 5]],
            values: vec![1.5f32, 2.5, 3.5, 4.5, 5.5],
        };
        let b = Part {
            keys: vec![[1u32, 1], [2, 6], [0, 0]],
            values: vec![6.5f32, 7.5, 8.5],
        };
        let from_a = a.bucket_out(&block_of, 8, &owner, 2);
        let from_b = b.bucket_out(&block_of, 8, &owner, 2);
        let to_0 = vec![from_a[0].clone(), from_b[0].clone()];
        let to_1 = vec![from_a[1].clone(), from_b[1].clone()];
        (to_0, to_1, 8)
    }

    fn assembled(messages: Vec<Vec<u8>>, rank: usize) -> Result<String, String> {
        let part = Part::<f32, 2> {
            keys: Vec::new(),
            values: Vec::new(),
        };
        let (blocks, bytes) = part.assemble(messages, 8, &|b| usize::from(b >= 4) == rank)?;
        let blocks = blocks
            .downcast::<Buckets<f32, 2>>()
            .map_err(|_| "not buckets".to_string())?;
        Ok(format!("{bytes} {blocks:?}"))
    }

    #[test]
    fn a_trade_assembles_each_block_in_rank_order() {
        let (to_0, to_1, _) = messages();
        // Rank 0's blocks: [0, 1], [1, 0] and [1, 1], [0, 0] (block 0, rank 0's then rank
        // 1's, each in its part's order), then [0, 5] (block 2); rank 1's: [2, 2] (block
        // 5), then [3, 7] and [2, 6] (block 7).
        let want_0 = Filled::from_parts(
            vec![[0, 1], [1, 0], [1, 1], [0, 0], [0, 5]],
            vec![0, 2, 5, 7, 4],
            vec![1.5f32, 3.5, 6.5, 8.5, 5.5],
            &[4, 0, 1, 0, 0, 0, 0, 0],
            vec![4, 0, 1, 0, 0, 1, 0, 2],
        );
        let want_0 = format!("{} {:?}", 5 * 16, Buckets::filled(want_0));
        assert_eq!(assembled(to_0, 0).unwrap(), want_0);
        let want_1 = Filled::from_parts(
            vec![[2, 2], [3, 7], [2, 6]],
            vec![3, 1, 6],
            vec![4.5f32, 2.5, 7.5],
            &[0, 0, 0, 0, 0, 1, 0, 2],
            vec![4, 0, 1, 0, 0, 1, 0, 2],
        );
        let want_1 = format!("{} {:?}", 3 * 16, Buckets::filled(want_1));
        assert_eq!(assembled(to_1, 1).unwrap(), want_1);
    }

    #[test]
    fn a_message_that_does_not_hold_its_counts_is_refused() {
        let (to_0, _, _) = messages();
        // Cut short, one byte too many, a count past the message, a count that overflows.
        let mut cut = to_0.clone();
        cut[1].pop();
        let mut long = to_0.clone();
        long[0].push(0);
        let mut more = to_0.clone();
        more[1][..8].copy_from_slice(&3u64.to_le_bytes());
        let mut huge = to_0.clone();
        huge[0][..8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        let mut header = to_0.clone();
        header[0].truncate(20);
        for (bad, says) in [
            (cut, "rank 1's message does not hold"),
            (long, "rank 0's message does not hold"),
            (more, "rank 1's message does not hold"),
            (huge, "rank 0's message does not hold"),
            (header, "rank 0's counts are cut short"),
        ] {
            let e = assembled(bad, 0).unwrap_err();
            assert!(e.starts_with(says), "{e}");
        }
    }
}
