//! A [`SparseArray`](super::SparseArray) whose entries live in parts on the ranks of a
//! cluster job: a data set generated or loaded in place. The driver holds its own part and
//! the facts (shape, entry count, index order); each rank holds a contiguous range of the
//! entries, in rank order, so the parts one after the other are the array's entries in
//! their order.
//!
//! The cluster runtime implements [`SpreadOps`]; the array only asks it for what it needs:
//! the parts brought home (serial code reads the array whole), a window of its entries
//! (serial code reads them by value, `SparseArray::entry_value`), a histogram of one dim
//! (balanced partitions), the entries of each block (a plan's blocks), and the entries
//! traded so that each rank holds the blocks its workers run.

use std::any::Any;
use std::sync::Arc;

/// What a spread array asks of the cluster runtime. Every call is a collective operation:
/// it runs on every rank between calls, from the driver.
pub(crate) trait SpreadOps: Send + Sync {
    /// Every rank's part as bytes (`count` as `u64`, the indices, the values, little-endian),
    /// in rank order; each rank lets go of its part and of the blocks it traded (the array
    /// comes home, and its calls then cross as any array's).
    fn gather(&self) -> Vec<Vec<u8>>;
    /// Entries `lo..hi` of the array (in its order), each rank's share of them as
    /// [`gather`](Self::gather) sends a part, in rank order; the parts stay where they are.
    fn window(&self, lo: u64, hi: u64) -> Vec<Vec<u8>>;
    /// How many entries have each index of dim `dim` (below `extent`), over all ranks.
    fn histogram(&self, dim: usize, extent: usize) -> Vec<u64>;
    /// How many entries each block of the grid of `bounds` over `dims` holds, over all ranks
    /// (blocks row-major, as [`Space::blocks`](crate::space::Space::blocks) numbers them).
    fn block_counts(&self, dims: &[usize], bounds: &[Vec<usize>]) -> Vec<u64>;
    /// Trades entries so that each rank holds the blocks of the grid its workers run
    /// (block `b`'s first grid coordinate `c` runs on worker `c * workers / parts`, of rank
    /// `worker / threads`): returns the key every rank keeps its blocks under and the
    /// driver's blocks (a [`Buckets`](crate::space::Buckets)).
    fn exchange(
        &self,
        dims: &[usize],
        bounds: &[Vec<usize>],
        workers: usize,
        threads: usize,
    ) -> (u64, Arc<dyn Any + Send + Sync>);
    /// The checksums of the indices (little-endian `u32`s) and of the values of every
    /// rank's part, each in rank order: those of the array's whole indices and values.
    fn digest(&self) -> [crate::checkpoint::Poly; 2];
    /// [`exchange`](Self::exchange) for an `iter_mut()` loop: the entries travel with their
    /// values, and each rank keeps its blocks' indices (the returned blocks are the
    /// driver's, a [`KeyBuckets`](crate::space::KeyBuckets)) and their values, which the
    /// loop's calls take and leave where they are.
    fn exchange_values(
        &self,
        shape: &[usize],
        dims: &[usize],
        bounds: &[Vec<usize>],
        workers: usize,
        threads: usize,
    ) -> (u64, Arc<dyn Any + Send + Sync>);
    /// An `iter_mut()` call changed the values where they are: [`gather`](Self::gather)
    /// brings them from there from now on (each rank its part's indices, then the
    /// positions and values it holds: what [`decode_values`] reads), and the
    /// parts' checksums no longer tell the values.
    fn values_moved(&self);
    /// Whether [`values_moved`](Self::values_moved) was said.
    fn moved(&self) -> bool;
    /// Whether the parts hold values in a codec, not numbers (a loop that only reads the
    /// array brings it home).
    fn coded(&self) -> bool;
    /// A new spread array of the same indices whose entry `i` holds the count this array's
    /// entry `i` holds of copies of `fill` (a number's bytes), coded as a `Vec` of numbers
    /// is: its operations and id.
    fn repeat(&self, fill: &[u8]) -> Result<(Arc<dyn SpreadOps>, u64), String>;
    /// A checkpoint of an array whose values [`moved`](Self::moved): every rank writes the
    /// values it holds where they are (the checksum of its part's indices, then their
    /// count, positions and values as [`decode_values`] reads them) to
    /// `path_of(rank, rank - 1)`, the driver its own to `home`; the driver's values' count
    /// and bytes, and the pieces the other ranks write (`region`: `[(0, count)]`).
    #[allow(clippy::type_complexity)]
    fn save_values(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        home: &mut dyn FnMut(&[u8]),
    ) -> Result<(u64, u64, Vec<crate::array::away::SavedAway>), String>;
    /// A resumed job: every rank reads its piece of `pieces` (the driver's, rank 0, among
    /// them) that [`save_values`](Self::save_values) wrote, and sends each value to the
    /// rank whose part holds its entry, so that the parts hold the checkpoint's values (as
    /// they did before any `iter_mut()` call moved them).
    fn restore_values(
        &self,
        pieces: &[crate::array::made::Piece],
        layout: Layout,
    ) -> Result<(), String>;
    /// Stops the job with `message` (parts that came home and do not decode).
    fn fail(&self, message: String) -> !;
}

/// How the values of a raw codec lie one after another: numbers of `size` bytes, or lists
/// of them (each its LEB128 length, then its elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Layout {
    Numbers(usize),
    Lists(usize),
}

impl Layout {
    /// `T`'s layout, when its values cross in a raw codec.
    pub(crate) fn of<T: 'static>() -> Option<Layout> {
        match super::le::wire_size::<T>() {
            Some(size) => Some(Layout::Numbers(size)),
            None => super::lists::element(std::any::TypeId::of::<T>())
                .map(|(_, size)| Layout::Lists(size)),
        }
    }

    /// Where each of the `n` values that `bytes` holds ends; an error when they are not
    /// `n` whole values.
    pub(crate) fn ends(self, bytes: &[u8], n: usize) -> Result<Vec<usize>, String> {
        let ends = match self {
            Layout::Numbers(size) if size > 0 && bytes.len() == n.saturating_mul(size) => {
                (1..=n).map(|i| i * size).collect()
            }
            Layout::Numbers(size) => {
                return Err(format!(
                    "{} bytes for {n} values of {size} bytes",
                    bytes.len()
                ));
            }
            Layout::Lists(size) => super::lists::ends(bytes, size)?,
        };
        if ends.len() != n {
            return Err(format!("{} values where {n} were counted", ends.len()));
        }
        Ok(ends)
    }
}

/// How the parts that came home become entries.
pub(crate) type Decode<T, const N: usize> =
    fn(Vec<Vec<u8>>, &[usize; N]) -> Result<(Vec<[u32; N]>, Vec<T>), String>;

/// The parts of a spread array: the runtime's operations on them, and how the array
/// decodes its parts when they come home (made where the element type is known).
pub(crate) struct Spread<T, const N: usize> {
    pub(crate) ops: Arc<dyn SpreadOps>,
    pub(crate) decode: Decode<T, N>,
}

impl<T, const N: usize> Clone for Spread<T, N> {
    fn clone(&self) -> Self {
        Spread {
            ops: self.ops.clone(),
            decode: self.decode,
        }
    }
}

/// The entries of parts as [`SpreadOps::gather`] gives them, one after the other; an error
/// names the part that does not decode.
pub(crate) fn decode_parts<T: 'static, const N: usize>(
    parts: Vec<Vec<u8>>,
    shape: &[usize; N],
) -> Result<(Vec<[u32; N]>, Vec<T>), String> {
    let size = super::le::wire_size::<T>().ok_or("a spread array of a type without bytes")?;
    let count = |p: &[u8]| {
        p.get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8")))
    };
    let total: u64 = parts.iter().filter_map(|p| count(p)).sum();
    let mut keys = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut values = Vec::with_capacity(keys.capacity());
    for (rank, p) in parts.into_iter().enumerate() {
        let n = count(&p).ok_or(format!("rank {rank}'s part of a spread array is empty"))?;
        let n = usize::try_from(n).map_err(|_| format!("rank {rank}'s part is too large"))?;
        let key_end = n
            .checked_mul(4 * N)
            .and_then(|k| k.checked_add(8))
            .filter(|&e| e <= p.len() && Some(p.len() - e) == n.checked_mul(size))
            .ok_or(format!(
                "rank {rank}'s part of a spread array, of {n} entries, holds {} bytes",
                p.len()
            ))?;
        super::le::get_keys(&p[8..key_end], shape, &mut keys).map_err(|e| {
            format!("entry {e} of rank {rank}'s part lies outside the shape {shape:?}")
        })?;
        let v = super::le::get_vec::<T>(&p[key_end..])
            .ok_or(format!("the values of rank {rank}'s part do not decode"))?;
        values.extend(v);
    }
    Ok((keys, values))
}

/// The checksums of `keys` (little-endian `u32`s, one index after the other) and of
/// `values` (little-endian), made 4096 entries at a time.
pub(crate) fn digest_entries<T: 'static, const N: usize>(
    keys: &[[u32; N]],
    values: &[T],
) -> [crate::checkpoint::Poly; 2] {
    use crate::checkpoint::Poly;
    let mut buf = Vec::new();
    let mut k = Poly::new();
    for chunk in keys.chunks(4096) {
        buf.clear();
        for &i in chunk.iter().flatten() {
            buf.extend_from_slice(&i.to_le_bytes());
        }
        k.update(&buf);
    }
    [k, super::le::digest(values)]
}

/// A part as [`SpreadOps::gather`] sends it: the count, the indices, the values.
pub(crate) fn encode_part<T: 'static, const N: usize>(keys: &[[u32; N]], values: &[T]) -> Vec<u8> {
    let size = super::le::wire_size::<T>().unwrap_or(0);
    let mut out = Vec::with_capacity(8 + keys.len() * (4 * N + size));
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    for k in keys {
        for &i in k {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
    super::le::put(values, &mut out);
    out
}

/// The entries of a spread array of values in a raw codec (numbers, or `Vec`s of them:
/// `itermut::raw`) as its parts come home: each rank's count and indices (the parts one
/// after the other are the array's entries in order), then `0` and the values of its
/// part's own entries, or `1`, the positions in the array of the entries whose values it
/// holds (`u32`s, after their count) and those values. Every entry's value must come once.
pub(crate) fn decode_values<T: Default + 'static, const N: usize>(
    parts: Vec<Vec<u8>>,
    shape: &[usize; N],
) -> std::result::Result<(Vec<[u32; N]>, Vec<T>), String> {
    let u64_at = |p: &[u8], at: usize| {
        p.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let mut keys = Vec::new();
    let mut tails = Vec::with_capacity(parts.len());
    for (rank, p) in parts.iter().enumerate() {
        let n = u64_at(p, 0).ok_or(format!("rank {rank}'s part of a spread array is empty"))?;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(4 * N))
            .and_then(|b| b.checked_add(8))
            .filter(|&e| e < p.len())
            .ok_or(format!(
                "rank {rank}'s part of {n} entries holds {} bytes",
                p.len()
            ))?;
        let start = keys.len();
        super::le::get_keys(&p[8..end], shape, &mut keys).map_err(|e| {
            format!("entry {e} of rank {rank}'s part lies outside the shape {shape:?}")
        })?;
        tails.push((start, keys.len() - start, end));
    }
    let nnz = keys.len();
    let mut values: Vec<T> = std::iter::repeat_with(T::default).take(nnz).collect();
    let mut seen = vec![false; nnz];
    for (rank, (p, (start, n, end))) in parts.iter().zip(tails).enumerate() {
        let mut rest = &p[end + 1..];
        match p[end] {
            0 => {
                decode_into(&mut rest, &mut values[start..start + n])
                    .map_err(|e| format!("the values of rank {rank}'s part do not decode: {e}"))?;
                seen[start..start + n].iter_mut().for_each(|s| *s = true);
            }
            1 => {
                let m = u64_at(rest, 0).ok_or(format!("rank {rank}'s values are cut short"))?;
                let ids_end = usize::try_from(m)
                    .ok()
                    .and_then(|m| m.checked_mul(4))
                    .and_then(|b| b.checked_add(8))
                    .filter(|&e| e <= rest.len())
                    .ok_or(format!(
                        "rank {rank} sends {m} values in {} bytes",
                        rest.len()
                    ))?;
                let (ids, mut vals) = rest.split_at(ids_end);
                let mut got: Vec<T> = std::iter::repeat_with(T::default)
                    .take((ids_end - 8) / 4)
                    .collect();
                decode_into(&mut vals, &mut got)
                    .map_err(|e| format!("the values rank {rank} holds do not decode: {e}"))?;
                for (c, v) in ids[8..].chunks_exact(4).zip(got) {
                    let i = u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize;
                    match seen.get_mut(i) {
                        Some(s) if !*s => *s = true,
                        _ => {
                            return Err(format!(
                                "rank {rank} sends a value of entry {i} of {nnz} twice or beyond"
                            ));
                        }
                    }
                    values[i] = v;
                }
                rest = vals;
            }
            other => return Err(format!("rank {rank}'s values of kind {other}")),
        }
        if !rest.is_empty() {
            return Err(format!("{} bytes after rank {rank}'s values", rest.len()));
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(format!("no rank sent the value of entry {i}"));
    }
    Ok((keys, values))
}

/// Values of a raw codec (numbers, or `Vec`s of them) from the front of `bytes` into `dst`.
fn decode_into<T: 'static>(bytes: &mut &[u8], dst: &mut [T]) -> Result<(), String> {
    match super::le::wire_size::<T>() {
        Some(_) => super::le::take(bytes, dst),
        None => super::lists::get(bytes, dst),
    }
}
