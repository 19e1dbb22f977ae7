//! Text corpora as bags of words, for topic models: loading Blei's LDA-C format
//! ([`lda_c`]) and generating a corpus from LDA's own generative model ([`generated`]).
//!
//! A [`Corpus`] holds one count per (document, word) pair that occurs: a
//! `[docs, words]` [`SparseArray`] whose entries a `#[parallel_for]` loop iterates.
//!
//! ```
//! use strads_runtime::corpus;
//! let c = corpus::generated(50, 300, 5, 40.0, 7);
//! assert_eq!(c.counts.shape(), [50, 300]);
//! assert_eq!((c.docs, c.words), (50, 300));
//! assert!(c.tokens() > 1000);
//! ```

use std::borrow::Cow;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma, LogNormal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::SparseArray;
use crate::error::{Error, Result};
use crate::text::{
    ID_FLOOR, IDS_PER_ENTRY, IntError, for_each_line, id_limit, parse_uint, quote, trim,
};

/// What the LDA-C format looks like, for error messages.
const LDA_C_FORMAT: &str = "LDA-C `N id:count id:count ...`: N distinct 0-based integer word ids, \
     each with a positive integer count";

/// What a vocabulary file looks like, for error messages.
const VOCAB_FORMAT: &str = "one word per line, line k naming word id k - 1";

/// Largest word id and count a file may hold (ids index a `SparseArray`, stored as `u32`).
const MAX_ID: u64 = u32::MAX as u64;

/// The most tokens (the sum of all counts) a corpus may hold: topic models keep per-topic
/// token counts in `i32`, which must not overflow.
pub const MAX_TOKENS: u64 = i32::MAX as u64;

/// The tokens a loaded corpus may hold above [`TOKENS_FLOOR`]: this many per `id:count`
/// pair on average, so that a short file cannot ask a sampler for billions of tokens.
pub const TOKENS_PER_PAIR: u64 = 1024;

/// The tokens any loaded corpus may hold, whatever its number of pairs (16 777 216).
pub const TOKENS_FLOOR: u64 = 1 << 24;

/// A corpus as a bag of words per document.
///
/// `counts[[d, w]]` is how often word `w` occurs in document `d`, stored only when
/// positive, one entry per distinct word of a document (in the file's order for a loaded
/// corpus). `vocab[w]` is the text of word `w`, when known (otherwise `vocab` is empty);
/// `docs` and `words` are the two dims of `counts`.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// `(doc, word) -> count`, shape `[docs, words]`, every count positive.
    pub counts: SparseArray<u32, 2>,
    /// The text of every word id, or empty when unknown.
    pub vocab: Vec<String>,
    /// Number of documents (including documents without words).
    pub docs: usize,
    /// Number of words: the vocabulary's size, else the largest word id plus one.
    pub words: usize,
}

impl Corpus {
    /// Number of tokens: the sum of all counts.
    pub fn tokens(&self) -> u64 {
        self.counts.values().iter().map(|&c| u64::from(c)).sum()
    }

    /// The text of word `w`: its vocabulary entry, or `#w` when there is no vocabulary.
    ///
    /// ```
    /// let c = strads_runtime::corpus::generated(2, 10, 2, 5.0, 1);
    /// assert_eq!(c.word(3), "#3");
    /// ```
    pub fn word(&self, w: usize) -> Cow<'_, str> {
        match self.vocab.get(w) {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(format!("#{w}")),
        }
    }
}

/// Loads a corpus in the LDA-C format of Blei's `lda-c` (as in the AP sample data): one
/// document per line, `N id:count id:count ...`, where `N` is the number of distinct words
/// of the document, ids are 0-based integers and counts positive integers, separated by
/// spaces or tabs. A line `0` is a document without words.
///
/// With `vocab` (a file of one word per line, line `k` naming word id `k - 1`), every id
/// must lie within the vocabulary and `words` is its size; without it, `words` is the
/// largest id plus one and `vocab` stays empty.
///
/// Blank lines are skipped (documents are numbered by the lines that are not blank); a
/// UTF-8 byte order mark and `\r\n` endings are accepted. Entries keep the file's order.
///
/// Limits, so that a short or broken file cannot make a program allocate or run without
/// bound: a line holds at most [`MAX_LINE`](crate::load::MAX_LINE) bytes; without a
/// vocabulary, the largest word id (which sizes the model) may be at most
/// [`ID_FLOOR`] or [`IDS_PER_ENTRY`]
/// times the number of pairs, whichever is larger; the tokens (the sum of the counts)
/// up to any line may be at most [`TOKENS_FLOOR`] or [`TOKENS_PER_PAIR`] times the pairs
/// so far, whichever is larger, and never more than [`MAX_TOKENS`]; and the corpus must
/// hold at least one token.
///
/// # Errors
/// [`Error::Io`] when a file cannot be read; [`Error::Parse`], naming the file, the line,
/// the offending field and the expected format, when `N` is not a non-negative integer or
/// differs from the number of pairs, a pair is not `id:count`, an id or count is not an
/// integer, a count is 0, an id appears twice in a line, an id lies beyond the
/// vocabulary, a line, id or the tokens exceed the limits above, the data file has no
/// documents or no tokens, or a vocabulary line is empty (a blank last line included) or
/// not UTF-8. Nothing is returned half-built.
///
/// ```
/// # let dir = std::env::temp_dir();
/// # let (data, vocab) = (
/// #     dir.join(format!("strads-doc-ldac-{}.dat", std::process::id())),
/// #     dir.join(format!("strads-doc-ldac-{}.txt", std::process::id())),
/// # );
/// std::fs::write(&data, "2 0:3 2:1\n1 1:2\n")?;
/// std::fs::write(&vocab, "apple\nbanana\ncherry\n")?;
/// let c = strads_runtime::corpus::lda_c(&data, Some(vocab.as_path()))?;
/// assert_eq!((c.docs, c.words, c.tokens()), (2, 3, 6));
/// assert_eq!(c.counts.entry(1), ([0, 2], &1));
/// assert_eq!(c.word(1), "banana");
/// # std::fs::remove_file(&data)?;
/// # std::fs::remove_file(&vocab)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lda_c(path: impl AsRef<Path>, vocab: Option<&Path>) -> Result<Corpus> {
    let path = path.as_ref();
    let vocab_words = match vocab {
        Some(v) => Some((vocabulary(v)?, v)),
        None => None,
    };
    let mut entries = Vec::new();
    let mut docs = 0usize;
    let mut max_id: Option<(u64, usize)> = None;
    let mut tokens = 0u64;
    let mut scratch = Vec::new();
    let bound = vocab_words.as_ref().map(|(w, p)| (w.len(), *p));
    let fail = |line: usize, message: String| Error::Parse {
        path: path.to_path_buf(),
        line,
        message,
        expected: LDA_C_FORMAT.to_owned(),
    };
    let last = for_each_line(path, LDA_C_FORMAT, |line_no, line| {
        let line = trim(line);
        if line.is_empty() {
            return Ok(());
        }
        parse_document(path, line_no, line, docs, bound, &mut scratch, &mut entries)?;
        for &([_, w], n) in &entries[entries.len() - scratch.len()..] {
            if max_id.is_none_or(|(m, _)| w as u64 > m) {
                max_id = Some((w as u64, line_no));
            }
            tokens += u64::from(n);
        }
        let limit = token_limit(entries.len());
        if tokens > limit {
            return Err(fail(
                line_no,
                format!(
                    "the counts up to this line add up to {tokens} tokens in {} id:count pairs, \
                     more than the limit of {limit} (the larger of {TOKENS_FLOOR} and \
                     {TOKENS_PER_PAIR} per pair, at most {MAX_TOKENS})",
                    entries.len()
                ),
            ));
        }
        docs += 1;
        Ok(())
    })?;
    if docs == 0 {
        return Err(fail(last + 1, "the file has no documents".to_owned()));
    }
    if tokens == 0 {
        return Err(fail(
            last + 1,
            format!("the file's {docs} documents hold no words"),
        ));
    }
    if let (None, Some((id, line))) = (&vocab_words, max_id) {
        let limit = id_limit(entries.len());
        if id > limit {
            return Err(fail(
                line,
                format!(
                    "word id {id} is too large for {} id:count pairs: without a vocabulary, ids \
                     may be at most {limit} (the larger of {ID_FLOOR} and {IDS_PER_ENTRY} per \
                     pair), since they size the model",
                    entries.len()
                ),
            ));
        }
    }
    let (vocab, words) = match vocab_words {
        Some((v, _)) => {
            let n = v.len();
            (v, n)
        }
        None => (Vec::new(), max_id.map_or(0, |(m, _)| m as usize + 1)),
    };
    let counts = SparseArray::from_entries([docs, words], entries)?;
    Ok(Corpus {
        counts,
        vocab,
        docs,
        words,
    })
}

/// The most tokens a corpus of `pairs` `id:count` pairs may hold (see [`lda_c`]).
fn token_limit(pairs: usize) -> u64 {
    MAX_TOKENS.min(TOKENS_FLOOR.max(TOKENS_PER_PAIR.saturating_mul(pairs as u64)))
}

/// Reads a vocabulary file: one word per line (surrounding whitespace trimmed).
fn vocabulary(path: &Path) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let fail = |line: usize, message: &str| Error::Parse {
        path: path.to_path_buf(),
        line,
        message: message.to_owned(),
        expected: VOCAB_FORMAT.to_owned(),
    };
    let last = for_each_line(path, VOCAB_FORMAT, |line_no, line| {
        let word = trim(line);
        if word.is_empty() {
            return Err(fail(line_no, "the line is empty"));
        }
        let word = std::str::from_utf8(word).map_err(|_| fail(line_no, "the line is not UTF-8"))?;
        words.push(word.to_owned());
        Ok(())
    })?;
    if words.is_empty() {
        return Err(fail(last + 1, "the vocabulary has no words"));
    }
    Ok(words)
}

/// Parses ASCII digits into a `u64` no larger than [`MAX_ID`].
fn parse_id(field: &[u8]) -> std::result::Result<u64, IntError> {
    match parse_uint(field) {
        Ok(v) if v > MAX_ID => Err(IntError::TooLarge),
        r => r,
    }
}

/// Parses one non-empty, trimmed LDA-C line as document `doc`, appending its entries to
/// `entries`; `scratch` is left holding one element per entry appended. `bound` is the
/// vocabulary's size and file, when there is one.
fn parse_document(
    path: &Path,
    line_no: usize,
    line: &[u8],
    doc: usize,
    bound: Option<(usize, &Path)>,
    scratch: &mut Vec<(u32, usize)>,
    entries: &mut Vec<([usize; 2], u32)>,
) -> Result<()> {
    let fail = |message: String| Error::Parse {
        path: path.to_path_buf(),
        line: line_no,
        message,
        expected: LDA_C_FORMAT.to_owned(),
    };
    let mut fields = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let n_field = fields.next().expect("a non-empty trimmed line has a field");
    let n = match parse_id(n_field) {
        Ok(n) => n,
        Err(IntError::TooLarge) => {
            return Err(fail(format!(
                "the number of words {} is too large (at most {MAX_ID})",
                quote(n_field)
            )));
        }
        Err(IntError::NotInteger) => {
            return Err(fail(format!(
                "the number of words {} is not a non-negative integer",
                quote(n_field)
            )));
        }
    };
    scratch.clear();
    let start = entries.len();
    let parsed = (|| {
        let mut pairs = Vec::new();
        for pair in fields {
            let colon = pair.iter().position(|&b| b == b':');
            let (id, count) = match colon {
                Some(c) if c > 0 && c + 1 < pair.len() && !pair[c + 1..].contains(&b':') => {
                    (&pair[..c], &pair[c + 1..])
                }
                _ => return Err(fail(format!("pair {} is not id:count", quote(pair)))),
            };
            let id = match parse_id(id) {
                Ok(id) => id,
                Err(IntError::TooLarge) => {
                    return Err(fail(format!(
                        "word id in {} is too large (at most {MAX_ID})",
                        quote(pair)
                    )));
                }
                Err(IntError::NotInteger) => {
                    return Err(fail(format!(
                        "word id {} in {} is not a non-negative integer",
                        quote(id),
                        quote(pair)
                    )));
                }
            };
            let count = match parse_id(count) {
                Ok(0) => {
                    return Err(fail(format!(
                        "count 0 in {} is invalid: counts are positive",
                        quote(pair)
                    )));
                }
                Ok(c) => c,
                Err(IntError::TooLarge) => {
                    return Err(fail(format!(
                        "count in {} is too large (at most {MAX_ID})",
                        quote(pair)
                    )));
                }
                Err(IntError::NotInteger) => {
                    return Err(fail(format!(
                        "count {} in {} is not a positive integer",
                        quote(count),
                        quote(pair)
                    )));
                }
            };
            if let Some((size, vocab)) = bound {
                if id >= size as u64 {
                    return Err(fail(format!(
                        "word id {id} in {} is beyond the vocabulary: {} has {size} {} \
                         (ids 0 to {})",
                        quote(pair),
                        vocab.display(),
                        if size == 1 { "word" } else { "words" },
                        size - 1
                    )));
                }
            }
            pairs.push(pair);
            scratch.push((id as u32, pairs.len() - 1));
            entries.push(([doc, id as usize], count as u32));
        }
        if n != pairs.len() as u64 {
            return Err(fail(format!(
                "the line says N = {n} distinct words but has {} id:count pairs",
                pairs.len()
            )));
        }
        // Ids must be distinct within a document.
        let mut sorted = scratch.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(fail(format!(
                "word id {} appears twice, in {} and {}: the words of a line are distinct",
                w[0].0,
                quote(pairs[w[0].1]),
                quote(pairs[w[1].1])
            )));
        }
        Ok(())
    })();
    if parsed.is_err() {
        entries.truncate(start);
        scratch.clear();
    }
    parsed
}

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
/// distributions.
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
/// [`Error::Setting`] naming the parameter when `avg_len` is not finite and positive,
/// `docs > 0` and `words` or `topics` is 0, `words` exceeds `2^32`, or the expected
/// tokens `docs * avg_len` exceed half of [`MAX_TOKENS`] (the tokens drawn stay below
/// it); [`Error::Alloc`] when the corpus would not fit in memory.
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
    use crate::generate::{bad_parameter, check_memory};
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
    // The topics' cumulative word distributions and the per-word tables, then the
    // entries (at most one per token).
    let bytes = (topics as u64)
        .checked_mul(words as u64)
        .and_then(|n| n.checked_mul(8))
        .and_then(|b| b.checked_add((words as u64).checked_mul(24)?))
        .and_then(|b| b.checked_add((expected as u64).checked_mul(24)?));
    check_memory(
        &format!("a generated corpus of {docs} documents, {words} words and {topics} topics"),
        bytes,
    )?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut entries = Vec::new();
    if docs > 0 {
        // Zipf popularity of each word id, through a random permutation of ranks.
        let mut rank: Vec<u32> = (0..words as u32).collect();
        rank.shuffle(&mut rng);
        let popularity: Vec<f64> = rank
            .iter()
            .map(|&r| (f64::from(r) + 1.0 + WORD_SHIFT).powf(-WORD_ZIPF))
            .collect();
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
        let mixture = Gamma::new(DOC_ALPHA, 1.0).expect("valid gamma parameters");
        let mu = avg_len.ln() - LENGTH_SIGMA * LENGTH_SIGMA / 2.0;
        let length = LogNormal::new(mu, LENGTH_SIGMA).expect("valid log-normal parameters");
        let mut theta = vec![0.0f64; topics];
        let mut count = vec![0u32; words];
        let mut order = Vec::new();
        for d in 0..docs {
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
                entries.push(([d, w], count[w]));
                count[w] = 0;
            }
            order.clear();
        }
    }
    let counts = SparseArray::from_entries([docs, words], entries)
        .expect("generated indices lie within the shape");
    Ok(Corpus {
        counts,
        vocab: Vec::new(),
        docs,
        words,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str, contents: &[u8]) -> TempFile {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("strads-corpus-{}-{n}-{name}", std::process::id()));
            std::fs::write(&path, contents).unwrap();
            TempFile(path)
        }

        fn shown(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn entries(c: &Corpus) -> Vec<([usize; 2], u32)> {
        c.counts.iter().map(|(k, &v)| (k, v)).collect()
    }

    fn err(contents: &str) -> (TempFile, String) {
        let f = TempFile::new("bad.dat", contents.as_bytes());
        let e = lda_c(&f.0, None).unwrap_err().to_string();
        (f, e)
    }

    #[test]
    fn reads_documents() {
        let f = TempFile::new("ok.dat", b"\xEF\xBB\xBF3 0:1 6:2\t2:1 \r\n\n0\n1 4:7\n");
        let c = lda_c(&f.0, None).unwrap();
        assert_eq!((c.docs, c.words, c.tokens()), (3, 7, 11));
        assert_eq!(c.counts.shape(), [3, 7]);
        assert_eq!(
            entries(&c),
            vec![([0, 0], 1), ([0, 6], 2), ([0, 2], 1), ([2, 4], 7)]
        );
        assert!(c.vocab.is_empty());
        assert_eq!(c.word(6), "#6");
    }

    #[test]
    fn vocabulary_sets_the_words() {
        let data = TempFile::new("v.dat", b"2 0:1 1:1\n1 1:3\n");
        let vocab = TempFile::new("vocab.txt", b"alpha\nbeta \ngamma\r\ndelta\n");
        let c = lda_c(&data.0, Some(&vocab.0)).unwrap();
        assert_eq!((c.docs, c.words), (2, 4));
        assert_eq!(c.counts.shape(), [2, 4]);
        assert_eq!(c.vocab, vec!["alpha", "beta", "gamma", "delta"]);
        assert_eq!(c.word(1), "beta");
    }

    #[test]
    fn n_must_match_the_pairs() {
        let (f, e) = err("2 0:1 1:1\n3 0:1 1:1\n");
        assert_eq!(
            e,
            format!(
                "{}:2: the line says N = 3 distinct words but has 2 id:count pairs; \
                 expected LDA-C `N id:count id:count ...`: N distinct 0-based integer word \
                 ids, each with a positive integer count",
                f.shown()
            )
        );
        let (f, e) = err("1 0:1 1:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: the line says N = 1 distinct words but has 2 id:count pairs; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        // A line that starts with a pair has no N.
        let (f, e) = err("0:1 1:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: the number of words \"0:1\" is not a non-negative integer; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("99999999999 0:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: the number of words \"99999999999\" is too large (at most 4294967295); \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn malformed_pairs() {
        for (pair, line) in [
            ("3", "1 3\n"),
            ("3:", "1 3:\n"),
            (":1", "1 :1\n"),
            ("3:1:1", "1 3:1:1\n"),
        ] {
            let (f, e) = err(line);
            assert_eq!(
                e,
                format!(
                    "{}:1: pair \"{pair}\" is not id:count; expected {LDA_C_FORMAT}",
                    f.shown()
                )
            );
        }
    }

    #[test]
    fn non_integers() {
        let (f, e) = err("1 0:1\n\n2 x:1 3:1\n");
        assert_eq!(
            e,
            format!(
                "{}:3: word id \"x\" in \"x:1\" is not a non-negative integer; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 -2:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: word id \"-2\" in \"-2:1\" is not a non-negative integer; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 5:1.5\n");
        assert_eq!(
            e,
            format!(
                "{}:1: count \"1.5\" in \"5:1.5\" is not a positive integer; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 4294967296:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: word id in \"4294967296:1\" is too large (at most 4294967295); \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 4:4294967296\n");
        assert_eq!(
            e,
            format!(
                "{}:1: count in \"4:4294967296\" is too large (at most 4294967295); \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn zero_count() {
        let (f, e) = err("2 0:1 7:0\n");
        assert_eq!(
            e,
            format!(
                "{}:1: count 0 in \"7:0\" is invalid: counts are positive; \
                 expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn repeated_word() {
        let (f, e) = err("3 5:1 2:1 5:2\n");
        assert_eq!(
            e,
            format!(
                "{}:1: word id 5 appears twice, in \"5:1\" and \"5:2\": the words of a line \
                 are distinct; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn id_beyond_the_vocabulary() {
        let data = TempFile::new("big.dat", b"1 0:1\n2 1:1 3:2\n");
        let vocab = TempFile::new("three.txt", b"a\nb\nc\n");
        let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:2: word id 3 in \"3:2\" is beyond the vocabulary: {} has 3 words \
                 (ids 0 to 2); expected {LDA_C_FORMAT}",
                data.shown(),
                vocab.shown()
            )
        );
    }

    #[test]
    fn empty_files() {
        let (f, e) = err("");
        assert_eq!(
            e,
            format!(
                "{}:1: the file has no documents; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("\n  \n");
        assert_eq!(
            e,
            format!(
                "{}:3: the file has no documents; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn bad_vocabularies() {
        let data = TempFile::new("d.dat", b"1 0:1\n");
        let check = |contents: &[u8], expected: &str| {
            let vocab = TempFile::new("vocab.txt", contents);
            let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
            assert_eq!(e, format!("{}:{expected}", vocab.shown()));
        };
        check(
            b"",
            "1: the vocabulary has no words; expected one word per line, line k naming word \
             id k - 1",
        );
        check(
            b"a\n\nc\n",
            "2: the line is empty; expected one word per line, line k naming word id k - 1",
        );
        check(
            b"a\n\xff\xfe\n",
            &format!("2: the line is not UTF-8; expected {VOCAB_FORMAT}"),
        );
        let missing = std::env::temp_dir().join("strads-corpus-no-such-vocab");
        let e = lda_c(&data.0, Some(&missing)).unwrap_err();
        assert!(
            matches!(&e, Error::Io { path, .. } if *path == missing),
            "{e:?}"
        );
    }

    #[test]
    fn ap_corpus() {
        let dir = Path::new("/work/shared/data/lda-ap");
        if !dir.exists() {
            return;
        }
        let vocab = dir.join("vocab.txt");
        let c = lda_c(dir.join("ap.dat"), Some(&vocab)).unwrap();
        assert_eq!((c.docs, c.words), (2246, 10473));
        assert_eq!(c.counts.shape(), [2246, 10473]);
        assert_eq!(c.tokens(), 435_838);
        assert_eq!(&c.vocab[..3], &["i", "new", "percent"]);
        // The head of PROVENANCE.md: `186 0:1 6144:1 3586:2 ...`.
        assert_eq!(c.counts.entry(2), ([0, 3586], &2));
        let without = lda_c(dir.join("ap.dat"), None).unwrap();
        assert_eq!(without.words, 10473);
        assert_eq!(entries(&without), entries(&c));
    }

    #[test]
    fn generated_is_deterministic_and_skewed() {
        let a = generated(400, 2000, 10, 120.0, 3);
        let b = generated(400, 2000, 10, 120.0, 3);
        let c = generated(400, 2000, 10, 120.0, 4);
        assert_eq!(entries(&a), entries(&b));
        assert_ne!(entries(&a), entries(&c));
        assert_eq!((a.docs, a.words), (400, 2000));
        let mean = a.tokens() as f64 / 400.0;
        assert!((100.0..140.0).contains(&mean), "mean length {mean}");
        // Every document has words, distinct within it.
        let mut per_doc = vec![Vec::new(); 400];
        for ([d, w], _) in &a.counts {
            per_doc[d].push(w);
        }
        for words in &mut per_doc {
            assert!(!words.is_empty());
            let n = words.len();
            words.sort_unstable();
            words.dedup();
            assert_eq!(words.len(), n);
        }
        // Word frequencies are skewed: the most frequent word is far above the mean.
        let mut freq = vec![0u64; 2000];
        for ([_, w], &n) in &a.counts {
            freq[w] += u64::from(n);
        }
        let max = *freq.iter().max().unwrap() as f64;
        assert!(max > 20.0 * a.tokens() as f64 / 2000.0, "max {max}");
    }

    #[test]
    fn generated_documents_have_few_topics() {
        // With sparse mixtures, documents differ: two documents share far fewer words
        // than they would if every document mixed every topic evenly.
        let c = generated(200, 3000, 20, 200.0, 5);
        let mut docs = vec![std::collections::HashSet::new(); 200];
        for ([d, w], _) in &c.counts {
            docs[d].insert(w);
        }
        let overlap = |a: usize, b: usize| {
            let (x, y) = (&docs[a], &docs[b]);
            x.intersection(y).count() as f64 / x.len().min(y.len()) as f64
        };
        let mean: f64 = (0..100).map(|d| overlap(2 * d, 2 * d + 1)).sum::<f64>() / 100.0;
        assert!(mean < 0.5, "mean overlap {mean}");
    }

    #[test]
    fn tokens_are_bounded() {
        // 2.2e9 tokens in one pair: beyond the per-pair limit (and i32).
        let (f, e) = err("1 0:7\n1 3:2200000000\n");
        assert_eq!(
            e,
            format!(
                "{}:2: the counts up to this line add up to 2200000007 tokens in 2 id:count \
                 pairs, more than the limit of 16777216 (the larger of 16777216 and 1024 per \
                 pair, at most 2147483647); expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
        // Up to the floor, any counts are fine.
        let f = TempFile::new("heavy.dat", b"1 0:16777215\n1 0:1\n");
        assert_eq!(lda_c(&f.0, None).unwrap().tokens(), 1 << 24);
    }

    /// The limit grows with the pairs from the floor, and stops at what `i32` counts hold.
    #[test]
    fn token_limit_stops_at_i32() {
        assert_eq!(token_limit(0), 1 << 24);
        assert_eq!(token_limit(1 << 14), 1 << 24);
        assert_eq!(token_limit(1 << 15), 1 << 25);
        assert_eq!(token_limit(1 << 21), i32::MAX as u64);
        assert_eq!(token_limit(usize::MAX), i32::MAX as u64);
    }

    #[test]
    fn word_ids_are_bounded_without_a_vocabulary() {
        let (f, e) = err("1 0:1\n1 100000000:1\n");
        assert_eq!(
            e,
            format!(
                "{}:2: word id 100000000 is too large for 2 id:count pairs: without a \
                 vocabulary, ids may be at most 1048576 (the larger of 1048576 and 16 per \
                 pair), since they size the model; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn a_corpus_without_words_is_refused() {
        let (f, e) = err("0\n\n0\n");
        assert_eq!(
            e,
            format!(
                "{}:4: the file's 2 documents hold no words; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn a_vocabulary_ending_in_a_blank_line_is_refused() {
        let data = TempFile::new("d.dat", b"1 0:1\n");
        for (contents, line) in [
            (&b"a\nb\n\n"[..], 3),
            (b"a\r\nb\r\n \r\n", 3),
            (b"a\n\n", 2),
        ] {
            let vocab = TempFile::new("vocab.txt", contents);
            let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "{}:{line}: the line is empty; expected {VOCAB_FORMAT}",
                    vocab.shown()
                )
            );
        }
    }

    #[test]
    fn generated_parameters_are_errors() {
        let e = |r: Result<Corpus>| r.unwrap_err().to_string();
        assert_eq!(
            e(try_generated(10, 100, 5, f64::NAN, 1)),
            "invalid setting avg_len=\"NaN\": a finite number of tokens per document, above 0"
        );
        assert_eq!(
            e(try_generated(10, 100, 5, 0.0, 1)),
            "invalid setting avg_len=\"0\": a finite number of tokens per document, above 0"
        );
        assert_eq!(
            e(try_generated(10, 100, 0, 5.0, 1)),
            "invalid setting topics=\"0\": at least 1 topic for 10 documents"
        );
        assert_eq!(
            e(try_generated(10, 1 << 33, 5, 5.0, 1)),
            "invalid setting words=\"8589934592\": at most 4294967296 (word ids are u32)"
        );
        assert_eq!(
            e(try_generated(10, 100, 5, 1e9, 1)),
            "invalid setting avg_len=\"1000000000\": at most 107374182 tokens per document \
             for 10 documents (a corpus holds at most 2147483647 tokens)"
        );
        assert_eq!(
            e(try_generated(10, 1 << 32, 1 << 30, 5.0, 1)),
            "cannot allocate more than 2^64 bytes for a generated corpus of 10 documents, \
             4294967296 words and 1073741824 topics"
        );
        assert!(
            e(try_generated(10, 1 << 32, 1 << 20, 5.0, 1))
                .starts_with("cannot allocate 36028900098180272 bytes for a generated corpus")
        );
    }

    #[test]
    fn generated_degenerate() {
        let c = generated(0, 0, 0, 10.0, 1);
        assert_eq!((c.docs, c.words, c.tokens()), (0, 0, 0));
        let one = generated(3, 1, 1, 5.0, 1);
        assert!(one.counts.iter().all(|([_, w], _)| w == 0));
        assert_eq!(one.counts.nnz(), 3);
    }
}
