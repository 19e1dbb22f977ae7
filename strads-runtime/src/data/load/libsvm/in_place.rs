//! LIBSVM files loaded in place on a cluster job's ranks (docs/design.md, "Arrays"): every
//! rank reads the samples that start in its byte range of each file (the same path on every
//! node) and keeps them as its regions of the data set's four arrays, made in place
//! (`cluster::spread::dense`): labels and offsets by sample, features and values by entry.
//! One process's arrays are the ranks' regions one after the other, so every plan and
//! every bit stay those of threads. The ranks agree on what one process reading the files
//! finds: the first error by file and line, and the numbers of samples, entries and
//! features.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{LIBSVM_FORMAT, LibSvm, RawLibSvm, entry_limit, index_message};
use crate::array::DistArray;
use crate::cluster::proto::Region;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, dense};
use crate::data::in_place::{Failure, Fault, byte_range, other, sizes_differ};
use crate::data::text::{Lines, MAX_LINE, id_limit};
use crate::error::{Error, Result};

/// What the driver asks every rank to load.
#[derive(Serialize, Deserialize)]
struct LoadArgs {
    /// Per file: the array ids of its labels, offsets, features and values.
    ids: Vec<[u64; 4]>,
    /// The files, as every rank opens them (absolute when the driver could make them so).
    open: Vec<PathBuf>,
    /// The most entries a file may hold.
    limit: u64,
}

/// What each rank tells the others of a file once it has read its range.
#[derive(Clone, Serialize, Deserialize)]
struct Summary {
    /// The file's size, when the rank could see it.
    size: Option<u64>,
    /// Lines read (blank ones too).
    lines: usize,
    samples: usize,
    entries: u64,
    /// The largest 1-based index read, with the line (in the range) where it is first seen.
    max: Option<(u64, usize)>,
    /// The rank's first error, its line in the range.
    fault: Option<Fault>,
}

/// Where a data set is: the samples and entries before each rank's, and the totals (`P +
/// 1` prefix sums each).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Layout {
    pub samples: Vec<usize>,
    pub entries: Vec<u64>,
}

/// A rank's answer: each file's layout and the number of features, or the job's error.
type Answer = std::result::Result<(Vec<Layout>, usize), Fault>;

/// Driver: the LIBSVM files `paths` loaded in place, one data set per file, with one
/// `n_features` covering them all (as `libsvm_pair`).
pub(super) fn libsvm(s: &'static Session, paths: &[&Path]) -> Result<Vec<LibSvm>> {
    let ids: Vec<[u64; 4]> = paths
        .iter()
        .map(|_| std::array::from_fn(|_| crate::array::fresh_id()))
        .collect();
    let args = LoadArgs {
        ids: ids.clone(),
        open: paths
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
            .collect(),
        limit: entry_limit(),
    };
    let answers = spread::run(s, LOAD.name, spread::postcard_args(&args));
    let answers: Vec<Answer> = answers
        .and_then(|a| spread::decode_each(&a))
        .map_err(|e| abandon(&ids, Error::Rank(e)))?;
    let mut first = None;
    for answer in answers {
        let ok = answer.map_err(|f| {
            let path = paths.get(f.file).copied().unwrap_or(paths[0]);
            abandon(&ids, f.error(path))
        })?;
        first.get_or_insert(ok);
    }
    let (layouts, n_features) = first.expect("the driver answers too");
    made(s, &ids, &layouts, n_features).map_err(|e| abandon(&ids, Error::Rank(e)))
}

/// Driver: the data sets whose arrays `ids` (labels, offsets, features, values) every rank
/// made (`keep_parts`), laid out as `layouts`, with `n_features`.
pub(crate) fn made(
    s: &'static Session,
    ids: &[[u64; 4]],
    layouts: &[Layout],
    n_features: usize,
) -> std::result::Result<Vec<LibSvm>, String> {
    let mut sets = Vec::with_capacity(ids.len());
    for (ids, layout) in ids.iter().zip(layouts) {
        // The regions of ranks 1.. of each array: the driver holds rank 0's.
        let away = |at: &dyn Fn(usize) -> u64| -> Vec<(Region, usize)> {
            (1..layout.samples.len() - 1)
                .map(|r| (Region(vec![(at(r), at(r + 1))]), r))
                .collect()
        };
        // Said once per data set: each rank's samples, and their bytes (labels and offsets
        // 8 a sample, features and values 8 an entry).
        let samples: Vec<u64> = layout
            .samples
            .windows(2)
            .map(|w| (w[1] - w[0]) as u64)
            .collect();
        let entries: Vec<u64> = layout.entries.windows(2).map(|w| w[1] - w[0]).collect();
        let bytes: Vec<u64> = samples
            .iter()
            .zip(&entries)
            .map(|(s, e)| 8 * (s + e))
            .collect();
        spread::explain_made(
            ids[0],
            "a LIBSVM set's labels, offsets, features and values",
            "samples",
            &samples,
            &bytes,
        );
        let by_sample = away(&|r| layout.samples[r] as u64);
        let by_offset = away(&|r| layout.samples[r] as u64 + 1);
        let by_entry = away(&|r| layout.entries[r]);
        sets.push(LibSvm {
            labels: dense::take(s, ids[0], by_sample)?,
            offsets: dense::take(s, ids[1], by_offset)?,
            features: dense::take(s, ids[2], by_entry.clone())?,
            values: dense::take(s, ids[3], by_entry)?,
            n_features,
        });
    }
    Ok(sets)
}

/// Every rank lets go of what it made of the arrays `ids` (the load or draw failed), and
/// the driver gives `e`.
pub(crate) fn abandon(ids: &[[u64; 4]], e: Error) -> Error {
    dense::abandon(ids.iter().flatten().copied());
    e
}

#[linkme::distributed_slice(DATA_OPS)]
static LOAD: DataOp = DataOp {
    name: "strads::libsvm",
    run: load_part,
};

fn load_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let args: LoadArgs =
        postcard::from_bytes(args).map_err(|e| format!("libsvm's arguments ({e})"))?;
    let answer: Answer = load(ctx, &args);
    Ok(spread::postcard_args(&answer))
}

/// Reads this rank's range of file `file` (`path`), counting from `before` entries in the
/// lines before the range: its samples (none when `counting`: only its first error matters)
/// and its summary.
fn read_range(
    ctx: &Ctx,
    file: usize,
    path: &Path,
    before: u64,
    limit: u64,
    counting: bool,
) -> (RawLibSvm, Summary) {
    let mut sum = Summary {
        size: None,
        lines: 0,
        samples: 0,
        entries: 0,
        max: None,
        fault: None,
    };
    let size = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(source) => {
            let e = Error::Io {
                path: path.to_path_buf(),
                source,
            };
            sum.fault = Some(Fault::of(file, 0, true, e, ctx.rank));
            return (RawLibSvm::new(path, 0, before, limit), sum);
        }
    };
    sum.size = Some(size);
    let range = byte_range(size, ctx.rank, ctx.size);
    let room = if counting { 0 } else { range.end - range.start };
    let mut raw = RawLibSvm::new(path, room, before, limit);
    raw.counting = counting;
    match Lines::open(path, range, LIBSVM_FORMAT, MAX_LINE) {
        Ok(mut lines) => {
            if let Err(e) = raw.read(path, &mut lines) {
                sum.fault = Some(Fault::of(file, lines.count(), false, e, ctx.rank));
            }
            sum.lines = lines.count();
        }
        Err(e) => sum.fault = Some(Fault::of(file, 0, true, e, ctx.rank)),
    }
    sum.samples = raw.labels.len();
    sum.entries = raw.features.len() as u64;
    sum.max = (raw.max_index > 0).then_some((raw.max_index as u64, raw.max_line));
    (raw, sum)
}

/// An error of file `file` as a whole, at line `line`.
fn parse_fault(file: usize, line: usize, message: String) -> Fault {
    Fault {
        file,
        line,
        global: true,
        failure: Failure::Parse {
            message,
            expected: LIBSVM_FORMAT.to_owned(),
        },
    }
}

fn load(ctx: &mut Ctx, args: &LoadArgs) -> Answer {
    let (me, size) = (ctx.rank, ctx.size);
    // A rank stops at its first error: the files after it do not matter (the error, or
    // one before it, is the job's).
    let mut raws = Vec::with_capacity(args.open.len());
    let mut mine = Vec::with_capacity(args.open.len());
    for (f, path) in args.open.iter().enumerate() {
        let (raw, sum) = read_range(ctx, f, path, 0, args.limit, false);
        let stop = sum.fault.is_some();
        raws.push(raw);
        mine.push(sum);
        if stop {
            break;
        }
    }
    let all: Vec<Vec<Summary>> = ctx.gather_each(&mine, "summaries");
    drop(mine);
    // File by file, as one process reads them: the first error by line, or no samples.
    for (f, path) in args.open.iter().enumerate() {
        let Some(sums) = all.iter().map(|a| a.get(f)).collect::<Option<Vec<_>>>() else {
            // A rank stopped before this file, at an error every rank sees too.
            return Err(other(format!(
                "strads: internal: a rank stopped before file {f} without an error in an \
                 earlier one (please report it)"
            )));
        };
        if let Some(fault) = sizes_differ(path, sums.iter().map(|s| s.size)) {
            return Err(fault);
        }
        let entries_before = |r: usize| sums[..r].iter().map(|s| s.entries).sum::<u64>();
        let lines_before = |r: usize| sums[..r].iter().map(|s| s.lines).sum::<usize>();
        // The entries of the ranks before one, without an error, may bring its own to the
        // limit: it reads its range again counting from them (keeping nothing), which finds
        // the first error one process finds there (every rank knows which ranks do, so
        // all take part).
        let recount: Vec<bool> = (0..size)
            .map(|r| {
                sums[..r].iter().all(|s| s.fault.is_none())
                    && entries_before(r) + sums[r].entries >= args.limit
            })
            .collect();
        let mut faults: Vec<Option<Fault>> = sums.iter().map(|s| s.fault.clone()).collect();
        if recount.iter().any(|&b| b) {
            let again = recount[me]
                .then(|| {
                    read_range(ctx, f, path, entries_before(me), args.limit, true)
                        .1
                        .fault
                })
                .flatten();
            let all_again: Vec<Option<Fault>> = ctx.gather_each(&again, "errors");
            for (r, again) in all_again.into_iter().enumerate() {
                if recount[r] {
                    faults[r] = again;
                }
            }
        }
        // The ranks' lines come in rank order: the first rank's error is the first by line.
        if let Some((r, mut fault)) = faults
            .into_iter()
            .enumerate()
            .find_map(|(r, f)| f.map(|f| (r, f)))
        {
            if !fault.global {
                fault.line += lines_before(r);
                fault.global = true;
            }
            return Err(fault);
        }
        if sums.iter().all(|s| s.samples == 0) {
            let message = "the file has no samples".to_owned();
            return Err(parse_fault(f, lines_before(size) + 1, message));
        }
    }
    // The largest index of each file, at the first line holding it, against the entries
    // of every file loaded together.
    let entries: u64 = all.iter().flatten().map(|s| s.entries).sum();
    let entries = usize::try_from(entries).map_err(|_| other(format!("{entries} entries")))?;
    let mut n_features = 0;
    for f in 0..args.open.len() {
        let mut max: Option<(u64, usize)> = None;
        let mut lines = 0;
        for sums in &all {
            if let Some((index, line)) = sums[f].max
                && max.is_none_or(|(m, _)| index > m)
            {
                max = Some((index, lines + line));
            }
            lines += sums[f].lines;
        }
        if let Some((index, line)) = max {
            if index > id_limit(entries) {
                return Err(parse_fault(f, line, index_message(index, entries)));
            }
            n_features = n_features.max(index as usize);
        }
    }
    // This rank's samples as its regions of the arrays.
    let mut layouts = Vec::with_capacity(raws.len());
    for (f, raw) in raws.into_iter().enumerate() {
        let mut layout = Layout {
            samples: vec![0],
            entries: vec![0],
        };
        for sums in &all {
            layout
                .samples
                .push(layout.samples.last().unwrap_or(&0) + sums[f].samples);
            layout
                .entries
                .push(layout.entries.last().unwrap_or(&0) + sums[f].entries);
        }
        let RawLibSvm {
            labels,
            offsets,
            features,
            values,
            ..
        } = raw;
        keep_parts(args.ids[f], &layout, me, labels, offsets, features, values).map_err(other)?;
        layouts.push(layout);
    }
    Ok((layouts, n_features))
}

/// Keeps rank `me`'s samples (`offsets` from 0 at its first sample) as its regions of the
/// arrays `ids` (labels, offsets, features, values) of a data set laid out as `layout`.
pub(crate) fn keep_parts(
    ids: [u64; 4],
    layout: &Layout,
    me: usize,
    labels: Vec<f32>,
    offsets: Vec<u32>,
    features: Vec<u32>,
    values: Vec<f32>,
) -> std::result::Result<(), String> {
    let n = *layout.samples.last().unwrap_or(&0);
    let nnz = usize::try_from(*layout.entries.last().unwrap_or(&0))
        .map_err(|_| "more entries than this machine addresses".to_string())?;
    let (s0, e0) = (layout.samples[me], layout.entries[me]);
    let e0u = e0 as usize;
    let mut a: DistArray<f32, 1> = dense::zeroed(ids[0], [n])?;
    a.as_mut_slice()[s0..s0 + labels.len()].copy_from_slice(&labels);
    dense::keep(a);
    drop(labels);
    let mut a: DistArray<u32, 1> = dense::zeroed(ids[1], [n + 1])?;
    // Offsets count from the entries before this rank's (at most the limit, a `u32`).
    for (o, &local) in a.as_mut_slice()[s0 + 1..].iter_mut().zip(&offsets[1..]) {
        *o = (e0 + u64::from(local)) as u32;
    }
    dense::keep(a);
    drop(offsets);
    let mut a: DistArray<u32, 1> = dense::zeroed(ids[2], [nnz])?;
    a.as_mut_slice()[e0u..e0u + features.len()].copy_from_slice(&features);
    dense::keep(a);
    drop(features);
    let mut a: DistArray<f32, 1> = dense::zeroed(ids[3], [nnz])?;
    a.as_mut_slice()[e0u..e0u + values.len()].copy_from_slice(&values);
    dense::keep(a);
    Ok(())
}
