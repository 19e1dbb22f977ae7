//! LDA-C corpora loaded in place on a cluster job's ranks (docs/design.md, "Arrays"): the
//! file is read by every rank in its byte range (the same path on every node), and the
//! ranks agree on what one process finds: the documents' numbers, the shape and the first
//! error by line. Each rank keeps its documents' entries as its part of a spread `counts`
//! array, so the parts one after the other are one process's entries, in order. (A
//! generated corpus is drawn in place by `generated.rs`.) And a spread corpus's tokens,
//! summed where its parts are.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{
    ID_FLOOR, IDS_PER_ENTRY, LDA_C_FORMAT, MAX_TOKENS, Pairs, TOKENS_FLOOR, TOKENS_PER_PAIR,
    check_dims, parse_document, token_limit,
};
use crate::array::SparseArray;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};
use crate::data::in_place::{Failure, Fault, byte_range, sizes_differ};
use crate::data::text::{Lines, MAX_LINE, id_limit};
use crate::error::{Error, Result};

/// What the driver asks every rank to load.
#[derive(Serialize, Deserialize)]
struct LoadArgs {
    /// The id of the counts' parts.
    id: u64,
    /// The file, as every rank opens it (absolute when the driver could make it so).
    open: PathBuf,
    /// The vocabulary's size and file as the caller named it, when there is one.
    vocab: Option<(usize, PathBuf)>,
}

/// What each rank tells the others once it has read its range.
#[derive(Serialize, Deserialize)]
struct Summary {
    /// The file's size, when the rank could see it.
    size: Option<u64>,
    /// Lines read (blank ones too).
    lines: usize,
    /// Documents read: the lines that are not blank.
    docs: usize,
    /// `id:count` pairs read.
    pairs: u64,
    /// Tokens read (the sum of the counts).
    tokens: u64,
    /// The largest word id read, with the line (in the range) where it is first seen.
    max: Option<(u64, usize)>,
    /// The rank's first error, its line in the range.
    fault: Option<Fault>,
}

/// A rank's answer to the driver: the shape and its part's facts, or the job's error.
type Answer = std::result::Result<([usize; 2], Facts), Fault>;

/// Driver: the LDA-C file `path` loaded in place, `vocab` its vocabulary (read here).
pub(super) fn lda_c(
    s: &'static Session,
    path: &Path,
    vocab: Option<(usize, &Path)>,
) -> Result<SparseArray<u32, 2>> {
    let args = LoadArgs {
        id: crate::array::fresh_id(),
        open: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        vocab: vocab.map(|(n, p)| (n, p.to_path_buf())),
    };
    let answers = spread::run(s, LOAD.name, spread::postcard_args(&args)).map_err(Error::Rank)?;
    let answers: Vec<Answer> = spread::decode_each(&answers).map_err(Error::Rank)?;
    let mut facts = Vec::with_capacity(answers.len());
    let mut shape = [0; 2];
    for answer in answers {
        let (s, f) = answer.map_err(|f| f.error(path))?;
        shape = s;
        facts.push(f);
    }
    spread::made(s, args.id, shape, &facts).map_err(Error::Rank)
}

#[linkme::distributed_slice(DATA_OPS)]
static LOAD: DataOp = DataOp {
    name: "strads::lda_c",
    run: load_part,
};

fn load_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let args: LoadArgs =
        postcard::from_bytes(args).map_err(|e| format!("lda_c's arguments ({e})"))?;
    let answer: Answer = load(ctx, &args);
    Ok(spread::postcard_args(&answer))
}

/// Where a rank's documents are: each one's line in the range, and the pairs and tokens
/// read up to it (itself included).
struct Read {
    entries: Pairs,
    ends: Vec<(usize, u64, u64)>,
}

/// Reads this rank's range of the file: its documents (numbered from 0 within the range)
/// and its summary.
fn read_range(ctx: &Ctx, args: &LoadArgs) -> (Read, Summary) {
    let mut read = Read {
        entries: Pairs::default(),
        ends: Vec::new(),
    };
    let mut sum = Summary {
        size: None,
        lines: 0,
        docs: 0,
        pairs: 0,
        tokens: 0,
        max: None,
        fault: None,
    };
    let path = args.open.as_path();
    let size = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(source) => {
            let e = Error::Io {
                path: path.to_path_buf(),
                source,
            };
            sum.fault = Some(Fault::of(0, 0, true, e, ctx.rank));
            return (read, sum);
        }
    };
    sum.size = Some(size);
    let range = byte_range(size, ctx.rank, ctx.size);
    let mut lines = match Lines::open(path, range, LDA_C_FORMAT, MAX_LINE) {
        Ok(lines) => lines,
        Err(e) => {
            sum.fault = Some(Fault::of(0, 0, true, e, ctx.rank));
            return (read, sum);
        }
    };
    let bound = args.vocab.as_ref().map(|(n, p)| (*n, p.as_path()));
    let mut scratch = Vec::new();
    loop {
        match lines.advance() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                sum.fault = Some(Fault::of(0, lines.count(), false, e, ctx.rank));
                break;
            }
        }
        let line_no = lines.count();
        let line = crate::data::text::trim(lines.line());
        if line.is_empty() {
            continue;
        }
        let (doc, entries) = (sum.docs, &mut read.entries);
        if let Err(e) = parse_document(path, line_no, line, doc, bound, &mut scratch, entries) {
            sum.fault = Some(Fault::of(0, line_no, false, e, ctx.rank));
            break;
        }
        for (&[_, w], &n) in entries.last(scratch.len()) {
            if sum.max.is_none_or(|(m, _)| u64::from(w) > m) {
                sum.max = Some((u64::from(w), line_no));
            }
            sum.tokens += u64::from(n);
        }
        sum.pairs += scratch.len() as u64;
        sum.docs += 1;
        read.ends.push((line_no, sum.pairs, sum.tokens));
    }
    sum.lines = lines.count();
    (read, sum)
}

fn load(ctx: &mut Ctx, args: &LoadArgs) -> Answer {
    let (read, mine) = read_range(ctx, args);
    let all: Vec<Summary> = ctx.gather_each(&mine, "summary");
    drop(mine);
    if let Some(fault) = sizes_differ(&args.open, all.iter().map(|s| s.size)) {
        return Err(fault);
    }
    let me = ctx.rank;
    let before = |r: usize| -> (usize, usize, u64, u64) {
        all[..r].iter().fold((0, 0, 0, 0), |(l, d, p, t), s| {
            (l + s.lines, d + s.docs, p + s.pairs, t + s.tokens)
        })
    };
    // The first error one process meets: the ranks' parse errors and the lines whose
    // tokens so far pass the limit (each rank checks its own lines, from the totals of
    // the ranks before it), the first by line.
    let (lines_before, docs_before, pairs_before, tokens_before) = before(me);
    let mut fault = read.ends.iter().find_map(|&(line, pairs, tokens)| {
        let (pairs, tokens) = (pairs_before + pairs, tokens_before + tokens);
        let limit = token_limit(pairs as usize);
        (tokens > limit).then(|| Fault {
            file: 0,
            line: lines_before + line,
            global: true,
            failure: parse_failure(format!(
                "the counts up to this line add up to {tokens} tokens in {pairs} id:count \
                 pairs, more than the limit of {limit} (the larger of {TOKENS_FLOOR} and \
                 {TOKENS_PER_PAIR} per pair, at most {MAX_TOKENS})"
            )),
        })
    });
    if fault.is_none() {
        fault = all[me].fault.clone().map(|mut f| {
            if !f.global {
                f.line += lines_before;
                f.global = true;
            }
            f
        });
    }
    let faults: Vec<Option<Fault>> = ctx.gather_each(&fault, "error");
    // The ranks' lines come in rank order: the first rank's error is the first by line.
    if let Some(first) = faults.into_iter().flatten().next() {
        return Err(first);
    }
    let (last, docs, pairs, tokens) = before(ctx.size);
    if docs == 0 {
        return Err(parse_fault(last + 1, "the file has no documents".into()));
    }
    if tokens == 0 {
        let message = format!("the file's {docs} documents hold no words");
        return Err(parse_fault(last + 1, message));
    }
    // The largest id, at the first line holding it.
    let mut max: Option<(u64, usize)> = None;
    for (r, s) in all.iter().enumerate() {
        if let Some((id, line)) = s.max
            && max.is_none_or(|(m, _)| id > m)
        {
            max = Some((id, line + before(r).0));
        }
    }
    let words = match (&args.vocab, max) {
        (Some((n, _)), _) => *n,
        (None, Some((id, line))) => {
            let limit = id_limit(pairs as usize);
            if id > limit {
                return Err(parse_fault(
                    line,
                    format!(
                        "word id {id} is too large for {pairs} id:count pairs: without a \
                         vocabulary, ids may be at most {limit} (the larger of {ID_FLOOR} and \
                         {IDS_PER_ENTRY} per pair), since they size the model"
                    ),
                ));
            }
            id as usize + 1
        }
        (None, None) => 0,
    };
    // As one process refuses it, the first dimension first.
    if let Err(e) = check_dims([docs, words]) {
        return Err(Fault::of(0, 0, true, e, ctx.rank));
    }
    // This rank's documents numbered from the ranks' before it (the shape fits `u32`).
    let Pairs {
        mut keys,
        mut values,
    } = read.entries;
    for k in &mut keys {
        k[0] += docs_before as u32;
    }
    // The part is kept while the array lives: without the vectors' spare room.
    keys.shrink_to_fit();
    values.shrink_to_fit();
    Ok(([docs, words], spread::keep_new(args.id, keys, values)))
}

fn parse_failure(message: String) -> Failure {
    Failure::Parse {
        message,
        expected: LDA_C_FORMAT.to_owned(),
    }
}

/// An error of the file as a whole, at line `line`.
fn parse_fault(line: usize, message: String) -> Fault {
    Fault {
        file: 0,
        line,
        global: true,
        failure: parse_failure(message),
    }
}

/// Driver: the sum of the values of this rank's part of the spread counts `id`, summed
/// over the ranks: a corpus's tokens, without bringing its counts home.
pub(super) fn tokens(s: &'static Session, id: u64) -> std::result::Result<u64, String> {
    let answers = spread::run(s, TOKENS.name, spread::postcard_args(&id))?;
    let sums: Vec<u64> = spread::decode_each(&answers)?;
    Ok(sums.iter().sum())
}

#[linkme::distributed_slice(DATA_OPS)]
static TOKENS: DataOp = DataOp {
    name: "strads::corpus_tokens",
    run: tokens_part,
};

fn tokens_part(_: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let id: u64 = postcard::from_bytes(args).map_err(|e| format!("tokens' arguments ({e})"))?;
    let sum = spread::with_part(id, |p| {
        p.values_any()
            .downcast_ref::<Vec<u32>>()
            .map(|v| v.iter().map(|&n| u64::from(n)).sum::<u64>())
    })?
    .ok_or_else(|| format!("array {id} is not a corpus's counts"))?;
    Ok(spread::postcard_args(&sum))
}
