//! A generated text corpus shaped like text8's prefix: Zipf-distributed words, with topics
//! that give words shared contexts (so that embeddings learn something).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use std::path::Path;

use super::{bad_parameter, check_memory, in_place_range};
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, dense};
use crate::data::in_place::Fault;
use crate::data::load::{keep_tokens, vocabulary, words_made_in_place};
use crate::error::Result;
use crate::load::{WordArrays, Words};

/// Parameters of [`words_like`]. The default is the shape of text8's first 1.17 M words
/// (`../shared/data/text8-prefix`): about 60 000 distinct words, Zipf-distributed.
#[derive(Clone, Debug)]
pub struct WordsConfig {
    /// Words in the corpus.
    pub words: usize,
    /// Distinct words that may occur.
    pub types: usize,
    /// Topics: a passage draws half its words from one topic's words.
    pub topics: usize,
    /// Words per passage (of one topic).
    pub passage: usize,
    /// Words per sentence (windows do not cross sentences).
    pub sentence: usize,
    /// Only words seen this often make the vocabulary.
    pub min_count: u64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for WordsConfig {
    fn default() -> Self {
        WordsConfig {
            words: 1_170_000,
            types: 60_000,
            topics: 64,
            passage: 40,
            sentence: 10_000,
            min_count: 5,
            seed: 1,
        }
    }
}

/// Index of the first entry of the increasing `cdf` above `u`.
fn draw(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u).min(cdf.len() - 1)
}

/// A corpus of `config.words` words named `w0`, `w1`, ... (`w0` the most frequent in
/// expectation): every word is drawn, with probability 1/2, from a Zipf law (exponent 1)
/// over all the words, and otherwise from the same law over the words of the passage's
/// topic (`w{t}`, `w{t + topics}`, ...). Then loaded as [`crate::load::words`] loads a
/// file: the words seen `min_count` times, most frequent first.
///
/// # Errors
/// [`crate::Error::Setting`] for a zero size or more than 2^32 types; [`crate::Error::Alloc`]
/// when the corpus does not fit in memory.
pub fn words_like(config: &WordsConfig) -> Result<Words> {
    let c = config;
    check(c)?;
    check_memory("a generated corpus", (c.words as u64).checked_mul(8))?;
    let raw: Vec<u32> = Draws::new(c).collect();
    let mut counts = vec![0u64; c.types];
    for &w in &raw {
        counts[w as usize] += 1;
    }
    let starts: Vec<usize> = (0..raw.len())
        .step_by(c.sentence)
        .chain([raw.len()])
        .collect();
    crate::data::load::frequent(&raw, &counts, &starts, c.min_count, |w| format!("w{w}"))
        .ok_or_else(|| none_frequent(c))
}

/// [`words_like`]'s corpus with its tokens and their sentences as arrays
/// ([`WordArrays`], as [`Words::into_arrays`] makes them). On a cluster job's driver the
/// corpus is drawn in place: every rank draws the whole sequence one process draws to
/// count the words (which makes the vocabulary), then the sequence up to the end of its
/// range of the words, twice, to keep the tokens of its range, so no process holds the
/// corpus.
///
/// # Errors
/// Those of [`words_like`] (memory: for a rank's share, on a cluster); [`crate::Error::Shape`]
/// for `2^32` sentences or more; on a cluster job's driver [`crate::Error::Rank`] when a
/// rank fails.
///
/// ```
/// use strads_runtime::generate::{WordsConfig, words_like_arrays};
/// let w = words_like_arrays(&WordsConfig { words: 5_000, ..WordsConfig::default() })?;
/// assert_eq!(w.raw_words, 5_000);
/// assert_eq!(w.tokens.len(), w.sentence.len());
/// # Ok::<(), strads_runtime::Error>(())
/// ```
pub fn words_like_arrays(config: &WordsConfig) -> Result<WordArrays> {
    check(config)?;
    if let Some(s) = crate::cluster::job::data_driver() {
        return in_place(s, config);
    }
    words_like(config)?.into_arrays()
}

/// The error when no word is drawn `min_count` times.
fn none_frequent(c: &WordsConfig) -> crate::Error {
    bad_parameter(
        "min_count",
        c.min_count,
        "at most the count of the most frequent word generated",
    )
}

/// Checks the sizes of `c`.
fn check(c: &WordsConfig) -> Result<()> {
    for (name, v) in [
        ("words", c.words),
        ("types", c.types),
        ("topics", c.topics),
        ("passage", c.passage),
        ("sentence", c.sentence),
    ] {
        if v == 0 {
            return Err(bad_parameter(name, v, "at least 1"));
        }
    }
    if c.types > u32::MAX as usize {
        return Err(bad_parameter("types", c.types, "at most 2^32 - 1"));
    }
    Ok(())
}

/// The words of [`words_like`]'s corpus, drawn in order: one process's sequence.
struct Draws {
    all: Vec<f64>,
    per_topic: Vec<f64>,
    topics: usize,
    types: usize,
    passage: usize,
    rng: Xoshiro256PlusPlus,
    topic: usize,
    k: usize,
    n: usize,
}

impl Draws {
    fn new(c: &WordsConfig) -> Draws {
        let zipf = |n: usize| -> Vec<f64> {
            let mut acc = 0.0;
            let mut cdf: Vec<f64> = (1..=n)
                .map(|r| {
                    acc += 1.0 / r as f64;
                    acc
                })
                .collect();
            cdf.iter_mut().for_each(|x| *x /= acc);
            cdf
        };
        let topics = c.topics.min(c.types);
        Draws {
            all: zipf(c.types),
            per_topic: zipf(c.types.div_ceil(topics)),
            topics,
            types: c.types,
            passage: c.passage,
            rng: Xoshiro256PlusPlus::seed_from_u64(c.seed),
            topic: 0,
            k: 0,
            n: c.words,
        }
    }
}

impl Iterator for Draws {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.k == self.n {
            return None;
        }
        if self.k % self.passage == 0 {
            self.topic = self.rng.random_range(0..self.topics);
        }
        self.k += 1;
        let w = if self.rng.random::<bool>() {
            draw(&self.all, self.rng.random())
        } else {
            // The topic's words are `topic`, `topic + topics`, ...: below `types`.
            let r = draw(&self.per_topic, self.rng.random());
            let w = self.topic + r * self.topics;
            if w < self.types { w } else { self.topic }
        };
        Some(w as u32)
    }
}

/// Each word's count in the corpus of `c`.
fn counts(c: &WordsConfig) -> Vec<u64> {
    let mut counts = vec![0u64; c.types];
    for w in Draws::new(c) {
        counts[w as usize] += 1;
    }
    counts
}

/// What the driver asks every rank to draw: the arrays' ids and the parameters (words,
/// types, topics, passage, sentence, min_count, seed).
type DrawArgs = ([u64; 2], [u64; 7]);

/// Driver: the corpus of `c` drawn in place (the driver, as rank 0, counts the words and
/// answers with the vocabulary).
fn in_place(s: &'static Session, c: &WordsConfig) -> Result<WordArrays> {
    let share = c.words / s.size() + 1;
    check_memory("a generated corpus", (share as u64).checked_mul(8))?;
    let ids: [u64; 2] = std::array::from_fn(|_| crate::array::fresh_id());
    let params = [
        c.words as u64,
        c.types as u64,
        c.topics as u64,
        c.passage as u64,
        c.sentence as u64,
        c.min_count,
        c.seed,
    ];
    let args: DrawArgs = (ids, params);
    let answers: Vec<Drawn> = dense::answers(s, DRAW.name, spread::postcard_args(&args), &ids)?;
    let mut first = None;
    for answer in answers {
        match answer {
            Drawn::Kept(at, sentences, vocab) => {
                first.get_or_insert((at, sentences, vocab));
            }
            // Every rank counts the same words: none answers with tokens.
            Drawn::NoneFrequent => return Err(none_frequent(c)),
            Drawn::Fault(f) => return Err(abandon(ids, f.error(Path::new("words_like")))),
        }
    }
    let (at, sentences, vocab) = first.expect("the driver answers too");
    let (vocab, counts) = vocab.into_iter().map(|(w, n)| (format!("w{w}"), n)).unzip();
    words_made_in_place(s, ids, &at, vocab, counts, sentences, c.words as u64)
        .map_err(|e| abandon(ids, e))
}

/// Every rank lets go of what it made of the arrays `ids`, and the driver gives `e`.
fn abandon(ids: [u64; 2], e: crate::Error) -> crate::Error {
    crate::cluster::spread::dense::abandon(ids);
    e
}

/// A rank's answer.
#[derive(serde::Serialize, serde::Deserialize)]
enum Drawn {
    /// The tokens before every rank, the number of sentences, and (rank 0's answer; empty
    /// from the others) the vocabulary: each word's id among the types and its count.
    Kept(Vec<u64>, u64, Vec<(u32, u64)>),
    /// No word is drawn `min_count` times (every rank counts alike).
    NoneFrequent,
    Fault(Fault),
}

#[linkme::distributed_slice(DATA_OPS)]
static DRAW: DataOp = DataOp {
    name: "strads::words_like",
    run: draw_part,
};

/// One rank's part of a generated corpus: every rank draws the whole sequence to count
/// it, then the sequence up to the end of its range twice (to count its tokens, then to
/// write them), and keeps its tokens.
fn draw_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (ids, p): DrawArgs =
        postcard::from_bytes(args).map_err(|e| format!("words_like's arguments ({e})"))?;
    let size = |v: u64| usize::try_from(v).map_err(|_| format!("a size of {v}"));
    let c = WordsConfig {
        words: size(p[0])?,
        types: size(p[1])?,
        topics: size(p[2])?,
        passage: size(p[3])?,
        sentence: size(p[4])?,
        min_count: p[5],
        seed: p[6],
    };
    check(&c).map_err(|e| e.to_string())?;
    let counts = counts(&c);
    let order = vocabulary(&counts, c.min_count);
    if order.is_empty() {
        return Ok(spread::postcard_args(&Drawn::NoneFrequent));
    }
    let mut new_id = vec![u32::MAX; c.types];
    for (new, &old) in order.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    let vocab: Vec<(u32, u64)> = if ctx.rank == 0 {
        order.iter().map(|&w| (w, counts[w as usize])).collect()
    } else {
        Vec::new()
    };
    drop((order, counts));
    let keep = in_place_range(c.words, ctx.rank, ctx.size);
    // Sentences are the draws' runs of `sentence` words: numbered from this rank's first.
    // The tokens are drawn again for each pass over them (no copy of them is kept).
    let base = (keep.start / c.sentence) as u64;
    let mut replay = |each: &mut dyn FnMut(u32, u64)| {
        for (k, w) in Draws::new(&c).enumerate().take(keep.end).skip(keep.start) {
            let id = new_id[w as usize];
            if id != u32::MAX {
                each(id, (k / c.sentence) as u64 - base);
            }
        }
    };
    let drawn = match keep_tokens(ctx, ids, base, &mut replay) {
        Ok((at, sentences)) => Drawn::Kept(at, sentences, vocab),
        Err(fault) => Drawn::Fault(fault),
    };
    Ok(spread::postcard_args(&drawn))
}
