//! Loading a text corpus for word embeddings (word2vec): words separated by whitespace,
//! in a plain or a gzip-compressed file, as word ids over a vocabulary of the words seen
//! at least `min_count` times, most frequent first.
//!
//! A line is a sentence, cut into sentences of at most `max_sentence` words (text8 is one
//! line of 17 M words; gensim cuts it into sentences of 10 000). The file is streamed: a
//! line may be as long as the file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::data::text::quote;
use crate::error::{Error, Result};

/// What a word file looks like, for error messages.
const WORDS_FORMAT: &str = "UTF-8 text, words separated by whitespace, plain or gzip-compressed";

/// The longest word (in bytes) the loader reads: longer runs of non-space bytes are not
/// words of a natural-language corpus but a binary file or a file of another format.
pub const MAX_WORD: usize = 1024;

/// A text corpus as word ids.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("strads-doc-words-{}", std::process::id()));
/// std::fs::write(&path, "the cat saw the dog\nthe end\n")?;
/// let w = strads_runtime::load::words(&path, 2, 10_000)?;
/// assert_eq!(w.vocab, ["the"]);
/// assert_eq!(w.counts, [3]);
/// assert_eq!(w.tokens, [0, 0, 0]);
/// assert_eq!(w.sentences, [0, 2, 3]); // "the .. the" and "the"
/// assert_eq!(w.raw_words, 7);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Words {
    /// The words seen at least `min_count` times, by decreasing count (ties in order of
    /// first appearance); a word's id is its place here.
    pub vocab: Vec<String>,
    /// Each vocabulary word's count in the file.
    pub counts: Vec<u64>,
    /// The ids of the file's words that are in the vocabulary, in the file's order.
    pub tokens: Vec<u32>,
    /// Where each sentence starts in `tokens`, and `tokens.len()` last: sentence `s` is
    /// `tokens[sentences[s]..sentences[s + 1]]`. Sentences left empty are dropped.
    pub sentences: Vec<usize>,
    /// Every word read, in the vocabulary or not (gensim's "raw words").
    pub raw_words: u64,
}

impl Words {
    /// The id of `word`, if it is in the vocabulary (a linear search: for a few lookups).
    pub fn id(&self, word: &str) -> Option<usize> {
        self.vocab.iter().position(|w| w == word)
    }
}

/// Loads the words of `path` (plain text, or gzip-compressed: told by the file's first
/// two bytes, whatever its name).
///
/// # Errors
/// [`Error::Io`] when the file cannot be read; [`Error::Parse`] naming the file and line
/// for a word that is not UTF-8, a NUL byte (a binary file), a word longer than
/// [`MAX_WORD`] bytes, a corrupt or truncated gzip stream, or a file in which no word
/// occurs `min_count` times.
pub fn words(path: impl AsRef<Path>, min_count: u64, max_sentence: usize) -> Result<Words> {
    read(path.as_ref(), min_count, max_sentence, true)
}

/// The error [`words`] gives for `path`, found without keeping its words; `Ok` when there
/// is none.
pub(super) fn check(path: &Path, min_count: u64, max_sentence: usize) -> Result<()> {
    read(path, min_count, max_sentence, false).map(|_| ())
}

/// Whether the file `path` is gzip-compressed (told by its first two bytes).
pub(super) fn is_gzip(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 2];
    let n = File::open(path)?.read(&mut head)?;
    Ok(n == 2 && head == [0x1f, 0x8b])
}

/// The words of `path` (kept, or with `keep` false only counted and checked).
fn read(path: &Path, min_count: u64, max_sentence: usize, keep: bool) -> Result<Words> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    crate::data::text::to_read(&file, &(0..u64::MAX));
    let mut file = BufReader::with_capacity(1 << 18, crate::data::text::Counted(file));
    let gzip = file
        .fill_buf()
        .map_err(io_error)?
        .starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::bufread::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut scan = Scan::new(path, gzip, max_sentence.max(1));
    scan.keep = keep;
    // A UTF-8 byte order mark is not a word: its three bytes, however the stream's reads
    // cut them (a gzip member may end inside it).
    let mut reader = BufReader::with_capacity(1 << 18, reader);
    let mut head = Vec::with_capacity(3);
    (&mut reader)
        .take(3)
        .read_to_end(&mut head)
        .map_err(|e| scan.read_error(e))?;
    if head == b"\xEF\xBB\xBF" {
        head.clear();
    }
    scan.run(std::io::Cursor::new(head).chain(reader))?;
    scan.finish(min_count)
}

/// The state of one pass over a file: the words seen so far, by first appearance.
struct Scan<'p> {
    path: &'p Path,
    gzip: bool,
    max_sentence: usize,
    ids: HashMap<String, u32>,
    counts: Vec<u64>,
    /// Every word's first-appearance id, in the file's order.
    raw: Vec<u32>,
    /// Where each sentence starts in `raw`.
    starts: Vec<usize>,
    line: usize,
    in_sentence: usize,
    /// Whether the words are kept (`raw`, `starts`), or only counted.
    keep: bool,
    /// Every word read.
    read: usize,
}

impl<'p> Scan<'p> {
    fn new(path: &'p Path, gzip: bool, max_sentence: usize) -> Self {
        Scan {
            path,
            gzip,
            max_sentence,
            ids: HashMap::new(),
            counts: Vec::new(),
            raw: Vec::new(),
            starts: vec![0],
            line: 1,
            in_sentence: 0,
            keep: true,
            read: 0,
        }
    }

    fn parse_error(&self, message: String) -> Error {
        Error::Parse {
            path: self.path.to_path_buf(),
            line: self.line,
            message,
            expected: WORDS_FORMAT.to_owned(),
        }
    }

    fn run(&mut self, mut reader: impl BufRead) -> Result<()> {
        let mut word: Vec<u8> = Vec::with_capacity(64);
        loop {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(e)),
            };
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            for &b in chunk {
                match b {
                    b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => self.end_word(&mut word)?,
                    b'\n' => {
                        self.end_word(&mut word)?;
                        self.end_sentence();
                        self.line += 1;
                    }
                    0 => {
                        return Err(self.parse_error(
                            "a NUL byte: this is a binary file, not text".to_owned(),
                        ));
                    }
                    _ => {
                        if word.len() == MAX_WORD {
                            return Err(self.parse_error(format!(
                                "a word longer than {MAX_WORD} bytes, starting {}",
                                quote(&word)
                            )));
                        }
                        word.push(b);
                    }
                }
            }
            reader.consume(n);
        }
        self.end_word(&mut word)?;
        self.end_sentence();
        Ok(())
    }

    /// An error while reading: in a gzip stream, a corrupt or truncated file at the line
    /// reached; otherwise the file's I/O error.
    fn read_error(&self, e: std::io::Error) -> Error {
        if self.gzip
            && matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput
                    | std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            self.parse_error(format!("the gzip stream is corrupt or truncated ({e})"))
        } else {
            Error::Io {
                path: PathBuf::from(self.path),
                source: e,
            }
        }
    }

    fn end_word(&mut self, word: &mut Vec<u8>) -> Result<()> {
        if word.is_empty() {
            return Ok(());
        }
        let text = std::str::from_utf8(word)
            .map_err(|_| self.parse_error(format!("the word {} is not UTF-8", quote(word))))?;
        let id = match self.ids.get(text) {
            Some(&id) => id,
            None => {
                let id = u32::try_from(self.counts.len())
                    .map_err(|_| self.parse_error("more than 2^32 distinct words".to_owned()))?;
                self.ids.insert(text.to_owned(), id);
                self.counts.push(0);
                id
            }
        };
        self.counts[id as usize] += 1;
        self.read += 1;
        if self.keep {
            self.raw.push(id);
        }
        word.clear();
        self.in_sentence += 1;
        if self.in_sentence == self.max_sentence {
            self.end_sentence();
        }
        Ok(())
    }

    fn end_sentence(&mut self) {
        if self.starts.last() != Some(&self.raw.len()) {
            self.starts.push(self.raw.len());
        }
        self.in_sentence = 0;
    }

    /// The vocabulary of words seen `min_count` times, and the kept words.
    fn finish(self, min_count: u64) -> Result<Words> {
        let mut names = vec![String::new(); self.counts.len()];
        for (word, id) in &self.ids {
            names[*id as usize] = word.clone();
        }
        // `run` ended the last sentence: `starts` ends with `raw.len()`.
        let starts: &[usize] = if self.keep { &self.starts } else { &[0, 0] };
        frequent(&self.raw, &self.counts, starts, min_count, |id| {
            std::mem::take(&mut names[id as usize])
        })
        .ok_or_else(|| {
            self.parse_error(format!(
                "no word occurs {} times or more ({} words read, {} distinct)",
                min_count.max(1),
                self.read,
                self.counts.len()
            ))
        })
    }
}

/// The ids (into `counts`) of the words seen `min_count` times, most frequent first (ties
/// by id): a word's place here is its id in the vocabulary.
pub(crate) fn vocabulary(counts: &[u64], min_count: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..counts.len() as u32)
        .filter(|&w| counts[w as usize] >= min_count.max(1))
        .collect();
    // By decreasing count; the sort is stable, so ties keep their order of ids.
    order.sort_by_key(|&w| std::cmp::Reverse(counts[w as usize]));
    order
}

/// The corpus of the words `raw` (ids into `counts`, which holds each id's count in `raw`),
/// in sentences starting at `starts` (`raw.len()` last): the words seen `min_count` times,
/// most frequent first (ties by id), named `name(id)`; sentences left empty are dropped.
/// `None` when no word is that frequent. What the loader and the generator share.
pub(crate) fn frequent(
    raw: &[u32],
    counts: &[u64],
    starts: &[usize],
    min_count: u64,
    mut name: impl FnMut(u32) -> String,
) -> Option<Words> {
    let order = vocabulary(counts, min_count);
    if order.is_empty() {
        return None;
    }
    let mut new_id = vec![u32::MAX; counts.len()];
    for (new, &old) in order.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    let mut tokens = Vec::with_capacity(raw.len());
    let mut sentences = vec![0];
    for s in starts.windows(2) {
        tokens.extend(
            raw[s[0]..s[1]]
                .iter()
                .map(|&w| new_id[w as usize])
                .filter(|&w| w != u32::MAX),
        );
        if sentences.last() != Some(&tokens.len()) {
            sentences.push(tokens.len());
        }
    }
    Some(Words {
        vocab: order.iter().map(|&w| name(w)).collect(),
        counts: order.iter().map(|&w| counts[w as usize]).collect(),
        tokens,
        sentences,
        raw_words: raw.len() as u64,
    })
}

mod arrays;
mod in_place;
mod kept;

pub use arrays::{WordArrays, words_arrays};
pub(crate) use kept::{keep_tokens, made as made_in_place};
