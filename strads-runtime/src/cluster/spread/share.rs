//! A rank's part of a spread array ([`Share`]), and the parts this process keeps, by the
//! driver's array id.

use std::any::Any;
use std::sync::Arc;

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
    /// The facts of a part of these indices.
    pub(crate) fn of<const N: usize>(keys: &[[u32; N]]) -> Facts {
        Facts {
            count: keys.len() as u64,
            sorted: keys.is_sorted(),
            first: keys.first().map_or(Vec::new(), |k| k.to_vec()),
            last: keys.last().map_or(Vec::new(), |k| k.to_vec()),
        }
    }

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
    /// Its number of entries.
    fn count(&self) -> usize;
    /// Its entries `range` (clamped to its own: `0..usize::MAX` is the whole part) as
    /// [`SpreadOps::gather`](crate::array::spread::SpreadOps::gather) sends a part.
    fn encode(&self, range: std::ops::Range<usize>) -> Vec<u8>;
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
    /// Its count and indices, as [`encode`](Share::encode) starts.
    fn encode_keys(&self) -> Vec<u8>;
    /// Its entries with their values in the array's codec, by destination rank, for an
    /// `iter_mut()` call (`coded::trade_out`); an error when the values have no bytes.
    fn trade_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Result<Vec<Vec<u8>>, String>;
    /// This rank's blocks from every rank's [`trade_out`](Share::trade_out) messages
    /// (`block_of`: an entry's block, `None` outside the shape).
    fn trade_in(
        &self,
        messages: Vec<Vec<u8>>,
        n_blocks: usize,
        mine: &dyn Fn(usize) -> bool,
        block_of: &dyn Fn(&[u32]) -> Option<usize>,
    ) -> Result<super::coded::Traded, String>;
    /// Lets the values go (they moved where an `iter_mut()` loop runs them); the indices
    /// stay.
    fn drop_values(&mut self);
    /// A part of the same indices whose entry `i` holds its value (a count) copies of
    /// `fill` (a number's bytes), coded as a `Vec` of numbers is.
    fn repeat(&self, fill: &[u8]) -> Result<Box<dyn Share>, String>;
    /// Sets its values from `bytes` in the array's codec, entry `i`'s ending at `ends[i]`
    /// (a checkpoint's, restored); an error when they are not one per entry.
    fn set_values(&mut self, bytes: Vec<u8>, ends: Vec<usize>) -> Result<(), String>;
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
        Facts::of(&self.keys)
    }

    fn bytes(&self) -> u64 {
        // The values only until they moved where a loop runs them (`drop_values`).
        (self.keys.len() * 4 * N + self.values.len() * std::mem::size_of::<T>()) as u64
    }

    fn count(&self) -> usize {
        self.keys.len()
    }

    fn encode(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let r = clamp(range, self.keys.len());
        let values = self.values.get(r.clone()).unwrap_or(&[]);
        crate::array::spread::encode_part(&self.keys[r], values)
    }

    fn digest(&self) -> [crate::checkpoint::Poly; 2] {
        crate::array::spread::digest_entries(&self.keys, &self.values)
    }

    fn histogram(&self, dim: usize, extent: usize) -> Result<Vec<u64>, String> {
        super::coded::histogram_of(&self.keys, dim, extent)
    }

    fn block_counts(&self, block_of: &dyn Fn(&[u32]) -> usize, n_blocks: usize) -> Vec<u64> {
        super::coded::block_counts_of(&self.keys, block_of, n_blocks)
    }

    fn bucket_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Vec<Vec<u8>> {
        let (order, offsets, mut out) =
            super::coded::by_block(&self.keys, block_of, n_blocks, ranks);
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

    fn encode_keys(&self) -> Vec<u8> {
        super::coded::encode_keys(&self.keys)
    }

    fn trade_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Result<Vec<Vec<u8>>, String> {
        le::wire_size::<T>().ok_or("values without bytes")?;
        let put = |ids: &[u32], out: &mut Vec<u8>| {
            let values: Vec<T> = ids
                .iter()
                .map(|&i| self.values[i as usize].clone())
                .collect();
            le::put(&values, out);
            Ok(())
        };
        super::coded::trade_out(&self.keys, &put, block_of, n_blocks, owner, ranks)
    }

    fn trade_in(
        &self,
        messages: Vec<Vec<u8>>,
        n_blocks: usize,
        mine: &dyn Fn(usize) -> bool,
        block_of: &dyn Fn(&[u32]) -> Option<usize>,
    ) -> Result<super::coded::Traded, String> {
        super::coded::trade_in::<N>(messages, n_blocks, mine, block_of)
    }

    fn drop_values(&mut self) {
        self.values = Vec::new();
    }

    fn set_values(&mut self, bytes: Vec<u8>, ends: Vec<usize>) -> Result<(), String> {
        self.values = le::get_vec::<T>(&bytes)
            .filter(|v| v.len() == self.keys.len() && ends.len() == v.len())
            .ok_or_else(|| {
                let n = self.keys.len();
                format!(
                    "{} bytes of {} values for {n} entries",
                    bytes.len(),
                    ends.len()
                )
            })?;
        Ok(())
    }

    fn repeat(&self, fill: &[u8]) -> Result<Box<dyn Share>, String> {
        let v: &dyn Any = &self.values;
        macro_rules! counts {
            ($($t:ty),*) => {$(
                if let Some(v) = v.downcast_ref::<Vec<$t>>() {
                    let count = |i: usize| {
                        u64::try_from(v[i])
                            .map_err(|_| format!("entry {i} of this rank's part counts {}", v[i]))
                    };
                    return repeated(&self.keys, &count, fill);
                }
            )*};
        }
        counts!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);
        Err(format!(
            "counts of {}, not whole numbers",
            std::any::type_name::<T>()
        ))
    }
}

/// A rank's part of a spread array of values in their codec: entry `i`'s value is
/// `bytes[ends[i - 1]..ends[i]]`.
pub(super) struct CodedPart<const N: usize> {
    pub keys: Vec<[u32; N]>,
    pub ends: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl<const N: usize> CodedPart<N> {
    fn value(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

impl<const N: usize> Share for CodedPart<N> {
    fn facts(&self) -> Facts {
        Facts::of(&self.keys)
    }

    fn bytes(&self) -> u64 {
        (self.keys.len() * 4 * N + self.ends.len() * 8 + self.bytes.len()) as u64
    }

    fn count(&self) -> usize {
        self.keys.len()
    }

    /// The count, the indices, `0` (the values of the part's own entries follow), the
    /// values.
    fn encode(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let r = clamp(range, self.keys.len());
        // (Values dropped where a loop runs them leave no ends: no values then.)
        let end = |i: usize| {
            i.checked_sub(1)
                .map_or(0, |i| self.ends.get(i).map_or(0, |&e| e))
        };
        let mut out = super::coded::encode_keys(&self.keys[r.clone()]);
        out.push(0);
        out.extend_from_slice(self.bytes.get(end(r.start)..end(r.end)).unwrap_or(&[]));
        out
    }

    fn encode_keys(&self) -> Vec<u8> {
        super::coded::encode_keys(&self.keys)
    }

    fn histogram(&self, dim: usize, extent: usize) -> Result<Vec<u64>, String> {
        super::coded::histogram_of(&self.keys, dim, extent)
    }

    fn block_counts(&self, block_of: &dyn Fn(&[u32]) -> usize, n_blocks: usize) -> Vec<u64> {
        super::coded::block_counts_of(&self.keys, block_of, n_blocks)
    }

    /// Never asked: a loop that reads an array of coded values brings it home
    /// (`SpreadOps::coded`); every rank sends counts of nothing.
    fn bucket_out(
        &self,
        _: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        _: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Vec<Vec<u8>> {
        vec![vec![0; 8 * n_blocks]; ranks]
    }

    fn assemble(
        &self,
        _: Vec<Vec<u8>>,
        _: usize,
        _: &dyn Fn(usize) -> bool,
    ) -> Result<(Arc<dyn Any + Send + Sync>, usize), String> {
        Err(
            "the blocks of an array whose values are not numbers cross only with an \
             `iter_mut()` loop's values"
                .into(),
        )
    }

    fn select(&self, keep: &dyn Fn(usize) -> bool) -> Box<dyn Share> {
        let mut part = CodedPart {
            keys: Vec::new(),
            ends: Vec::new(),
            bytes: Vec::new(),
        };
        for i in (0..self.keys.len()).filter(|&i| keep(i)) {
            part.keys.push(self.keys[i]);
            part.bytes.extend_from_slice(self.value(i));
            part.ends.push(part.bytes.len());
        }
        Box::new(part)
    }

    fn digest(&self) -> [crate::checkpoint::Poly; 2] {
        let [keys, _] = crate::array::spread::digest_entries::<u8, N>(&self.keys, &[]);
        let mut values = crate::checkpoint::Poly::new();
        values.update(&self.bytes);
        [keys, values]
    }

    fn values_any(&self) -> &dyn Any {
        &self.bytes
    }

    fn trade_out(
        &self,
        block_of: &dyn Fn(&[u32]) -> usize,
        n_blocks: usize,
        owner: &dyn Fn(usize) -> usize,
        ranks: usize,
    ) -> Result<Vec<Vec<u8>>, String> {
        let put = |ids: &[u32], out: &mut Vec<u8>| {
            for &i in ids {
                out.extend_from_slice(self.value(i as usize));
            }
            Ok(())
        };
        super::coded::trade_out(&self.keys, &put, block_of, n_blocks, owner, ranks)
    }

    fn trade_in(
        &self,
        messages: Vec<Vec<u8>>,
        n_blocks: usize,
        mine: &dyn Fn(usize) -> bool,
        block_of: &dyn Fn(&[u32]) -> Option<usize>,
    ) -> Result<super::coded::Traded, String> {
        super::coded::trade_in::<N>(messages, n_blocks, mine, block_of)
    }

    fn drop_values(&mut self) {
        self.ends = Vec::new();
        self.bytes = Vec::new();
    }

    fn set_values(&mut self, bytes: Vec<u8>, ends: Vec<usize>) -> Result<(), String> {
        if ends.len() != self.keys.len() || ends.last().copied().unwrap_or(0) != bytes.len() {
            return Err(format!(
                "{} values for {} entries",
                ends.len(),
                self.keys.len()
            ));
        }
        (self.bytes, self.ends) = (bytes, ends);
        Ok(())
    }

    fn repeat(&self, _: &[u8]) -> Result<Box<dyn Share>, String> {
        Err("counts that are not numbers".into())
    }
}

/// A [`CodedPart`] with `keys` whose entry `i` holds `counts(i)` copies of `fill`.
fn repeated<const N: usize>(
    keys: &[[u32; N]],
    counts: &dyn Fn(usize) -> Result<u64, String>,
    fill: &[u8],
) -> Result<Box<dyn Share>, String> {
    let mut total = 0u64;
    for i in 0..keys.len() {
        let n = counts(i)?;
        total = n
            .checked_mul(fill.len() as u64)
            .and_then(|b| b.checked_add(10))
            .and_then(|b| b.checked_add(total))
            .ok_or_else(|| format!("entry {i} counts {n}, more values than memory holds"))?;
    }
    let total = usize::try_from(total).map_err(|_| format!("{total} bytes of values"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(total)
        .map_err(|_| format!("{total} bytes of values do not fit in memory"))?;
    let mut ends = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        super::coded::put_repeated(counts(i)?, fill, &mut bytes);
        ends.push(bytes.len());
    }
    bytes.shrink_to_fit();
    Ok(Box::new(CodedPart {
        keys: keys.to_vec(),
        ends,
        bytes,
    }))
}

/// `range` within `0..len`.
fn clamp(range: std::ops::Range<usize>, len: usize) -> std::ops::Range<usize> {
    let end = range.end.min(len);
    range.start.min(end)..end
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
