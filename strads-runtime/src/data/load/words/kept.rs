//! What a text corpus made in place on a cluster job's ranks ends with, loaded
//! (`in_place`) or generated (`generate::words_like_arrays`): every rank keeps its tokens
//! and their sentences, numbered densely across the ranks, as its parts of two arrays
//! ([`keep_tokens`]), and the driver lists the others' parts as away ([`made`]).

use serde::{Deserialize, Serialize};

use super::WordArrays;
use crate::array::DistArray;
use crate::cluster::proto::Region;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, dense};
use crate::data::in_place::{Failure, Fault, other};
use crate::error::{Error, Result};

/// What each rank tells the others once it has kept its tokens.
#[derive(Serialize, Deserialize)]
struct Kept {
    tokens: u64,
    /// Distinct sentences of its tokens, and the first's and the last's numbers among all
    /// of the file's sentences (empty ones included).
    sentences: u64,
    first: u64,
    last: u64,
}

/// Driver: the corpus whose `tokens` and `sentence` (arrays `ids`) every rank kept
/// ([`keep_tokens`]), `at` the tokens before each rank.
pub(crate) fn made(
    s: &'static Session,
    ids: [u64; 2],
    at: &[u64],
    vocab: Vec<String>,
    counts: Vec<u64>,
    sentences: u64,
    raw_words: u64,
) -> Result<WordArrays> {
    let per_rank: Vec<u64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let bytes: Vec<u64> = per_rank.iter().map(|n| 8 * n).collect();
    spread::explain_made(
        ids[0],
        "a text's tokens and their sentences",
        "tokens",
        &per_rank,
        &bytes,
    );
    let away: Vec<(Region, usize)> = (1..at.len() - 1)
        .map(|r| (Region(vec![(at[r], at[r + 1])]), r))
        .collect();
    let tokens: DistArray<u32, 1> = dense::take(s, ids[0], away.clone()).map_err(Error::Rank)?;
    let sentence: DistArray<u32, 1> = dense::take(s, ids[1], away).map_err(Error::Rank)?;
    Ok(WordArrays {
        vocab,
        counts,
        tokens,
        sentence,
        sentences: sentences as usize,
        raw_words,
    })
}

/// A rank's tokens, replayed: calls its argument with each token and the number of its
/// sentence from the rank's `base` (below), in the file's order, every time it is called.
pub(crate) type Replay<'a> = &'a mut dyn FnMut(&mut dyn FnMut(u32, u64));

/// Every rank: keeps its tokens (`replay`, twice: to count them, then to write them
/// where they go), in the file's order, with the number of each one's sentence among all
/// of the file's sentences (`base` plus the number `replay` gives, empty sentences
/// included, wrapping: `base` may be `u64::MAX` when the first is number 0), as its part
/// of arrays `ids` (`tokens`, `sentence`), sentences numbered densely across the ranks;
/// the tokens before every rank (`P + 1` prefix sums) and the number of sentences. Every
/// rank calls it together.
pub(crate) fn keep_tokens(
    ctx: &mut Ctx,
    ids: [u64; 2],
    base: u64,
    replay: Replay<'_>,
) -> std::result::Result<(Vec<u64>, u64), Fault> {
    let (me, size) = (ctx.rank, ctx.size);
    let (mut n, mut distinct, mut ends) = (0u64, 0u64, None::<(u64, u64)>);
    replay(&mut |_, s| {
        if ends.is_none_or(|(_, last)| last != s) {
            distinct += 1;
        }
        ends = Some((ends.map_or(s, |(first, _)| first), s));
        n += 1;
    });
    let global = |s: u64| base.wrapping_add(s);
    let mine = Kept {
        tokens: n,
        sentences: distinct,
        first: ends.map_or(0, |(first, _)| global(first)),
        last: ends.map_or(0, |(_, last)| global(last)),
    };
    let kept: Vec<Kept> = ctx.gather_each(&mine, "tokens");
    // Sentences with tokens, numbered in order: one that spans ranks counts once.
    let (mut numbered, mut last) = (0u64, None);
    let mut first_number = 0;
    for (r, k) in kept.iter().enumerate() {
        let continued = k.tokens > 0 && last == Some(k.first);
        if r == me {
            first_number = numbered - u64::from(continued);
        }
        if k.tokens > 0 {
            numbered += k.sentences - u64::from(continued);
            last = Some(k.last);
        }
    }
    if numbered > u64::from(u32::MAX) {
        return Err(Fault {
            file: 0,
            line: 0,
            global: true,
            failure: Failure::Shape(format!(
                "{numbered} sentences: their numbers are u32, below 2^32"
            )),
        });
    }
    let mut at = vec![0u64];
    for k in &kept {
        at.push(at.last().unwrap_or(&0) + k.tokens);
    }
    let total = at[size];
    let from = at[me] as usize;
    let made = usize::try_from(total)
        .map_err(|_| format!("{total} tokens"))
        .and_then(|total| {
            let mut tokens: DistArray<u32, 1> = dense::zeroed(ids[0], [total])?;
            let mut sentence: DistArray<u32, 1> = dense::zeroed(ids[1], [total])?;
            let (t, s) = (tokens.as_mut_slice(), sentence.as_mut_slice());
            let (mut k, mut number, mut prev) = (from, first_number, None);
            replay(&mut |token, local| {
                if prev.is_some_and(|p| p != local) {
                    number += 1;
                }
                prev = Some(local);
                // The replay gives the tokens it counted: `n` of them, from `from`.
                if k < from + n as usize {
                    t[k] = token;
                    s[k] = number as u32;
                }
                k += 1;
            });
            dense::keep(tokens);
            dense::keep(sentence);
            Ok(())
        });
    made.map_err(other)?;
    Ok((at, numbered))
}
