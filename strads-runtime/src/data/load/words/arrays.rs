//! A text corpus whose tokens are arrays ([`words_arrays`]): what a loop reads, and on a
//! cluster job's driver loaded in place, each rank keeping the words of its byte range of
//! the file (`in_place`).

use std::path::Path;

use super::Words;
use crate::array::DistArray;
use crate::error::{Error, Result};

/// A text corpus as word ids in arrays: what [`words_arrays`] loads (in parts, on a
/// cluster job's driver) and [`Words::into_arrays`] makes.
///
/// `tokens[k]` is the id of the `k`-th word of the file that is in the vocabulary, and
/// `sentence[k]` the number of its sentence: sentences are numbered from 0 in the file's
/// order, sentences left empty by the vocabulary not counted, so that sentence `s` holds
/// the tokens [`Words::sentences`]`[s]..[s + 1]` of the same file.
#[derive(Debug, Clone, PartialEq)]
pub struct WordArrays {
    /// The words seen at least `min_count` times, by decreasing count (ties in order of
    /// first appearance); a word's id is its place here.
    pub vocab: Vec<String>,
    /// Each vocabulary word's count in the file.
    pub counts: Vec<u64>,
    /// The ids of the file's words that are in the vocabulary, in the file's order.
    pub tokens: DistArray<u32, 1>,
    /// The sentence of each token.
    pub sentence: DistArray<u32, 1>,
    /// Number of sentences (the largest of `sentence` plus one; [`Words::sentences`] holds
    /// their starts instead).
    pub sentences: usize,
    /// Every word read, in the vocabulary or not (gensim's "raw words").
    pub raw_words: u64,
}

impl WordArrays {
    /// The id of `word`, if it is in the vocabulary (a linear search: for a few lookups).
    pub fn id(&self, word: &str) -> Option<usize> {
        self.vocab.iter().position(|w| w == word)
    }

    /// Brings `tokens` and `sentence` home, on a cluster job's driver, when their parts
    /// are held by other ranks (`DistArray::gather`); nothing happens when they are here.
    pub fn gather(&self) {
        self.tokens.gather();
        self.sentence.gather();
    }

    /// Whether some of the tokens are held by other ranks of a cluster job (see
    /// [`gather`](Self::gather)).
    pub fn is_spread(&self) -> bool {
        self.tokens.is_spread() || self.sentence.is_spread()
    }
}

impl Words {
    /// The same corpus with its tokens and their sentences as arrays (on a cluster job's
    /// driver, arrays of 1 MiB or more are made in parts on the ranks, as
    /// `DistArray::from_fn` makes them).
    ///
    /// # Errors
    /// [`Error::Shape`] when there are `2^32` sentences or more (numbers are `u32`).
    ///
    /// ```
    /// let w = strads_runtime::load::Words {
    ///     vocab: vec!["the".into(), "cat".into()],
    ///     counts: vec![2, 1],
    ///     tokens: vec![0, 1, 0],
    ///     sentences: vec![0, 2, 3],
    ///     raw_words: 4,
    /// };
    /// let a = w.into_arrays()?;
    /// assert_eq!(a.tokens.as_slice(), [0, 1, 0]);
    /// assert_eq!(a.sentence.as_slice(), [0, 0, 1]);
    /// assert_eq!(a.sentences, 2);
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    pub fn into_arrays(self) -> Result<WordArrays> {
        let sentences = self.sentences.len().saturating_sub(1);
        if u32::try_from(sentences).is_err() {
            return Err(Error::Shape(format!(
                "{sentences} sentences: their numbers are u32, below 2^32"
            )));
        }
        let mut sentence_of = self
            .sentences
            .windows(2)
            .enumerate()
            .flat_map(|(s, w)| std::iter::repeat_n(s as u32, w[1].saturating_sub(w[0])));
        let n = self.tokens.len();
        let sentence = DistArray::from_fn([n], |_| sentence_of.next().unwrap_or(0));
        let tokens = DistArray::from_fn([n], |[k]| self.tokens[k]);
        Ok(WordArrays {
            vocab: self.vocab,
            counts: self.counts,
            tokens,
            sentence,
            sentences,
            raw_words: self.raw_words,
        })
    }
}

/// Loads the words of `path` as [`words`](super::words) does (the same vocabulary, tokens,
/// sentences and errors), its tokens and their sentences as arrays.
///
/// On a cluster job's driver the file is read in place: every rank reads the words that
/// start in its byte range of the file, at the same path on every node (a shared
/// filesystem, or the same copy on each), and keeps the tokens among them as its part of
/// `tokens` and `sentence`, so the driver never holds the corpus (docs/cluster.md). A
/// gzip-compressed file cannot be split by its bytes: every rank decompresses it whole to
/// learn its size, then again up to the end of its range, and keeps its range of the
/// decompressed bytes. The ranks agree on what one process finds: every rank gathers every
/// other's distinct words and their counts and makes the same vocabulary (while it is
/// made, a rank holds every rank's distinct words: about `2P` times its own), and the
/// sentences a line is cut into are counted across the ranks' ranges. When a rank meets a malformed word, or no word is frequent enough, the driver
/// reads the file again, keeping nothing, to give the error one process gives.
///
/// # Errors
/// Those of [`words`](super::words); [`Error::Shape`] for `2^32` sentences or more; on a
/// cluster job's driver also [`Error::Rank`] when the ranks see the file at different
/// sizes or a rank fails.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("strads-doc-wa-{}", std::process::id()));
/// std::fs::write(&path, "the cat saw the dog\nthe end\n")?;
/// let w = strads_runtime::load::words_arrays(&path, 2, 10_000)?;
/// assert_eq!(w.vocab, ["the"]);
/// assert_eq!(w.tokens.as_slice(), [0, 0, 0]);
/// assert_eq!(w.sentence.as_slice(), [0, 0, 1]);
/// assert_eq!((w.sentences, w.raw_words), (2, 7));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn words_arrays(
    path: impl AsRef<Path>,
    min_count: u64,
    max_sentence: usize,
) -> Result<WordArrays> {
    let path = path.as_ref();
    if let Some(s) = crate::data::load::in_place_driver(&[path]) {
        return super::in_place::arrays(s, path, min_count, max_sentence.max(1));
    }
    super::words(path, min_count, max_sentence)?.into_arrays()
}
