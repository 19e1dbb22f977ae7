//! Knowledge graphs drawn in place on a cluster job's ranks: every rank draws the sequence
//! one process draws, in chunks; the ranks find each chunk's new triples together (each
//! remembers the keys that hash to it: `first_occurrences`), so every rank knows which
//! draws are the graph's distinct triples, and keeps its range of each set as its rows of
//! the set's `[n, 3]` array. One process's arrays are the ranks' rows one after the other.

use super::super::{Dedupe, check_memory, first_occurrences, in_place_range};
use super::{DRAWS_PER_TRIPLE, Graph, KgConfig, check, too_few};
use crate::array::DistArray;
use crate::cluster::proto::Region;
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, dense};
use crate::error::{Error, Result};
use crate::load::KgArrays;

/// Draws per chunk: the ranks find each chunk's first occurrences in one exchange.
const CHUNK: usize = 1 << 16;

/// `KgConfig`'s fields, as they cross: the sizes (entities, relations, train, valid, test,
/// cluster size), the noise and the two exponents, and the seed.
type Params = ([u64; 6], [f64; 3], u64);

/// What the driver asks every rank to draw: the sets' array ids and the parameters.
type DrawArgs = ([u64; 3], Params);

/// A rank's answer: `Err(found)` when the draws found too few distinct triples.
type Drawn = std::result::Result<(), usize>;

fn params(c: &KgConfig) -> Params {
    (
        [
            c.entities,
            c.relations,
            c.train,
            c.valid,
            c.test,
            c.cluster_size,
        ]
        .map(|v| v as u64),
        [c.noise, c.entity_zipf, c.relation_zipf],
        c.seed,
    )
}

fn config((sizes, floats, seed): Params) -> std::result::Result<KgConfig, String> {
    let [entities, relations, train, valid, test, cluster_size] = sizes
        .map(|v| usize::try_from(v).map_err(|_| format!("a size of {v}")))
        .into_iter()
        .collect::<std::result::Result<Vec<usize>, String>>()?
        .try_into()
        .map_err(|_| "six sizes".to_string())?;
    let [noise, entity_zipf, relation_zipf] = floats;
    Ok(KgConfig {
        entities,
        relations,
        train,
        valid,
        test,
        cluster_size,
        noise,
        entity_zipf,
        relation_zipf,
        seed,
    })
}

/// The rows of each set (train, valid, test) that rank `rank` of `size` keeps.
fn ranges(c: &KgConfig, rank: usize, size: usize) -> [std::ops::Range<usize>; 3] {
    [c.train, c.valid, c.test].map(|n| in_place_range(n, rank, size))
}

/// Driver: the graph of `cfg` (checked: `wanted` triples) drawn in place.
pub(super) fn arrays(s: &'static Session, cfg: &KgConfig, wanted: usize) -> Result<KgArrays> {
    let share = wanted / s.size() + 1;
    check_memory(
        &format!("{share} generated triples (a rank's share)"),
        u64::try_from(share as u128 * 28).ok(),
    )?;
    let ids: [u64; 3] = std::array::from_fn(|_| crate::array::fresh_id());
    let abandon = |e: Error| {
        dense::abandon(ids);
        e
    };
    let args: DrawArgs = (ids, params(cfg));
    let answers: Vec<Drawn> = dense::answers(s, DRAW.name, spread::postcard_args(&args), &ids)?;
    if let Some(Err(found)) = answers.iter().find(|a| a.is_err()) {
        return Err(abandon(too_few(cfg, wanted, *found)));
    }
    let mut sets = Vec::with_capacity(3);
    for (f, (what, n)) in [
        ("train", cfg.train),
        ("valid", cfg.valid),
        ("test", cfg.test),
    ]
    .into_iter()
    .enumerate()
    {
        let rows: Vec<std::ops::Range<usize>> = (0..s.size())
            .map(|r| ranges(cfg, r, s.size())[f].clone())
            .collect();
        let per_rank: Vec<u64> = rows.iter().map(|r| r.len() as u64).collect();
        let bytes: Vec<u64> = per_rank.iter().map(|n| 12 * n).collect();
        spread::explain_made(
            ids[f],
            &format!("a generated knowledge graph's {what} triples ({n})"),
            "triples",
            &per_rank,
            &bytes,
        );
        let away: Vec<(Region, usize)> = rows
            .iter()
            .enumerate()
            .skip(1)
            .map(|(r, rows)| {
                (
                    Region(vec![(3 * rows.start as u64, 3 * rows.end as u64)]),
                    r,
                )
            })
            .collect();
        sets.push(dense::take::<u32, 2>(s, ids[f], away).map_err(|e| abandon(Error::Rank(e)))?);
    }
    let [train, valid, test]: [DistArray<u32, 2>; 3] = sets
        .try_into()
        .unwrap_or_else(|_| unreachable!("three sets"));
    Ok(KgArrays {
        entities: cfg.entities,
        relations: cfg.relations,
        train,
        valid,
        test,
        entity_names: (0..cfg.entities).map(|e| format!("e{e}")).collect(),
        relation_names: (0..cfg.relations).map(|r| format!("r{r}")).collect(),
    })
}

#[linkme::distributed_slice(DATA_OPS)]
static DRAW: DataOp = DataOp {
    name: "strads::kg_like",
    run: draw_part,
};

/// One rank's part of a generated graph: the whole sequence drawn, the distinct triples
/// found with the other ranks chunk by chunk, this rank's range of each set kept.
fn draw_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (ids, p): DrawArgs =
        postcard::from_bytes(args).map_err(|e| format!("kg_like's arguments ({e})"))?;
    let cfg = config(p)?;
    let wanted = check(&cfg).map_err(|e| e.to_string())?;
    let (me, size) = (ctx.rank, ctx.size);
    // Each set's rows this rank keeps, as positions among all the distinct triples,
    // written where they go as they are found (into arrays of the whole shape whose other
    // pages are never written). An array this rank cannot make fails the operation after
    // the draws, which every rank takes part in.
    let starts = [0, cfg.train, cfg.train + cfg.valid];
    let keep = ranges(&cfg, me, size);
    let made: std::result::Result<Vec<DistArray<u32, 2>>, String> =
        [cfg.train, cfg.valid, cfg.test]
            .iter()
            .zip(ids)
            .map(|(&n, id)| dense::zeroed(id, [n, 3]))
            .collect();
    let (mut sets, failed) = match made {
        Ok(sets) => (sets, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut graph = Graph::new(&cfg);
    let mut dedupe = Dedupe::new(wanted / size + 1);
    let limit = wanted.saturating_mul(DRAWS_PER_TRIPLE);
    let (mut found, mut drawn) = (0usize, 0usize);
    let (mut triples, mut keys) = (Vec::new(), Vec::new());
    while found < wanted && drawn < limit {
        let n = CHUNK.min(limit - drawn);
        triples.clear();
        keys.clear();
        for _ in 0..n {
            let (t, k) = graph.draw();
            triples.push(t);
            keys.push(k);
        }
        drawn += n;
        let fresh = first_occurrences(ctx, &mut dedupe, &keys);
        for (t, _) in triples.iter().zip(fresh).filter(|(_, f)| *f) {
            if found == wanted {
                break;
            }
            let set = starts.partition_point(|&s| s <= found) - 1;
            let row = found - starts[set];
            if keep[set].contains(&row) && failed.is_none() {
                sets[set].as_mut_slice()[3 * row..3 * row + 3].copy_from_slice(t);
            }
            found += 1;
        }
    }
    drop(dedupe);
    if found < wanted {
        return Ok(spread::postcard_args(&Drawn::Err(found)));
    }
    if let Some(e) = failed {
        return Err(format!("the sets' arrays could not be made here: {e}"));
    }
    for a in sets {
        dense::keep(a);
    }
    Ok(spread::postcard_args(&Drawn::Ok(())))
}
