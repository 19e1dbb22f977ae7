//! Parts of spread arrays whose values are not numbers ([`CodedPart`]: each entry's value in
//! its codec, as `itermut`'s raw codecs write a `Vec` of numbers), and the trade of entries
//! *with their values* that lets an `iter_mut()` call run where the parts are: each rank
//! sends the others the entries of the blocks their workers run, indices, positions and
//! values (`trade_out`), and keeps the indices of its own blocks as the loop's blocks and
//! their values coded ([`values::Held`](super::values::Held)) until the call takes them
//! (`trade_in`).

use std::any::Any;
use std::sync::Arc;

use crate::space::KeyBuckets;

/// How many of `keys` have each index of `dim` (below `extent`).
pub(super) fn histogram_of<const N: usize>(
    keys: &[[u32; N]],
    dim: usize,
    extent: usize,
) -> Result<Vec<u64>, String> {
    if dim >= N {
        return Err(format!("dim {dim} of an array of {N}"));
    }
    let mut h = vec![0u64; extent];
    for k in keys {
        *h.get_mut(k[dim] as usize)
            .ok_or_else(|| format!("index {} beyond {extent}", k[dim]))? += 1;
    }
    Ok(h)
}

/// How many of `keys` fall in each of `n_blocks` blocks.
pub(super) fn block_counts_of<const N: usize>(
    keys: &[[u32; N]],
    block_of: &dyn Fn(&[u32]) -> usize,
    n_blocks: usize,
) -> Vec<u64> {
    let mut c = vec![0u64; n_blocks];
    for k in keys {
        c[block_of(k)] += 1;
    }
    c
}

/// `keys` as `SpreadOps::gather` starts a part: the count, then the indices.
pub(super) fn encode_keys<const N: usize>(keys: &[[u32; N]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + keys.len() * 4 * N);
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    for &i in keys.iter().flatten() {
        out.extend_from_slice(&i.to_le_bytes());
    }
    out
}

/// Appends the values of entries `ids` (positions in the part), in order, in the array's
/// codec; an error when they have none.
pub(super) type PutValues<'a> = dyn Fn(&[u32], &mut Vec<u8>) -> Result<(), String> + 'a;

/// A part's entries, with their values, by destination rank (`owner(block)`): each message
/// holds this part's count of every block (`u64`s), then for each block the destination
/// owns, in block order, its entries' indices, their positions in this part (`u32`s), the
/// bytes of their values (`u64`) and the values.
pub(super) fn trade_out<const N: usize>(
    keys: &[[u32; N]],
    put: &PutValues<'_>,
    block_of: &dyn Fn(&[u32]) -> usize,
    n_blocks: usize,
    owner: &dyn Fn(usize) -> usize,
    ranks: usize,
) -> Result<Vec<Vec<u8>>, String> {
    let blocks: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
    let (order, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
    drop(blocks);
    let mut header = Vec::with_capacity(8 * n_blocks);
    for b in 0..n_blocks {
        header.extend_from_slice(&((offsets[b + 1] - offsets[b]) as u64).to_le_bytes());
    }
    let mut out = vec![header; ranks];
    for b in 0..n_blocks {
        let to = &mut out[owner(b)];
        let ids = &order[offsets[b]..offsets[b + 1]];
        for &i in ids {
            for &x in &keys[i as usize] {
                to.extend_from_slice(&x.to_le_bytes());
            }
        }
        for &i in ids {
            to.extend_from_slice(&i.to_le_bytes());
        }
        let at = to.len();
        to.extend_from_slice(&0u64.to_le_bytes());
        put(ids, to)?;
        let len = (to.len() - at - 8) as u64;
        to[at..at + 8].copy_from_slice(&len.to_le_bytes());
    }
    Ok(out)
}

/// What a rank keeps of a trade: its blocks' indices (a [`KeyBuckets`], boxed), and their
/// values one block after another in the array's codec, block `b`'s from `starts[b]`.
pub(crate) struct Traded {
    pub blocks: Arc<dyn Any + Send + Sync>,
    pub ids: Vec<u32>,
    pub bytes: Vec<u8>,
    pub starts: Vec<usize>,
    /// Bytes of indices and positions kept.
    pub index_bytes: usize,
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// This rank's blocks (`mine`) from every rank's [`trade_out`] message, each block's
/// entries in rank order (the array's order, since the parts are its consecutive ranges):
/// every count and length is checked against its message before anything is sized by it.
pub(super) fn trade_in<const N: usize>(
    messages: Vec<Vec<u8>>,
    n_blocks: usize,
    mine: &dyn Fn(usize) -> bool,
) -> Result<Traded, String> {
    let head = 8 * n_blocks;
    let ours: Vec<usize> = (0..n_blocks).filter(|&b| mine(b)).collect();
    let entry = 4 * N + 4;
    let mut lens = vec![0usize; n_blocks];
    let mut starts_of_rank = Vec::with_capacity(messages.len() + 1);
    let mut total = 0usize;
    // Per rank and held block: where its entries start in the message, and the bytes of
    // their values.
    let mut segments: Vec<Vec<(usize, usize, usize)>> = Vec::with_capacity(messages.len());
    for (r, m) in messages.iter().enumerate() {
        starts_of_rank.push(total);
        let wrong = || format!("rank {r}'s entries and values do not fit its message");
        let mut at = head;
        let mut segs = Vec::with_capacity(ours.len());
        for (b, len) in lens.iter_mut().enumerate() {
            let n = u64_at(m, 8 * b).ok_or_else(|| format!("rank {r}'s counts are cut short"))?;
            let n = usize::try_from(n).map_err(|_| wrong())?;
            *len = len.checked_add(n).ok_or_else(wrong)?;
            total = total.checked_add(n).ok_or_else(wrong)?;
        }
        for &b in &ours {
            let n = u64_at(m, 8 * b).unwrap_or(0) as usize;
            let values_at = n
                .checked_mul(entry)
                .and_then(|x| x.checked_add(at))
                .filter(|&e| e <= m.len())
                .ok_or_else(wrong)?;
            let v = u64_at(m, values_at).ok_or_else(wrong)?;
            let end = usize::try_from(v)
                .ok()
                .and_then(|v| v.checked_add(values_at + 8))
                .filter(|&e| e <= m.len())
                .ok_or_else(wrong)?;
            segs.push((at, n, end - values_at - 8));
            at = end;
        }
        if at != m.len() {
            return Err(wrong());
        }
        segments.push(segs);
    }
    starts_of_rank.push(total);
    if total > u32::MAX as usize {
        return Err(format!(
            "{total} entries: an `iter_mut()` loop runs where the parts are for at most {} \
             entries",
            u32::MAX
        ));
    }
    // Where each held block's entries and values go: the blocks in order, each block's
    // entries in rank order.
    let mut next = vec![0usize; n_blocks];
    let mut value_len = vec![0usize; n_blocks];
    for segs in &segments {
        for (&b, &(_, _, v)) in ours.iter().zip(segs) {
            value_len[b] += v;
        }
    }
    let (mut held, mut bytes_held) = (0usize, 0usize);
    let mut next_byte = vec![0usize; n_blocks];
    let mut offsets = Vec::with_capacity(n_blocks + 1);
    let mut starts = Vec::with_capacity(n_blocks + 1);
    for b in 0..n_blocks {
        offsets.push(held);
        starts.push(bytes_held);
        next[b] = held;
        next_byte[b] = bytes_held;
        if mine(b) {
            held += lens[b];
            bytes_held += value_len[b];
        }
    }
    offsets.push(held);
    starts.push(bytes_held);
    let mut keys = vec![[0u32; N]; held];
    let mut ids = vec![0u32; held];
    let mut bytes = vec![0u8; bytes_held];
    for (r, (m, segs)) in messages.into_iter().zip(&segments).enumerate() {
        for (&b, &(at, n, v)) in ours.iter().zip(segs) {
            let k_end = at + n * 4 * N;
            let i_end = k_end + n * 4;
            let to = next[b]..next[b] + n;
            for (k, chunk) in keys[to.clone()]
                .iter_mut()
                .zip(m[at..k_end].chunks_exact(4 * N))
            {
                for (x, c) in k.iter_mut().zip(chunk.chunks_exact(4)) {
                    *x = u32::from_le_bytes(c.try_into().expect("4 bytes"));
                }
            }
            for (id, c) in ids[to.clone()]
                .iter_mut()
                .zip(m[k_end..i_end].chunks_exact(4))
            {
                let i =
                    starts_of_rank[r] + u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize;
                if i >= starts_of_rank[r + 1] {
                    return Err(format!("rank {r} sent an entry beyond its part"));
                }
                *id = i as u32;
            }
            let vb = &m[i_end + 8..i_end + 8 + v];
            bytes[next_byte[b]..next_byte[b] + v].copy_from_slice(vb);
            next[b] = to.end;
            next_byte[b] += v;
        }
    }
    let index_bytes = held * (4 * N + 4);
    let kept_ids = ids.clone();
    Ok(Traded {
        blocks: Arc::new(KeyBuckets::from_parts(keys, ids, offsets)),
        ids: kept_ids,
        bytes,
        starts,
        index_bytes,
    })
}

/// `n` copies of `fill`'s bytes after `n` in LEB128, as the raw codec of a `Vec` of
/// numbers writes a value (`itermut::raw`).
pub(super) fn put_repeated(n: u64, fill: &[u8], out: &mut Vec<u8>) {
    let mut x = n;
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
    for _ in 0..n {
        out.extend_from_slice(fill);
    }
}
