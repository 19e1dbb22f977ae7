//! Text corpora loaded in place on a cluster job's ranks (docs/design.md, "Arrays"): every
//! rank reads the words that start in its byte range of the file (of the decompressed
//! bytes, for a gzip-compressed file, which every rank decompresses whole) and keeps the
//! tokens among them as its part of the `tokens` and `sentence` arrays, made in place
//! (`cluster::spread::dense`). One process's arrays are the ranks' parts one after the
//! other, so every plan and every bit stay those of threads.
//!
//! The ranks agree on what one process finds: the vocabulary (every rank gathers every
//! other's distinct words with their counts and merges them alike: for that moment a rank
//! holds about `2P` times its own distinct words' bytes), and the sentences: a
//! line is cut every `max_sentence` words, counted from the line's start, which may lie in
//! a range before; sentences the vocabulary leaves empty are not numbered, and a sentence
//! may span ranks. A malformed word (or no frequent one) makes every rank give up alike,
//! and the driver reads the file again keeping nothing (`super::check`), so the error is
//! exactly the one one process gives.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::kept::{keep_tokens, made};
use super::{MAX_WORD, WordArrays, check, is_gzip};
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, dense};
use crate::data::in_place::{Fault, byte_range, sizes_differ};
use crate::error::{Error, Result};

/// What the driver asks every rank to load.
#[derive(Serialize, Deserialize)]
struct Args {
    /// The array ids of `tokens` and `sentence`.
    ids: [u64; 2],
    /// The file, as every rank opens it (absolute when the driver could make it so).
    open: PathBuf,
    min_count: u64,
    max_sentence: usize,
}

/// What each rank tells the others once it has read its range.
#[derive(Default, Serialize, Deserialize)]
struct Summary {
    /// The file's size (decompressed, for a gzip-compressed file).
    size: u64,
    words: u64,
    /// Whether the range holds a newline.
    newline: bool,
    /// Words before the range's first newline (all of them, without one), and after its
    /// last.
    lead: u64,
    tail: u64,
    /// Sentences that start after the range's first newline.
    inner: u64,
    /// The rank could not open or read the file.
    fault: Option<Fault>,
    /// The rank met a word one process refuses.
    bad: bool,
}

/// A rank's answer to the driver.
#[derive(Serialize, Deserialize)]
enum Answer {
    /// The tokens before every rank (`P + 1` prefix sums), the vocabulary and counts (from
    /// rank 0; empty from the others), the numbers of sentences and of words read.
    Made {
        tokens: Vec<u64>,
        vocab: Vec<String>,
        counts: Vec<u64>,
        sentences: u64,
        raw_words: u64,
    },
    /// An error a rank met that reading the file again would not find (a file it cannot
    /// open, sizes that differ between ranks, memory, too many sentences).
    Fault(Fault),
    /// A malformed file, or no frequent word: the driver finds the error one process gives.
    Bad,
}

/// Driver: the words of `path` loaded in place.
pub(super) fn arrays(
    s: &'static Session,
    path: &Path,
    min_count: u64,
    max_sentence: usize,
) -> Result<WordArrays> {
    let ids: [u64; 2] = std::array::from_fn(|_| crate::array::fresh_id());
    let args = Args {
        ids,
        open: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        min_count,
        max_sentence,
    };
    let abandon = |e: Error| {
        dense::abandon(ids);
        e
    };
    let answers: Vec<Answer> = dense::answers(s, LOAD.name, spread::postcard_args(&args), &ids)?;
    let mut first = None;
    for answer in answers {
        match answer {
            Answer::Fault(f) => return Err(abandon(f.error(path))),
            Answer::Bad => {
                dense::abandon(ids);
                check(path, min_count, max_sentence)?;
                return Err(Error::Rank(format!(
                    "the job's ranks found a malformed word, or a gzip stream that breaks off, \
                     in {}, which this process, reading the file again, does not find: every \
                     node must see the same file",
                    path.display()
                )));
            }
            answer @ Answer::Made { .. } => {
                first.get_or_insert(answer);
            }
        }
    }
    let Some(Answer::Made {
        tokens: at,
        vocab,
        counts,
        sentences,
        raw_words,
    }) = first
    else {
        unreachable!("the driver answers too")
    };
    made(s, ids, &at, vocab, counts, sentences, raw_words).map_err(abandon)
}

#[linkme::distributed_slice(DATA_OPS)]
static LOAD: DataOp = DataOp {
    name: "strads::load_words",
    run: load_part,
};

fn load_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let args: Args =
        postcard::from_bytes(args).map_err(|e| format!("the words' arguments ({e})"))?;
    let answer = load(ctx, &args);
    Ok(spread::postcard_args(&answer))
}

/// Whether one process's loader takes `b` for a space between words.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' | b'\n')
}

/// The file's bytes (decompressed, for `gzip`) from byte `at` on.
fn open_at(path: &Path, gzip: bool, at: u64) -> std::io::Result<Box<dyn BufRead>> {
    let mut file = File::open(path)?;
    if !gzip {
        file.seek(SeekFrom::Start(at))?;
        return Ok(Box::new(BufReader::with_capacity(1 << 18, file)));
    }
    let file = BufReader::with_capacity(1 << 18, file);
    let mut bytes = flate2::bufread::MultiGzDecoder::new(file);
    let skipped = std::io::copy(&mut (&mut bytes).take(at), &mut std::io::sink())?;
    if skipped < at {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    }
    Ok(Box::new(BufReader::with_capacity(1 << 18, bytes)))
}

/// The words of one rank's range: their ids in order of first appearance here.
#[derive(Default)]
struct Range {
    ids: HashMap<String, u32>,
    counts: Vec<u64>,
    /// The words, as those ids.
    raw: Vec<u32>,
    /// Where each line after a newline of the range starts, in `raw`.
    lines: Vec<usize>,
    bad: bool,
}

impl Range {
    fn end_word(&mut self, word: &mut Vec<u8>) {
        if word.is_empty() {
            return;
        }
        let Ok(text) = std::str::from_utf8(word) else {
            self.bad = true;
            return;
        };
        let id = match self.ids.get(text) {
            Some(&id) => id,
            None => {
                let Ok(id) = u32::try_from(self.counts.len()) else {
                    self.bad = true;
                    return;
                };
                self.ids.insert(text.to_owned(), id);
                self.counts.push(0);
                id
            }
        };
        self.counts[id as usize] += 1;
        self.raw.push(id);
        word.clear();
    }

    /// Reads the words that start in bytes `[lo, hi)` of `bytes` (the file from `lo` on),
    /// finishing the last one past `hi`; `in_word`: byte `lo - 1` belongs to a word,
    /// which a range before reads; `bom`: the file's first three bytes are a byte order
    /// mark (spaces here). Stops at the first byte one process refuses (`bad`).
    fn read(
        &mut self,
        mut bytes: impl BufRead,
        (lo, hi): (u64, u64),
        in_word: bool,
        bom: bool,
    ) -> std::io::Result<()> {
        let mut word: Vec<u8> = Vec::with_capacity(64);
        let (mut at, mut skipping, mut skipped) = (lo, in_word, 0usize);
        'read: loop {
            let chunk = match bytes.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            for &b in chunk {
                let space = is_space(b) || (bom && at < 3);
                if b == 0 {
                    self.bad = true;
                    return Ok(());
                }
                if skipping {
                    if !space {
                        skipped += 1;
                        if skipped > MAX_WORD {
                            self.bad = true;
                            return Ok(());
                        }
                        at += 1;
                        continue;
                    }
                    skipping = false;
                }
                if at >= hi && (space || word.is_empty()) {
                    break 'read;
                }
                if space {
                    self.end_word(&mut word);
                    // Lines without words start no sentence: one entry where lines start
                    // at one word (blank lines cost nothing).
                    if b == b'\n' && self.lines.last() != Some(&self.raw.len()) {
                        self.lines.push(self.raw.len());
                    }
                } else if word.len() == MAX_WORD {
                    self.bad = true;
                    return Ok(());
                } else {
                    word.push(b);
                }
                if self.bad {
                    return Ok(());
                }
                at += 1;
            }
            bytes.consume(n);
        }
        self.end_word(&mut word);
        Ok(())
    }
}

/// Reads this rank's range of the file: its words, and what it tells the others.
fn read(ctx: &Ctx, args: &Args) -> (Range, Summary) {
    let (me, size) = (ctx.rank, ctx.size);
    let path = &args.open;
    let mut sum = Summary::default();
    let io = |e: std::io::Error| {
        let e = Error::Io {
            path: path.clone(),
            source: e,
        };
        Some(Fault::of(0, 0, true, e, me))
    };
    let gzip = match is_gzip(path) {
        Ok(gzip) => gzip,
        Err(e) => {
            sum.fault = io(e);
            return (Range::default(), sum);
        }
    };
    let bytes = if gzip {
        // A gzip stream's size is known once it is read (a corrupt one: one process's
        // error).
        match open_at(path, true, 0).and_then(|mut r| std::io::copy(&mut r, &mut std::io::sink())) {
            Ok(n) => n,
            Err(_) => {
                sum.bad = true;
                return (Range::default(), sum);
            }
        }
    } else {
        match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) => {
                sum.fault = io(e);
                return (Range::default(), sum);
            }
        }
    };
    sum.size = bytes;
    let range = byte_range(bytes, me, size);
    let read = open_at(path, gzip, 0).and_then(|r| {
        let mut head = Vec::with_capacity(3);
        r.take(3).read_to_end(&mut head)?;
        let bom = head == b"\xEF\xBB\xBF";
        let mut r = open_at(path, gzip, range.start.saturating_sub(1))?;
        let mut in_word = false;
        if range.start > 0 {
            let mut prev = [0u8; 1];
            r.read_exact(&mut prev)?;
            in_word = !(is_space(prev[0]) || (bom && range.start - 1 < 3));
        }
        let mut words = Range::default();
        words.read(r, (range.start, range.end), in_word, bom)?;
        Ok(words)
    });
    let words = match read {
        Ok(words) => words,
        // A gzip stream that breaks off: one process's error.
        Err(_) if gzip => {
            sum.bad = true;
            return (Range::default(), sum);
        }
        Err(e) => {
            sum.fault = io(e);
            return (Range::default(), sum);
        }
    };
    let m = args.max_sentence.max(1) as u64;
    let n = words.raw.len();
    sum.words = n as u64;
    sum.newline = !words.lines.is_empty();
    sum.lead = words.lines.first().copied().unwrap_or(n) as u64;
    sum.tail = (n - words.lines.last().copied().unwrap_or(0)) as u64;
    let ends = words.lines.iter().skip(1).copied().chain([n]);
    sum.inner = words
        .lines
        .iter()
        .zip(ends)
        .map(|(&a, b)| ((b - a) as u64).div_ceil(m))
        .sum();
    sum.bad = words.bad;
    (words, sum)
}

/// The vocabulary every rank makes alike from every rank's distinct words: its words and
/// counts, and the vocabulary id of each of this rank's words (`u32::MAX`: not in it), or
/// `None` when no word is frequent enough, or the ranks met 2^32 distinct words (one
/// process's error, which its reading finds); a rank's words that do not decode stop the
/// job. Every rank calls it together.
fn vocabulary(
    ctx: &mut Ctx,
    words: &Range,
    min_count: u64,
) -> Option<(Vec<String>, Vec<u64>, Vec<u32>)> {
    let mut by_id: Vec<&str> = vec![""; words.counts.len()];
    for (w, &id) in &words.ids {
        by_id[id as usize] = w;
    }
    let mut mine = Vec::new();
    for (w, &c) in by_id.iter().zip(&words.counts) {
        mine.extend_from_slice(&(w.len() as u32).to_le_bytes());
        mine.extend_from_slice(w.as_bytes());
        mine.extend_from_slice(&c.to_le_bytes());
    }
    drop(by_id);
    let mut merged: HashMap<String, usize> = HashMap::new();
    let mut counts: Vec<u64> = Vec::new();
    for b in ctx.all_gather(mine) {
        let mut at = 0;
        while at < b.len() {
            let entry = b.get(at..at + 4).and_then(|n| {
                let n = u32::from_le_bytes(n.try_into().ok()?) as usize;
                let w = std::str::from_utf8(b.get(at + 4..at + 4 + n)?).ok()?;
                let c = u64::from_le_bytes(b.get(at + 4 + n..at + 12 + n)?.try_into().ok()?);
                Some((w, c, 12 + n))
            });
            let Some((w, c, len)) = entry else {
                // The ranks would no longer agree on the words: none may go on alone.
                ctx.fail(format!("a rank's distinct words are cut short (byte {at})"));
            };
            at += len;
            match merged.get(w) {
                Some(&i) => counts[i] += c,
                None => {
                    merged.insert(w.to_owned(), counts.len());
                    counts.push(c);
                }
            }
        }
    }
    // One process refuses 2^32 distinct words: its error, found again by the driver.
    if counts.len() > u32::MAX as usize {
        return None;
    }
    let mut order: Vec<u32> = (0..counts.len() as u32)
        .filter(|&i| counts[i as usize] >= min_count.max(1))
        .collect();
    if order.is_empty() {
        return None;
    }
    // By decreasing count; the sort is stable, so ties keep their order of first
    // appearance.
    order.sort_by_key(|&i| std::cmp::Reverse(counts[i as usize]));
    let mut new_id = vec![u32::MAX; counts.len()];
    for (id, &i) in order.iter().enumerate() {
        new_id[i as usize] = id as u32;
    }
    let mut local = vec![u32::MAX; words.counts.len()];
    for (w, &id) in &words.ids {
        local[id as usize] = new_id[merged[w.as_str()]];
    }
    let mut names = vec![String::new(); counts.len()];
    for (w, i) in merged {
        names[i] = w;
    }
    let names: Vec<String> = order
        .iter()
        .map(|&i| std::mem::take(&mut names[i as usize]))
        .collect();
    let counts = order.iter().map(|&i| counts[i as usize]).collect();
    Some((names, counts, local))
}

fn load(ctx: &mut Ctx, args: &Args) -> Answer {
    let me = ctx.rank;
    let (words, sum) = read(ctx, args);
    let all: Vec<Summary> = ctx.gather_each(&sum, "summaries");
    drop(sum);
    // The ranks see the file at one size, or say so; then the first rank (by line) that
    // stopped: its error, or a malformed word one process finds again. (A rank that could
    // not open the file, or could not read a gzip stream through, knows no size.)
    let sized = all
        .iter()
        .map(|s| (s.fault.is_none() && !(s.bad && s.size == 0)).then_some(s.size));
    if let Some(fault) = sizes_differ(&args.open, sized) {
        return Answer::Fault(fault);
    }
    if let Some(s) = all.iter().find(|s| s.bad || s.fault.is_some()) {
        return s.fault.clone().map_or(Answer::Bad, Answer::Fault);
    }
    // The vocabulary, as one process makes it: counts summed, words in order of first
    // appearance (ranks in order), the frequent ones by decreasing count. Each rank's
    // distinct words cross as bytes and are merged one rank at a time.
    let Some((names, counts, local)) = vocabulary(ctx, &words, args.min_count) else {
        return Answer::Bad;
    };
    // Where this rank's range starts: the words of its line before it (`carry`), and the
    // sentences (empty ones included) that start before it.
    let m = args.max_sentence.max(1) as u64;
    let (mut carry, mut before) = (0u64, 0u64);
    for s in &all[..me] {
        // Sentences start where a line's words reach a multiple of `m`.
        before += (carry + s.lead).div_ceil(m) - carry.div_ceil(m) + s.inner;
        carry = if s.newline { s.tail } else { carry + s.words };
    }
    let raw_words: u64 = all.iter().map(|s| s.words).sum();
    // The driver's answer carries the vocabulary; the others let it go now.
    let (vocab, counts) = if me == 0 {
        (names, counts)
    } else {
        drop((names, counts));
        Default::default()
    };
    drop(all);
    // Only the words and where lines start are needed from here.
    let Range { raw, lines, .. } = words;
    // This rank's tokens, with the number of each one's sentence among all (from `before -
    // 1`: the sentence its first word continues, or before the first).
    let mut replay = |each: &mut dyn FnMut(u32, u64)| {
        let (mut pos, mut local_sentence, mut next_line) = (carry, 0u64, 0);
        for (k, &w) in raw.iter().enumerate() {
            if lines.get(next_line) == Some(&k) {
                pos = 0;
                next_line += 1;
            }
            if pos % m == 0 {
                local_sentence += 1;
            }
            pos += 1;
            let id = local[w as usize];
            if id != u32::MAX {
                each(id, local_sentence);
            }
        }
    };
    let base = before.wrapping_sub(1);
    let (at, numbered) = match keep_tokens(ctx, args.ids, base, &mut replay) {
        Ok(kept) => kept,
        Err(fault) => return Answer::Fault(fault),
    };
    Answer::Made {
        tokens: at,
        vocab,
        counts,
        sentences: numbered,
        raw_words,
    }
}
