//! A generated text corpus shaped like text8's prefix: Zipf-distributed words, with topics
//! that give words shared contexts (so that embeddings learn something).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{bad_parameter, check_memory};
use crate::error::Result;
use crate::load::Words;

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
    check_memory("a generated corpus", (c.words as u64).checked_mul(8))?;
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
    let all = zipf(c.types);
    let per_topic = zipf(c.types.div_ceil(topics));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(c.seed);
    let mut raw = Vec::with_capacity(c.words);
    let mut topic = 0;
    for k in 0..c.words {
        if k % c.passage == 0 {
            topic = rng.random_range(0..topics);
        }
        let w = if rng.random::<bool>() {
            draw(&all, rng.random())
        } else {
            // The topic's words are `topic`, `topic + topics`, ...: below `types`.
            let r = draw(&per_topic, rng.random());
            let w = topic + r * topics;
            if w < c.types { w } else { topic }
        };
        raw.push(w as u32);
    }
    let mut counts = vec![0u64; c.types];
    for &w in &raw {
        counts[w as usize] += 1;
    }
    let starts: Vec<usize> = (0..raw.len())
        .step_by(c.sentence)
        .chain([raw.len()])
        .collect();
    crate::data::load::frequent(&raw, &counts, &starts, c.min_count, |w| format!("w{w}"))
        .ok_or_else(|| {
            bad_parameter(
                "min_count",
                c.min_count,
                "at most the count of the most frequent word generated",
            )
        })
}
