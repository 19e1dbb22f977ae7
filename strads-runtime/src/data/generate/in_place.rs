//! Generated data sets made in place on a cluster job's ranks: each rank draws the same
//! sequence as one process would, deduplicates the pairs whose hash falls to it, learns the
//! others' first occurrences from one small message per rank and chunk, and keeps its
//! range of the result. One process's array is the ranks' parts one after the other: the
//! same entries in the same order, so every plan and every bit stay those of threads.

use crate::cluster::spread::Ctx;

use super::Dedupe;

/// Positions `[lo, hi)` of `n` entries that rank `rank` of `size` keeps.
pub(crate) fn range(n: usize, rank: usize, size: usize) -> std::ops::Range<usize> {
    let at = |r: usize| (n as u128 * r as u128 / size.max(1) as u128) as usize;
    at(rank)..at(rank + 1)
}

/// The rank that deduplicates pair `key`: a hash of its own, apart from `Dedupe`'s.
fn dedupe_rank(key: u64, size: usize) -> usize {
    ((key.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32) % size as u64) as usize
}

/// Which pairs of `chunk` occur for the first time, on every rank alike: this rank
/// answers for the pairs that hash to it (`dedupe`), the others for theirs, one bit a pair.
pub(super) fn first_occurrences(ctx: &mut Ctx, dedupe: &mut Dedupe, chunk: &[u64]) -> Vec<bool> {
    let (me, size) = (ctx.rank, ctx.size);
    let (mut pos, mut mine) = (Vec::new(), Vec::new());
    for (p, &key) in chunk.iter().enumerate() {
        if dedupe_rank(key, size) == me {
            pos.push(p);
            mine.push(key);
        }
    }
    let mut bits = vec![0u8; chunk.len().div_ceil(8)];
    for (&p, &f) in pos.iter().zip(dedupe.first_occurrences(&mine)) {
        if f {
            bits[p / 8] |= 1 << (p % 8);
        }
    }
    let all = ctx.all_gather(bits);
    (0..chunk.len())
        .map(|p| {
            all.iter()
                .any(|b| b.get(p / 8).is_some_and(|x| x & (1 << (p % 8)) != 0))
        })
        .collect()
}
