//! Corpora drawn from LDA's own generative model ([`generated`], [`try_generated`]), shaped
//! like real text (Zipf-like word popularity, sparse topics, log-normal lengths).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::array::SparseArray;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};
use crate::error::Error;
use crate::error::Result;

use super::{Corpus, MAX_ID, MAX_TOKENS};

/// Word popularity in [`generated`] corpora: a Zipf-Mandelbrot law, the word of rank `r`
/// (from 1) having weight `(r + WORD_SHIFT)^-WORD_ZIPF`. Fitted by eye to AP's
/// rank-frequency curve (ranks 1, 10, 100, 1000, 10000 occur 2073, 1413, 432, 96 and 6
/// times: a flat head, since stop words were removed, and a tail near `r^-0.7`).
const WORD_ZIPF: f64 = 0.75;

/// See [`WORD_ZIPF`].
const WORD_SHIFT: f64 = 5.0;

/// Shape of the gamma weights that make each topic favour its own words (small: sparse,
/// distinct topics).
const TOPIC_SPARSITY: f64 = 0.1;

/// Dirichlet concentration of a document's topic mixture (small: few topics per
/// document).
const DOC_ALPHA: f64 = 0.1;

/// Standard deviation of the log of document lengths: AP's lengths (10th, 50th and 90th
/// percentiles 63, 176 and 350 tokens, mean 194) fit a log-normal law with about 0.6.
const LENGTH_SIGMA: f64 = 0.6;

/// A synthetic corpus drawn from LDA's generative model, shaped like a real one: `docs`
/// documents over `words` word ids, `topics` hidden topics, `avg_len` tokens per document
/// on average. The AP corpus is `generated(2246, 10473, topics, 194.0, seed)`.
///
/// - Word popularity is Zipf-skewed: the word of popularity rank `r` (from 1) has weight
///   `(r + 5)^-0.75`, a Zipf-Mandelbrot law fitted to AP's rank-frequency curve (a flat
///   head, as stop words were removed from AP). Ranks are assigned to ids by a random
///   permutation, so popular ids are scattered.
/// - Topic `k`'s word distribution is `phi_k(w) ∝ zipf(w) * g_kw` with
///   `g_kw ~ Gamma(0.1, 1)`: every topic keeps the overall skew but favours its own words.
/// - Document `d` mixes topics by `theta_d ~ Dirichlet(0.1)` and has a log-normal length
///   (mean `avg_len`, log standard deviation 0.6, as AP's), at least one token.
/// - Each token draws a topic from `theta_d`, then a word from `phi_topic`.
///
/// The counts of a document come in order of each word's first token. `vocab` is empty.
/// Deterministic for `seed` (xoshiro256++). Takes `O(topics * words)` memory for the topic
/// distributions. On a cluster job's driver the corpus is drawn in place: every rank draws
/// the sequence one process draws and keeps the entries of its range of the documents
/// (`counts` is a spread array, with the same entries).
///
/// # Panics
/// When [`try_generated`] fails: `docs > 0` and `words` or `topics` is 0, `avg_len` is
/// not finite and positive, `words` exceeds `2^32`, the expected tokens
/// (`docs * avg_len`) exceed half of [`MAX_TOKENS`], or the corpus would not fit in
/// memory.
///
/// ```
/// let c = strads_runtime::corpus::generated(100, 500, 4, 50.0, 1);
/// assert_eq!((c.docs, c.words), (100, 500));
/// assert!(c.counts.values().iter().all(|&n| n > 0));
/// let again = strads_runtime::corpus::generated(100, 500, 4, 50.0, 1);
/// assert_eq!(c.counts.values(), again.counts.values());
/// ```
pub fn generated(docs: usize, words: usize, topics: usize, avg_len: f64, seed: u64) -> Corpus {
    try_generated(docs, words, topics, avg_len, seed)
        .unwrap_or_else(|e| panic!("corpus::generated: {e}"))
}

/// [`generated`], with bad parameters as errors.
///
/// # Errors
/// [`Error::Setting`](crate::Error::Setting) naming the parameter when `avg_len` is not finite and positive,
/// `docs > 0` and `words` or `topics` is 0, `docs` or `words` exceeds `2^32`, or the
/// expected tokens `docs * avg_len` exceed half of [`MAX_TOKENS`] (the tokens drawn stay
/// below it); [`Error::Alloc`](crate::Error::Alloc) when the corpus would not fit in
/// memory, or on a cluster job's driver [`Error::Rank`](crate::Error::Rank) when a rank's
/// share would not fit in its memory, naming the rank.
///
/// ```
/// let e = strads_runtime::corpus::try_generated(10, 0, 5, 40.0, 1).unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "invalid setting words=\"0\": at least 1 word for 10 documents"
/// );
/// ```
pub fn try_generated(
    docs: usize,
    words: usize,
    topics: usize,
    avg_len: f64,
    seed: u64,
) -> Result<Corpus> {
    use crate::generate::bad_parameter;
    if !(avg_len.is_finite() && avg_len > 0.0) {
        return Err(bad_parameter(
            "avg_len",
            avg_len,
            "a finite number of tokens per document, above 0",
        ));
    }
    if docs > 0 && words == 0 {
        return Err(bad_parameter(
            "words",
            words,
            &format!("at least 1 word for {docs} documents"),
        ));
    }
    if docs > 0 && topics == 0 {
        return Err(bad_parameter(
            "topics",
            topics,
            &format!("at least 1 topic for {docs} documents"),
        ));
    }
    if docs > MAX_ID as usize + 1 {
        return Err(bad_parameter(
            "docs",
            docs,
            &format!("at most {} (document ids are u32)", MAX_ID + 1),
        ));
    }
    if words > MAX_ID as usize + 1 {
        return Err(bad_parameter(
            "words",
            words,
            &format!("at most {} (word ids are u32)", MAX_ID + 1),
        ));
    }
    let expected = docs as f64 * avg_len;
    if expected > (MAX_TOKENS / 2) as f64 {
        return Err(bad_parameter(
            "avg_len",
            avg_len,
            &format!(
                "at most {} tokens per document for {docs} documents (a corpus holds at most \
                 {MAX_TOKENS} tokens)",
                MAX_TOKENS / 2 / docs as u64
            ),
        ));
    }
    let p = Params {
        docs,
        words,
        topics,
        avg_len,
        seed,
    };
    if let Some(s) = crate::cluster::job::data_driver() {
        let counts = in_place(s, p)?;
        return Ok(Corpus {
            counts,
            vocab: Vec::new(),
            docs,
            words,
        });
    }
    p.check_memory(1)?;
    let counts = SparseArray::from_entries([docs, words], draw(&p, 0..docs))
        .expect("generated indices lie within the shape");
    Ok(Corpus {
        counts,
        vocab: Vec::new(),
        docs,
        words,
    })
}

/// A generated corpus's parameters, checked ([`try_generated`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Params {
    pub docs: usize,
    pub words: usize,
    pub topics: usize,
    pub avg_len: f64,
    pub seed: u64,
}

impl Params {
    /// Whether the memory the drawing takes is there: the topics' cumulative word
    /// distributions and the per-word tables, then the entries (at most one per token) of
    /// `1 / ranks` of the documents.
    pub(super) fn check_memory(&self, ranks: usize) -> Result<()> {
        let (docs, words, topics) = (self.docs, self.words, self.topics);
        let expected = docs as f64 * self.avg_len / ranks.max(1) as f64;
        let bytes = (topics as u64)
            .checked_mul(words as u64)
            .and_then(|n| n.checked_mul(8))
            .and_then(|b| b.checked_add((words as u64).checked_mul(24)?))
            .and_then(|b| b.checked_add((expected as u64).checked_mul(24)?));
        let part = if ranks > 1 {
            format!("1/{ranks} of ")
        } else {
            String::new()
        };
        crate::generate::check_memory(
            &format!(
                "{part}a generated corpus of {docs} documents, {words} words and {topics} topics"
            ),
            bytes,
        )
    }
}

/// The entries of the documents `keep` of the corpus `p` describes, in order: the whole
/// sequence is drawn (so every range gets the documents one process draws), the entries of
/// the documents outside `keep` dropped as they are drawn.
pub(super) fn draw(p: &Params, keep: std::ops::Range<usize>) -> Vec<([usize; 2], u32)> {
    let (docs, words, topics) = (p.docs, p.words, p.topics);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(p.seed);
    let mut entries = Vec::new();
    if docs == 0 {
        return entries;
    }
    // Zipf popularity of each word id, through a random permutation of ranks.
    let mut rank: Vec<u32> = (0..words as u32).collect();
    rank.shuffle(&mut rng);
    let popularity: Vec<f64> = rank
        .iter()
        .map(|&r| (f64::from(r) + 1.0 + WORD_SHIFT).powf(-WORD_ZIPF))
        .collect();
    drop(rank);
    // Cumulative word distribution of every topic.
    let favour = Gamma::new(TOPIC_SPARSITY, 1.0).expect("valid gamma parameters");
    let phi: Vec<Vec<f64>> = (0..topics)
        .map(|_| {
            let mut acc = 0.0;
            popularity
                .iter()
                .map(|&p| {
                    acc += p * favour.sample(&mut rng);
                    acc
                })
                .collect()
        })
        .collect();
    drop(popularity);
    let mixture = Gamma::new(DOC_ALPHA, 1.0).expect("valid gamma parameters");
    let mu = p.avg_len.ln() - LENGTH_SIGMA * LENGTH_SIGMA / 2.0;
    let length = LogNormal::new(mu, LENGTH_SIGMA).expect("valid log-normal parameters");
    let mut theta = vec![0.0f64; topics];
    let mut count = vec![0u32; words];
    let mut order = Vec::new();
    for d in 0..keep.end.min(docs) {
        let mut acc = 0.0;
        for t in theta.iter_mut() {
            acc += mixture.sample(&mut rng);
            *t = acc;
        }
        let n = (length.sample(&mut rng).round() as usize).max(1);
        for _ in 0..n {
            let k = pick(&theta, &mut rng);
            let w = pick(&phi[k], &mut rng);
            if count[w] == 0 {
                order.push(w);
            }
            count[w] += 1;
        }
        for &w in &order {
            if d >= keep.start {
                entries.push(([d, w], count[w]));
            }
            count[w] = 0;
        }
        order.clear();
    }
    entries
}

/// Draws an index from the distribution whose cumulative (unnormalised) weights are
/// `cumulative`; uniform when every weight is 0.
fn pick(cumulative: &[f64], rng: &mut Xoshiro256PlusPlus) -> usize {
    let total = cumulative[cumulative.len() - 1];
    if total.is_nan() || total <= 0.0 {
        return rng.random_range(0..cumulative.len());
    }
    let u = rng.random::<f64>() * total;
    cumulative
        .partition_point(|&c| c <= u)
        .min(cumulative.len() - 1)
}

/// The arguments of a corpus generated in place: the counts' id and the parameters.
type DrawArgs = (u64, Params);

/// Driver: the corpus of `p` drawn in place; its counts' shape is `[p.docs, p.words]`.
fn in_place(s: &'static Session, p: Params) -> Result<SparseArray<u32, 2>> {
    let id = crate::array::fresh_id();
    let shape = [p.docs, p.words];
    let args: DrawArgs = (id, p);
    let answers = spread::run(s, DRAW.name, spread::postcard_args(&args)).map_err(Error::Rank)?;
    let facts: Vec<Facts> = spread::decode_each(&answers).map_err(Error::Rank)?;
    spread::made(s, id, shape, &facts).map_err(Error::Rank)
}

#[linkme::distributed_slice(DATA_OPS)]
static DRAW: DataOp = DataOp {
    name: "strads::generated_corpus",
    run: draw_part,
};

/// One rank's part of a generated corpus: every rank draws the whole sequence one process
/// draws and keeps the entries of its range of the documents.
fn draw_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (id, p): DrawArgs =
        postcard::from_bytes(args).map_err(|e| format!("the corpus's arguments ({e})"))?;
    let fits = p.check_memory(ctx.size);
    ctx.agree(fits.map_err(|e| e.to_string()))?;
    let docs = crate::data::generate::in_place_range(p.docs, ctx.rank, ctx.size);
    let (keys, values): (Vec<[u32; 2]>, Vec<u32>) = draw(&p, docs)
        .into_iter()
        .map(|([d, w], n)| ([d as u32, w as u32], n))
        .unzip();
    let facts = spread::keep_new(id, keys, values);
    Ok(spread::postcard_args(&facts))
}
