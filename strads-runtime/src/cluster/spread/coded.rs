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
    let (order, offsets, mut out) = by_block(keys, block_of, n_blocks, ranks);
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

/// A part's entries block by block (`order`, block `b`'s at `offsets[b]..offsets[b + 1]`),
/// and a message per rank that starts with the part's count of every block (`u64`s).
pub(super) fn by_block<const N: usize>(
    keys: &[[u32; N]],
    block_of: &dyn Fn(&[u32]) -> usize,
    n_blocks: usize,
    ranks: usize,
) -> (Vec<u32>, Vec<usize>, Vec<Vec<u8>>) {
    let blocks: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
    let (order, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
    drop(blocks);
    let mut header = Vec::with_capacity(8 * n_blocks);
    for b in 0..n_blocks {
        header.extend_from_slice(&((offsets[b + 1] - offsets[b]) as u64).to_le_bytes());
    }
    (order, offsets, vec![header; ranks])
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
    block_of: &dyn Fn(&[u32]) -> Option<usize>,
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
                if block_of(k) != Some(b) {
                    return Err(format!(
                        "rank {r} sent entry {k:?} as one of block {b}, outside it or the shape"
                    ));
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
    crate::array::lists::put_len(n, out);
    for _ in 0..n {
        out.extend_from_slice(fill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ranks' parts of a `[4, 8]` array in a 2 x 4 grid of blocks (block `b` is
    /// `(k[0] / 2) * 4 + k[1] / 2`, blocks below 4 owned by rank 0), each entry's value the
    /// bytes `[i, i]` of its place `i` in its part plus 10 per rank.
    fn messages() -> [Vec<Vec<u8>>; 2] {
        let block_of = |k: &[u32]| (k[0] / 2) as usize * 4 + (k[1] / 2) as usize;
        let owner = |b: usize| usize::from(b >= 4);
        let parts: [Vec<[u32; 2]>; 2] = [
            vec![[0, 1], [3, 7], [1, 0], [2, 2], [0, 5]],
            vec![[1, 1], [2, 6], [0, 0]],
        ];
        let out: Vec<Vec<Vec<u8>>> = parts
            .iter()
            .enumerate()
            .map(|(r, keys)| {
                let put = |ids: &[u32], out: &mut Vec<u8>| {
                    for &i in ids {
                        let v = 10 * r as u8 + i as u8;
                        out.extend_from_slice(&[v; 2][..1 + (i as usize % 2)]);
                    }
                    Ok(())
                };
                trade_out(keys, &put, &block_of, 8, &owner, 2).expect("numbers")
            })
            .collect();
        [
            vec![out[0][0].clone(), out[1][0].clone()],
            vec![out[0][1].clone(), out[1][1].clone()],
        ]
    }

    /// The grid's block of an entry of the `[4, 8]` array.
    fn block_of(k: &[u32]) -> Option<usize> {
        (k[0] < 4 && k[1] < 8).then(|| (k[0] / 2) as usize * 4 + (k[1] / 2) as usize)
    }

    fn keys_of(t: &Traded) -> (Vec<[u32; 2]>, Vec<u32>, Vec<usize>) {
        let b = t
            .blocks
            .clone()
            .downcast::<KeyBuckets<2>>()
            .expect("the loop's blocks");
        (b.keys.clone(), b.ids.clone(), b.offsets.clone())
    }

    #[test]
    fn a_trade_keeps_each_block_with_its_values_in_rank_order() {
        let [to_0, to_1] = messages();
        let t = trade_in::<2>(to_0, 8, &|b| b < 4, &block_of).expect("rank 0's blocks");
        // Block 0: rank 0's [0, 1] (place 0) and [1, 0] (place 2), then rank 1's [1, 1]
        // (place 0, position 5) and [0, 0] (place 2, position 7); block 2: [0, 5].
        let (keys, ids, offsets) = keys_of(&t);
        assert_eq!(keys, [[0, 1], [1, 0], [1, 1], [0, 0], [0, 5]]);
        assert_eq!(ids, [0, 2, 5, 7, 4]);
        assert_eq!(offsets, [0, 4, 4, 5, 5, 5, 5, 5, 5]);
        assert_eq!(t.ids, ids);
        // Values one or two bytes (odd places two): 0; 2; 10; 12; 4.
        assert_eq!(t.bytes, [0, 2, 10, 12, 4]);
        assert_eq!(t.starts, [0, 4, 4, 5, 5, 5, 5, 5, 5]);
        let t = trade_in::<2>(to_1, 8, &|b| b >= 4, &block_of).expect("rank 1's blocks");
        let (keys, ids, offsets) = keys_of(&t);
        assert_eq!(keys, [[2, 2], [3, 7], [2, 6]]);
        assert_eq!(ids, [3, 1, 6]);
        assert_eq!(offsets, [0, 0, 0, 0, 0, 0, 1, 1, 3]);
        assert_eq!(t.bytes, [3, 3, 1, 1, 11, 11]);
        assert_eq!(t.starts, [0, 0, 0, 0, 0, 0, 2, 2, 6]);
    }

    #[test]
    fn a_trade_message_that_does_not_hold_what_it_counts_is_refused() {
        let [to_0, _] = messages();
        let mut cut = to_0.clone();
        cut[1].pop();
        let mut long = to_0.clone();
        long[0].push(0);
        let mut more = to_0.clone();
        more[1][..8].copy_from_slice(&9u64.to_le_bytes());
        let mut huge = to_0.clone();
        // Block 0's value bytes of rank 0 (after 2 entries' indices and places).
        let at = 64 + 2 * 12;
        huge[0][at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut header = to_0.clone();
        header[0].truncate(20);
        for (bad, says) in [
            (cut, "rank 1's entries and values do not fit"),
            (long, "rank 0's entries and values do not fit"),
            (more, "rank 1's entries and values do not fit"),
            (huge, "rank 0's entries and values do not fit"),
            (header, "rank 0's counts are cut short"),
        ] {
            let e = trade_in::<2>(bad, 8, &|b| b < 4, &block_of)
                .err()
                .expect("refused");
            assert!(e.starts_with(says), "{e}");
        }
    }

    #[test]
    fn repeated_values_are_raw_vectors_of_the_fill() {
        let mut out = Vec::new();
        put_repeated(3, &7u16.to_le_bytes(), &mut out);
        assert_eq!(out, [3, 7, 0, 7, 0, 7, 0]);
        out.clear();
        put_repeated(200, &[1], &mut out);
        assert_eq!(&out[..2], [0xc8, 0x01]);
        assert_eq!(out.len(), 202);
    }
}
