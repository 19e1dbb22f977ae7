//! Generated data sets made in place on a cluster job's ranks: each rank draws the same
//! sequence as one process would, deduplicates the pairs whose hash falls to it, learns the
//! others' first occurrences from one small message per rank and chunk, and keeps its
//! range of the result. One process's array is the ranks' parts one after the other: the
//! same entries in the same order, so every plan and every bit stay those of threads.

use crate::array::SparseArray;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};
use crate::error::{Error, Result};

use super::Dedupe;
use super::ratings::{LowRankConfig, bytes_needed, draw};

/// The arguments of a generated rating set made in place: the array's id, the config's
/// fields and the number of ratings.
type RatingArgs = (u64, usize, usize, usize, usize, f32, f64, u64, usize);

/// Driver: `cfg`'s `target` ratings made in place on the job's ranks.
pub(super) fn ratings(
    s: &'static Session,
    cfg: &LowRankConfig,
    target: usize,
) -> Result<SparseArray<f32, 2>> {
    let id = crate::array::fresh_id();
    let c = cfg;
    let args: RatingArgs = (
        id,
        c.users,
        c.items,
        c.ratings,
        c.rank,
        c.noise,
        c.zipf_exponent,
        c.seed,
        target,
    );
    let answers =
        spread::run(s, RATINGS.name, spread::postcard_args(&args)).map_err(Error::Rank)?;
    let facts: Vec<Facts> = spread::decode_each(&answers).map_err(Error::Rank)?;
    spread::made(s, id, [cfg.users, cfg.items], &facts).map_err(Error::Rank)
}

/// Positions `[lo, hi)` of `n` entries that rank `rank` of `size` keeps.
pub(crate) fn range(n: usize, rank: usize, size: usize) -> std::ops::Range<usize> {
    let at = |r: usize| (n as u128 * r as u128 / size.max(1) as u128) as usize;
    at(rank)..at(rank + 1)
}

/// The rank that deduplicates pair `key`: a hash of its own, apart from `Dedupe`'s.
fn dedupe_rank(key: u64, size: usize) -> usize {
    ((key.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32) % size as u64) as usize
}

#[linkme::distributed_slice(DATA_OPS)]
static RATINGS: DataOp = DataOp {
    name: "strads::low_rank_ratings",
    run: ratings_part,
};

/// One rank's part of a generated rating set.
fn ratings_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (id, users, items, ratings, rank, noise, zipf_exponent, seed, target): RatingArgs =
        postcard::from_bytes(args).map_err(|e| format!("ratings' arguments ({e})"))?;
    let cfg = LowRankConfig {
        users,
        items,
        ratings,
        rank,
        noise,
        zipf_exponent,
        seed,
    };
    let (me, size) = (ctx.rank, ctx.size);
    let fits = super::check_memory(
        &format!("a {size}th of {users} x {items} generated ratings ({target} ratings)"),
        bytes_needed(&cfg, target, size),
    );
    ctx.agree(fits.map_err(|e| e.to_string()))?;
    let mut dedupe = Dedupe::new(target / size + 1);
    let (mut pos, mut mine) = (Vec::new(), Vec::new());
    let entries = draw(&cfg, target, range(target, me, size), |chunk| {
        pos.clear();
        mine.clear();
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
    });
    drop(dedupe);
    let (keys, values): (Vec<[u32; 2]>, Vec<f32>) = entries
        .into_iter()
        .map(|([u, i], v)| ([u as u32, i as u32], v))
        .unzip();
    let part = spread::part(keys, values);
    let facts = part.facts();
    spread::keep(id, part);
    Ok(spread::postcard_args(&facts))
}
