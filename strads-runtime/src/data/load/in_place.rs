//! Rating files loaded in place on a cluster job's ranks (docs/design.md, "Arrays"): every
//! rank reads the lines that start in its byte range of each file (the same path on every
//! node), and the ranks agree on what one process reading the files would find: the first
//! error by file and line, the shape, and the CSV ids' dense indices. Each rank keeps its
//! entries as its part of a spread array, so the parts one after the other are the entries
//! one process loads, in the same order.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::dense;
use super::ratings::{Format, Loader, Start, check_max_ids, no_ratings};
use crate::array::SparseArray;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};
use crate::data::in_place::{Fault, byte_range, other, sizes_differ};
use crate::error::{Error, Result};

/// What the driver asks every rank to load.
#[derive(Serialize, Deserialize)]
struct Args {
    /// The array id of each file's part.
    ids: Vec<u64>,
    /// The files, as every rank opens them (absolute when the driver could make them so).
    open: Vec<PathBuf>,
    /// The files as the caller named them.
    shown: Vec<PathBuf>,
    /// A fixed shape (`ratings_with_shape`).
    bounds: Option<[usize; 2]>,
}

/// What each rank tells the others once it has read its ranges.
#[derive(Serialize, Deserialize)]
struct Summary {
    /// Each file's size, as far as the rank got.
    sizes: Vec<u64>,
    /// Lines read of each file's range.
    lines: Vec<usize>,
    /// Ratings read of each file's range.
    entries: Vec<u64>,
    /// Each file's largest 1-based ids in the range, with the line (in the range) of each.
    max: Vec<[(usize, usize); 2]>,
    fault: Option<Fault>,
}

/// What a rank answers the driver: the shape and each file's part, or the error.
type Answer = std::result::Result<([usize; 2], Vec<Facts>), Fault>;

/// Driver: `paths` loaded in place on the job's ranks, one spread array per file.
pub(super) fn ratings(
    s: &'static Session,
    paths: &[&Path],
    bounds: Option<[usize; 2]>,
) -> Result<Vec<SparseArray<f32, 2>>> {
    let ids: Vec<u64> = paths.iter().map(|_| crate::array::fresh_id()).collect();
    let open = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
        .collect();
    let shown = paths.iter().map(|p| p.to_path_buf()).collect();
    let args = Args {
        ids,
        open,
        shown,
        bounds,
    };
    let answers = spread::run(s, LOAD.name, spread::postcard_args(&args)).map_err(Error::Rank)?;
    let answers: Vec<Answer> = spread::decode_each(&answers).map_err(Error::Rank)?;
    let mut per_file = vec![Vec::with_capacity(answers.len()); paths.len()];
    let mut shape = [0; 2];
    for answer in answers {
        let (s, facts) = answer.map_err(|f| {
            let path = paths.get(f.file).copied().unwrap_or(paths[0]);
            f.error(path)
        })?;
        shape = s;
        for (f, facts) in facts.into_iter().enumerate() {
            per_file[f].push(facts);
        }
    }
    args.ids
        .iter()
        .zip(&per_file)
        .map(|(&id, facts)| spread::made(s, id, shape, facts).map_err(Error::Rank))
        .collect()
}

#[linkme::distributed_slice(DATA_OPS)]
static LOAD: DataOp = DataOp {
    name: "strads::load_ratings",
    run: load_part,
};

/// One rank's part of the files: the same answer on every rank but for the facts.
fn load_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let args: Args = postcard::from_bytes(args).map_err(|e| format!("load's arguments ({e})"))?;
    let answer: Answer = load(ctx, &args);
    Ok(spread::postcard_args(&answer))
}

fn load(ctx: &mut Ctx, args: &Args) -> Answer {
    let (me, size) = (ctx.rank, ctx.size);
    let mut loader = Loader::new(args.bounds);
    let mut read = Summary {
        sizes: Vec::new(),
        lines: Vec::new(),
        entries: Vec::new(),
        max: Vec::new(),
        fault: None,
    };
    let mut entries = Vec::new();
    let mut starts: Vec<Option<Start>> = Vec::new();
    let mut csv_ends = Vec::new();
    for (f, path) in args.open.iter().enumerate() {
        let bytes = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(source) => {
                let e = Error::Io {
                    path: path.clone(),
                    source,
                };
                read.fault = Some(Fault::of(f, 0, true, e, me));
                break;
            }
        };
        read.sizes.push(bytes);
        let start = match loader.detect(path, &args.shown[f]) {
            Ok(start) => start,
            Err(e) => {
                read.fault = Some(Fault::of(f, 0, true, e, me));
                break;
            }
        };
        let (file_entries, lines, error) =
            loader.load_range(path, byte_range(bytes, me, size), start.as_ref());
        starts.push(start);
        read.lines.push(lines);
        read.entries.push(file_entries.len() as u64);
        read.max.push(loader.file_max());
        csv_ends.push(loader.ids_met());
        entries.push(file_entries);
        if let Some(e) = error {
            read.fault = Some(Fault::of(f, lines, false, e, me));
            break;
        }
    }
    let all: Vec<Summary> = ctx.gather_each(&read, "summary");
    first_fault(&all, &args.open, &starts, &loader)?;

    let files = args.open.len();
    let shape = match (args.bounds, loader.first_format()) {
        (Some(shape), _) => shape,
        (None, Some(Format::Csv)) => {
            // Dense indices, agreed; then every entry's local indices become them.
            let ids = loader.ids_in_order();
            let mut shape = [0; 2];
            let mut local_to_global: [Vec<u32>; 2] = Default::default();
            for d in 0..2 {
                let ends: Vec<usize> = csv_ends.iter().map(|e: &[usize; 2]| e[d]).collect();
                let (index, total, _) = dense::agree(ctx, &ids[d], &ends).map_err(other)?;
                local_to_global[d] = index;
                shape[d] = total;
            }
            for file in &mut entries {
                for (idx, _) in file.iter_mut() {
                    *idx = [0, 1].map(|d| local_to_global[d][idx[d]] as usize);
                }
            }
            shape
        }
        (None, _) => [0, 1].map(|d| {
            all.iter()
                .flat_map(|s| s.max.iter().map(|m| m[d].0))
                .max()
                .unwrap_or(0)
        }),
    };
    let mut facts = Vec::with_capacity(files);
    for (f, file) in entries.into_iter().enumerate() {
        let (keys, values): (Vec<[u32; 2]>, Vec<f32>) = file
            .into_iter()
            .map(|(idx, v)| (idx.map(|i| i as u32), v))
            .unzip();
        facts.push(spread::keep_new(args.ids[f], keys, values));
    }
    Ok((shape, facts))
}

/// The error one process reading the files would meet first, from every rank's summary:
/// a disagreement on a file's size, else the first by file and line of the ranks' errors,
/// the files without ratings, and the largest ids beyond the limit.
fn first_fault(
    all: &[Summary],
    open: &[PathBuf],
    starts: &[Option<Start>],
    loader: &Loader,
) -> std::result::Result<(), Fault> {
    for (f, path) in open.iter().enumerate() {
        if let Some(fault) = sizes_differ(path, all.iter().map(|s| s.sizes.get(f).copied())) {
            return Err(fault);
        }
    }
    let files = open.len();
    // Lines of file `f` before rank `r`'s range.
    let before = |f: usize, r: usize| -> usize {
        all[..r]
            .iter()
            .map(|s| s.lines.get(f).copied().unwrap_or(0))
            .sum()
    };
    let mut faults: Vec<Fault> = Vec::new();
    for (r, s) in all.iter().enumerate() {
        if let Some(fault) = &s.fault {
            let mut fault = fault.clone();
            if !fault.global {
                fault.line += before(fault.file, r);
                fault.global = true;
            }
            faults.push(fault);
        }
    }
    let mut total = 0u64;
    for (f, path) in open.iter().enumerate() {
        let n: u64 = all
            .iter()
            .map(|s| s.entries.get(f).copied().unwrap_or(0))
            .sum();
        total += n;
        if n == 0 {
            let lines = before(f, all.len());
            // As one process says it: this file's format, else the first earlier file's
            // (a later file's format is not known to it yet).
            let format = starts[..starts.len().min(f + 1)]
                .iter()
                .rev()
                .find_map(|s| s.as_ref().map(|s| s.format));
            let e = no_ratings(path, lines + 1, format);
            faults.push(Fault::of(f, lines + 1, true, e, 0));
        }
    }
    if let Some(first) = faults.into_iter().min_by_key(|f| (f.file, f.line)) {
        return Err(first);
    }
    if loader.first_format() == Some(Format::Whitespace) && !loader.has_bounds() {
        // The first line holding each dimension's largest id, files and ranks in order.
        let mut max = [(0usize, 0usize, 0usize); 2];
        for f in 0..files {
            for (r, s) in all.iter().enumerate() {
                for (m, &(id, line)) in max.iter_mut().zip(&s.max[f]) {
                    if id > m.0 {
                        *m = (id, f, line + before(f, r));
                    }
                }
            }
        }
        let at = |d: usize| (max[d].0, open[max[d].1].as_path(), max[d].2);
        let ratings = usize::try_from(total).unwrap_or(usize::MAX);
        if let Err((d, e)) = check_max_ids([at(0), at(1)], ratings) {
            return Err(Fault::of(max[d].1, max[d].2, true, e, 0));
        }
    }
    Ok(())
}
