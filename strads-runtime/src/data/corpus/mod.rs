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

use crate::array::SparseArray;
use crate::data::text::{
    ID_FLOOR, IDS_PER_ENTRY, IntError, for_each_line, id_limit, parse_uint, quote, trim,
};
use crate::error::{Error, Result};

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
    ///
    /// For a corpus made in place on a cluster job's ranks, each rank sums its part and the
    /// counts stay where they are.
    pub fn tokens(&self) -> u64 {
        if self.counts.spread_values().is_some()
            && let Some(s) = crate::cluster::job::data_driver()
        {
            return in_place::tokens(s, self.counts.id())
                .unwrap_or_else(|e| s.fail(format!("a corpus's counts on the ranks: {e}")));
        }
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
/// On a cluster job's driver the file is loaded in place: every rank reads the documents
/// that start in its byte range of the file, at the same path on every node (a shared
/// filesystem, or the same copy on each), and keeps their entries; `counts` is then a
/// spread array (`SparseArray::is_spread`), with the entries, the shape and the errors one
/// process gives. The vocabulary is read on the driver. Serial code that reads the
/// entries brings them home (docs/cluster.md).
///
/// # Errors
/// [`Error::Io`] when a file cannot be read; [`Error::Parse`], naming the file, the line,
/// the offending field and the expected format, when `N` is not a non-negative integer or
/// differs from the number of pairs, a pair is not `id:count`, an id or count is not an
/// integer, a count is 0, an id appears twice in a line, an id lies beyond the
/// vocabulary, a line, id or the tokens exceed the limits above, the data file has no
/// documents or no tokens, or a vocabulary line is empty (a blank last line included) or
/// not UTF-8; [`Error::Shape`] when the documents or the vocabulary exceed `2^32`. On a
/// cluster job's driver also [`Error::Rank`] when the ranks see the file at different sizes
/// or a rank fails. Nothing is returned half-built.
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
    let named = vocab.is_none_or(|v| v.to_str().is_some());
    if let Some(s) = crate::cluster::job::data_driver()
        && named
        && crate::data::in_place::readable_in_place(&[path])
    {
        let bound = vocab_words.as_ref().map(|(w, p)| (w.len(), *p));
        let counts = in_place::lda_c(s, path, bound)?;
        let [docs, words] = counts.shape();
        return Ok(Corpus {
            counts,
            vocab: vocab_words.map(|(v, _)| v).unwrap_or_default(),
            docs,
            words,
        });
    }
    let mut entries = Pairs::default();
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
        for (&[_, w], &n) in entries.last(scratch.len()) {
            if max_id.is_none_or(|(m, _)| u64::from(w) > m) {
                max_id = Some((u64::from(w), line_no));
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
    check_dims([docs, words])?;
    // The array keeps both vectors, without their spare room (`from_raw`).
    let counts = SparseArray::from_raw([docs, words], entries.keys, entries.values);
    Ok(Corpus {
        counts,
        vocab,
        docs,
        words,
    })
}

/// A corpus's entries as they are read: `[doc, word]` and the count (12 bytes a pair, as
/// the array keeps them). A document number past `u32::MAX` wraps here, and the corpus is
/// then refused by [`check_dims`] before it is built.
#[derive(Default)]
pub(super) struct Pairs {
    pub keys: Vec<[u32; 2]>,
    pub values: Vec<u32>,
}

impl Pairs {
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The last `n` pairs.
    pub(super) fn last(&self, n: usize) -> impl Iterator<Item = (&[u32; 2], &u32)> {
        let at = self.len() - n;
        self.keys[at..].iter().zip(&self.values[at..])
    }

    fn truncate(&mut self, n: usize) {
        self.keys.truncate(n);
        self.values.truncate(n);
    }
}

/// The error `SparseArray::from_entries` gives for a shape it cannot index (`u32` indices).
fn check_dims(shape: [usize; 2]) -> Result<()> {
    match shape.into_iter().find(|&d| d > u32::MAX as usize + 1) {
        Some(d) => Err(Error::Shape(format!(
            "sparse array dimension {d} exceeds the supported {}",
            u32::MAX as u64 + 1
        ))),
        None => Ok(()),
    }
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
    // Empty lines at the end (an editor's last newline) are no words; one before a word
    // would shift the ids of every word after it.
    let mut blank: Option<usize> = None;
    let last = for_each_line(path, VOCAB_FORMAT, |line_no, line| {
        let word = trim(line);
        if word.is_empty() {
            blank.get_or_insert(line_no);
            return Ok(());
        }
        if let Some(at) = blank {
            return Err(fail(
                at,
                "the line is empty, and words follow it: each line is the word of its id \
                 (line 1 is word 0), so remove the empty line",
            ));
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
    entries: &mut Pairs,
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
            entries.keys.push([doc as u32, id as u32]);
            entries.values.push(count as u32);
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

mod generated;
mod in_place;

pub use generated::{generated, try_generated};
#[cfg(test)]
mod tests;
