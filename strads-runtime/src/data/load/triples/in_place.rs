//! Knowledge graphs loaded in place on a cluster job's ranks (docs/design.md, "Arrays"):
//! every rank reads the lines that start in its byte range of each triple file (the same
//! path on every node) and keeps their triples as its rows of the set's `[n, 3]` array,
//! made in place (`cluster::spread::dense`). One process's arrays are the ranks' rows one
//! after the other, so every plan and every bit stay those of threads.
//!
//! The ranks agree on what one process finds: each file's number of triples (OpenKE's
//! count line is the first non-blank line of the file, whichever rank reads it), and for
//! text triples the dense numbering of names in order of first appearance (`dense::agree`:
//! a rank owns each name, by a hash, and learns where it first appears; every rank holds
//! the names of its own ranges). A malformed line makes every
//! rank give up alike, and the driver reads the files again keeping nothing
//! (`super::check`), so the error is exactly the one one process gives.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::super::dense as agreed;
use super::{
    KgArrays, Layout, Names, OPENKE, OPENKE_TRIPLES, TEXT_TRIPLES, check, openke_names,
    openke_triple, text_triple,
};
use crate::array::DistArray;
use crate::cluster::proto::Region;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, dense};
use crate::data::in_place::{Fault, byte_range, other, sizes_differ};
use crate::data::text::{Lines, MAX_LINE, parse_uint, trim};
use crate::error::{Error, Result};

/// What the driver asks every rank to load.
#[derive(Serialize, Deserialize)]
struct Args {
    /// The array ids of the train, valid and test sets.
    ids: [u64; 3],
    /// The triple files, as every rank opens them (absolute when the driver could make
    /// them so).
    open: Vec<PathBuf>,
    layout: Layout,
    /// OpenKE: the numbers of entities and relations (the id files, read on the driver).
    counts: Option<(usize, usize)>,
}

/// What each rank tells the others once it has read its ranges.
#[derive(Serialize, Deserialize)]
struct Summary {
    /// Each file's size, as far as the rank got.
    sizes: Vec<u64>,
    /// Triples read of each file's range (OpenKE: its first non-blank line aside).
    triples: Vec<u64>,
    /// OpenKE: each file's first non-blank line in the range, trimmed (the count line
    /// when no rank before holds one, else a triple).
    first: Vec<Option<Vec<u8>>>,
    /// The rank could not open or read a file: the error, at the file it stopped at.
    fault: Option<Fault>,
    /// The rank met a line it could not read, in the last file it read.
    bad: bool,
}

/// A rank's answer to the driver.
#[derive(Serialize, Deserialize)]
enum Answer {
    /// Each file's rows before every rank (`P + 1` prefix sums), the numbers of entities
    /// and relations, and (text triples) the `(index, name)` of the entities and relations
    /// that appear first in this rank's ranges.
    Made {
        rows: Vec<Vec<u64>>,
        entities: usize,
        relations: usize,
        names: [Vec<(u32, String)>; 2],
    },
    /// An error a rank met that reading the files again would not find (a file it cannot
    /// open, sizes that differ between ranks, memory).
    Fault(Fault),
    /// A malformed file: the driver finds the error one process gives.
    Bad,
}

/// Driver: the graph in `dir` (of `layout`) loaded in place.
pub(super) fn arrays(s: &'static Session, dir: &Path, layout: Layout) -> Result<KgArrays> {
    let (counts, mut names) = match layout {
        Layout::OpenKe => {
            let e = openke_names(&dir.join(OPENKE[3]))?;
            let r = openke_names(&dir.join(OPENKE[4]))?;
            (Some((e.len(), r.len())), [e, r])
        }
        Layout::Text => (None, Default::default()),
    };
    let ids: [u64; 3] = std::array::from_fn(|_| crate::array::fresh_id());
    let files = layout.triple_files().map(|f| dir.join(f));
    let args = Args {
        ids,
        open: files
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect(),
        layout,
        counts,
    };
    let abandon = |e: Error| {
        dense::abandon(ids);
        e
    };
    let answers: Vec<Answer> = dense::answers(s, LOAD.name, spread::postcard_args(&args), &ids)?;
    let mut made = None;
    for answer in answers {
        match answer {
            Answer::Fault(f) => {
                let path = files.get(f.file).unwrap_or(&files[0]).clone();
                return Err(abandon(f.error(&path)));
            }
            Answer::Bad => {
                dense::abandon(ids);
                check(dir, layout)?;
                return Err(Error::Rank(format!(
                    "the job's ranks found a malformed line in {}, which this process, \
                     reading the files again, does not find: every node must see the same \
                     files",
                    dir.display()
                )));
            }
            Answer::Made {
                rows,
                entities,
                relations,
                names: first_here,
            } => {
                if layout == Layout::Text {
                    for (k, (n, pairs)) in [entities, relations].iter().zip(first_here).enumerate()
                    {
                        names[k].resize(*n, String::new());
                        for (i, name) in pairs {
                            if let Some(slot) = names[k].get_mut(i as usize) {
                                *slot = name;
                            }
                        }
                    }
                }
                made.get_or_insert((rows, entities, relations));
            }
        }
    }
    let (rows, entities, relations) = made.expect("the driver answers too");
    let mut sets = Vec::with_capacity(3);
    for (f, what) in ["train", "valid", "test"].iter().enumerate() {
        let at = &rows[f];
        let per_rank: Vec<u64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let bytes: Vec<u64> = per_rank.iter().map(|n| 12 * n).collect();
        spread::explain_made(
            ids[f],
            &format!("a knowledge graph's {what} triples"),
            "triples",
            &per_rank,
            &bytes,
        );
        let away: Vec<(Region, usize)> = (1..at.len() - 1)
            .map(|r| (Region(vec![(3 * at[r], 3 * at[r + 1])]), r))
            .collect();
        sets.push(dense::take::<u32, 2>(s, ids[f], away).map_err(|e| abandon(Error::Rank(e)))?);
    }
    let [train, valid, test]: [DistArray<u32, 2>; 3] = sets
        .try_into()
        .unwrap_or_else(|_| unreachable!("three sets"));
    let [entity_names, relation_names] = names;
    Ok(KgArrays {
        entities,
        relations,
        train,
        valid,
        test,
        entity_names,
        relation_names,
    })
}

#[linkme::distributed_slice(DATA_OPS)]
static LOAD: DataOp = DataOp {
    name: "strads::load_triples",
    run: load_part,
};

fn load_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let args: Args =
        postcard::from_bytes(args).map_err(|e| format!("the triples' arguments ({e})"))?;
    let answer = load(ctx, &args);
    Ok(spread::postcard_args(&answer))
}

/// Names numbered in order of first appearance in one rank's ranges, with how many it had
/// met by the end of each file (what `dense::agree` takes).
#[derive(Default)]
struct Local {
    names: Names,
    ends: Vec<usize>,
}

/// This rank's triples of each file it read (text triples: in its own names' numbers),
/// its names, and what it tells the others.
fn read(ctx: &Ctx, args: &Args) -> (Vec<Vec<[u32; 3]>>, [Local; 2], Summary) {
    let (me, size) = (ctx.rank, ctx.size);
    let (entities, relations) = args.counts.unwrap_or((0, 0));
    let expected = match args.layout {
        Layout::OpenKe => OPENKE_TRIPLES,
        Layout::Text => TEXT_TRIPLES,
    };
    let mut sum = Summary {
        sizes: Vec::new(),
        triples: Vec::new(),
        first: Vec::new(),
        fault: None,
        bad: false,
    };
    let mut names: [Local; 2] = Default::default();
    let mut sets = Vec::with_capacity(args.open.len());
    for (f, path) in args.open.iter().enumerate() {
        let io = |e: Error| Some(Fault::of(f, 0, true, e, me));
        let bytes = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(source) => {
                sum.fault = io(Error::Io {
                    path: path.clone(),
                    source,
                });
                break;
            }
        };
        sum.sizes.push(bytes);
        let mut lines = match Lines::open(path, byte_range(bytes, me, size), expected, MAX_LINE) {
            Ok(lines) => lines,
            Err(e) => {
                sum.fault = io(e);
                break;
            }
        };
        let (mut set, mut first) = (Vec::new(), None);
        loop {
            match lines.advance() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(Error::Parse { .. }) => {
                    sum.bad = true;
                    break;
                }
                Err(e) => {
                    sum.fault = io(e);
                    break;
                }
            }
            let line = trim(lines.line());
            if line.is_empty() {
                continue;
            }
            let triple = match args.layout {
                Layout::OpenKe if first.is_none() => {
                    first = Some(line.to_vec());
                    continue;
                }
                Layout::OpenKe => openke_triple(line, entities, relations).ok(),
                Layout::Text => text_triple(line).ok().and_then(|[h, r, t]| {
                    let [e, rel] = &mut names;
                    Some([e.names.id(h)?, rel.names.id(r)?, e.names.id(t)?])
                }),
            };
            match triple {
                Some(t) => set.push(t),
                None => {
                    sum.bad = true;
                    break;
                }
            }
        }
        for local in &mut names {
            local.ends.push(local.names.names.len());
        }
        sum.triples.push(set.len() as u64);
        sum.first.push(first);
        sets.push(set);
        if sum.bad || sum.fault.is_some() {
            break;
        }
    }
    (sets, names, sum)
}

fn load(ctx: &mut Ctx, args: &Args) -> Answer {
    let (me, size) = (ctx.rank, ctx.size);
    let (mut sets, names, sum) = read(ctx, args);
    let all: Vec<Summary> = ctx.gather_each(&sum, "summaries");
    drop(sum);
    let (entities, relations) = args.counts.unwrap_or((0, 0));
    // File by file, as one process reads them.
    let mut totals = Vec::with_capacity(args.open.len());
    for (f, path) in args.open.iter().enumerate() {
        // The first rank (by line) that stopped in this file: its error, or a malformed
        // line one process finds again (unless the ranks see the file at different
        // sizes, which says more).
        let stopped = |s: &Summary| {
            s.fault.as_ref().is_some_and(|x| x.file == f) || (s.bad && s.sizes.len() == f + 1)
        };
        if let Some(s) = all.iter().find(|s| stopped(s)) {
            return match (
                &s.fault,
                sizes_differ(path, all.iter().map(|s| s.sizes.get(f).copied())),
            ) {
                (Some(fault), _) => Answer::Fault(fault.clone()),
                (None, Some(fault)) => Answer::Fault(fault),
                (None, None) => Answer::Bad,
            };
        }
        if let Some(fault) = sizes_differ(path, all.iter().map(|s| s.sizes.get(f).copied())) {
            return Answer::Fault(fault);
        }
        let mut total: u64 = all.iter().map(|s| s.triples[f]).sum();
        if args.layout == Layout::OpenKe {
            // The first non-blank line of the file is its count; every rank's other first
            // line is a triple, which it keeps before its others.
            let firsts: Vec<(usize, &[u8])> = all
                .iter()
                .enumerate()
                .filter_map(|(r, s)| s.first[f].as_deref().map(|l| (r, l)))
                .collect();
            let Some(&(_, count)) = firsts.first() else {
                return Answer::Bad;
            };
            let Ok(count) = parse_uint(count) else {
                return Answer::Bad;
            };
            for &(r, line) in &firsts[1..] {
                let Ok(t) = openke_triple(line, entities, relations) else {
                    return Answer::Bad;
                };
                if r == me {
                    sets[f].insert(0, t);
                }
            }
            total += firsts.len() as u64 - 1;
            if total != count {
                return Answer::Bad;
            }
        }
        if total == 0 {
            return Answer::Bad;
        }
        totals.push(total);
    }
    // Text triples: the names' indices, agreed; every triple's local numbers become them.
    let mut counts = [entities, relations];
    let mut first_here: [Vec<(u32, String)>; 2] = Default::default();
    if args.layout == Layout::Text {
        let mut index: [Vec<u32>; 2] = Default::default();
        for (k, local) in names.iter().enumerate() {
            match agreed::agree(ctx, &local.names.names, &local.ends) {
                Ok((i, total, new)) => {
                    first_here[k] = local
                        .names
                        .names
                        .iter()
                        .zip(&new)
                        .zip(&i)
                        .filter(|&((_, &n), _)| n)
                        .map(|((name, _), &i)| (i, name.clone()))
                        .collect();
                    index[k] = i;
                    counts[k] = total;
                }
                Err(_) => return Answer::Bad,
            }
        }
        drop(names);
        for set in &mut sets {
            for [h, r, t] in set.iter_mut() {
                *h = index[0][*h as usize];
                *r = index[1][*r as usize];
                *t = index[0][*t as usize];
            }
        }
    }
    // This rank's triples as its rows of the three arrays.
    let mut rows = Vec::with_capacity(totals.len());
    for (f, set) in sets.into_iter().enumerate() {
        let mut at = vec![0u64];
        for r in 0..size {
            // An OpenKE rank's first line is a triple when a rank before it holds the count.
            let first_is_triple = args.layout == Layout::OpenKe
                && all[r].first[f].is_some()
                && all[..r].iter().any(|s| s.first[f].is_some());
            at.push(at[r] + all[r].triples[f] + u64::from(first_is_triple));
        }
        let kept = usize::try_from(totals[f])
            .map_err(|_| format!("{} triples", totals[f]))
            .and_then(|n| dense::zeroed::<u32, 2>(args.ids[f], [n, 3]));
        let mut a = match kept {
            Ok(a) => a,
            Err(e) => return Answer::Fault(other(e)),
        };
        let from = 3 * at[me] as usize;
        for (row, t) in a.as_mut_slice()[from..from + 3 * set.len()]
            .chunks_exact_mut(3)
            .zip(&set)
        {
            row.copy_from_slice(t);
        }
        dense::keep(a);
        rows.push(at);
    }
    Answer::Made {
        rows,
        entities: counts[0],
        relations: counts[1],
        names: first_here,
    }
}
