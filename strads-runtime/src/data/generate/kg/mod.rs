//! Knowledge graphs whose relations are translations between clusters of entities
//! ([`kg_like`]), shaped like FB15k-237.

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::Result;
use crate::load::{KgArrays, KnowledgeGraph, U64BuildHasher};

use super::{MAX_DIM, bad_parameter, check_memory};

/// Draws per requested triple before the generator gives up finding distinct ones.
const DRAWS_PER_TRIPLE: usize = 20;

/// Parameters of [`kg_like`].
///
/// The default has the shape of FB15k-237: 14 541 entities, 237 relations, 272 115 /
/// 17 535 / 20 466 training, validation and test triples; clusters of 128 entities, 10% of
/// tails drawn at random, Zipf exponent 0.8 over entities and 1.0 over relations, seed 42.
///
/// ```
/// use strads_runtime::generate::KgConfig;
/// let small = KgConfig { entities: 500, relations: 10, train: 5_000, valid: 200, test: 200, ..Default::default() };
/// assert_eq!(small.cluster_size, 128);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KgConfig {
    /// Number of entities.
    pub entities: usize,
    /// Number of relations.
    pub relations: usize,
    /// Training triples.
    pub train: usize,
    /// Validation triples.
    pub valid: usize,
    /// Test triples.
    pub test: usize,
    /// Entities per cluster (about): the heads and the tails of a relation.
    pub cluster_size: usize,
    /// Fraction of triples whose tail is any entity, drawn uniformly (0 to 1).
    pub noise: f64,
    /// Exponent of the Zipf distribution of the entities' popularity within their
    /// cluster (0 = uniform).
    pub entity_zipf: f64,
    /// Exponent of the Zipf distribution of the relations' frequency (0 = uniform).
    pub relation_zipf: f64,
    /// Seed of the xoshiro256++ generator: the same config gives the same graph.
    pub seed: u64,
}

impl Default for KgConfig {
    fn default() -> Self {
        KgConfig {
            entities: 14_541,
            relations: 237,
            train: 272_115,
            valid: 17_535,
            test: 20_466,
            cluster_size: 128,
            noise: 0.1,
            entity_zipf: 0.8,
            relation_zipf: 1.0,
            seed: 42,
        }
    }
}

/// A synthetic knowledge graph that a translation model (TransE) can learn.
///
/// Entities fall into `C = entities / cluster_size` clusters (a random assignment). Each
/// relation `r` links a source cluster `A_r` to another, target cluster `B_r` (drawn
/// uniformly): its triples have a head in `A_r` and a tail in `B_r`, so TransE can model it
/// as the translation from `A_r`'s centre to `B_r`'s. With probability `cfg.noise` the tail
/// is any entity instead. Entities have a popularity (a random permutation of ranks):
/// within a cluster, heads and tails are drawn with Zipf-skewed popularity (exponent
/// `cfg.entity_zipf`), the same order for every relation, so a model can rank the popular
/// members of a cluster first; relations are drawn with Zipf-skewed frequency.
///
/// Triples are distinct; the first `cfg.train` drawn form the training set, the next
/// `cfg.valid` the validation set and the last `cfg.test` the test set, so all three come
/// from the same distribution (an entity may be missing from the training set, as in real
/// data). Names are `e<id>` and `r<id>`. Everything is deterministic for `cfg.seed`.
///
/// # Panics
/// When [`try_kg_like`] fails.
///
/// ```
/// use strads_runtime::generate::{kg_like, KgConfig};
/// let kg = kg_like(&KgConfig { entities: 500, relations: 10, train: 5_000, valid: 200, test: 200, ..Default::default() });
/// assert_eq!((kg.entities, kg.relations), (500, 10));
/// assert_eq!((kg.train.len(), kg.valid.len(), kg.test.len()), (5_000, 200, 200));
/// assert!(kg.train.iter().all(|&[h, r, t]| h < 500 && r < 10 && t < 500));
/// ```
pub fn kg_like(cfg: &KgConfig) -> KnowledgeGraph {
    try_kg_like(cfg).unwrap_or_else(|e| panic!("kg_like: {e}"))
}

/// [`kg_like`], with bad parameters as errors.
///
/// # Errors
/// [`Error::Setting`](crate::Error::Setting) naming the parameter when `entities`,
/// `relations` or `cluster_size` is 0 or `entities` or `relations` exceeds [`MAX_DIM`],
/// `noise` is not within `[0, 1]`, an exponent is negative or not finite, or more distinct
/// triples are asked for than the graph's structure makes likely;
/// [`Error::Alloc`](crate::Error::Alloc) when the triples would not fit in memory.
///
/// ```
/// use strads_runtime::generate::{try_kg_like, KgConfig};
/// let e = try_kg_like(&KgConfig { noise: 2.0, ..Default::default() });
/// assert_eq!(
///     e.unwrap_err().to_string(),
///     "invalid setting KgConfig.noise=\"2\": a number from 0 to 1"
/// );
/// ```
pub fn try_kg_like(cfg: &KgConfig) -> Result<KnowledgeGraph> {
    let wanted = check(cfg)?;
    // The triples (12 bytes) and their keys in the set (about 16 bytes each).
    check_memory(
        &format!("{wanted} generated triples"),
        u64::try_from(wanted as u128 * 28).ok(),
    )?;
    let mut graph = Graph::new(cfg);
    let mut seen: HashSet<u64, U64BuildHasher> =
        HashSet::with_capacity_and_hasher(wanted, U64BuildHasher::default());
    let mut triples: Vec<[u32; 3]> = Vec::with_capacity(wanted);
    for _ in 0..wanted.saturating_mul(DRAWS_PER_TRIPLE) {
        if triples.len() == wanted {
            break;
        }
        let (triple, key) = graph.draw();
        if seen.insert(key) {
            triples.push(triple);
        }
    }
    if triples.len() < wanted {
        return Err(too_few(cfg, wanted, triples.len()));
    }
    let test_set = triples.split_off(cfg.train + cfg.valid);
    let valid_set = triples.split_off(cfg.train);
    Ok(KnowledgeGraph {
        entities: cfg.entities,
        relations: cfg.relations,
        train: triples,
        valid: valid_set,
        test: test_set,
        entity_names: (0..cfg.entities).map(|e| format!("e{e}")).collect(),
        relation_names: (0..cfg.relations).map(|r| format!("r{r}")).collect(),
    })
}

/// [`try_kg_like`]'s graph with its triple sets as `[n, 3]` arrays ([`KgArrays`], as
/// [`KnowledgeGraph::into_arrays`] makes them). On a cluster job's driver the graph is
/// drawn in place: every rank draws the sequence one process draws, the distinct triples
/// are found by the ranks together (each remembers the triples whose key hashes to it, and
/// one bit a draw tells the others which draws are new), and each rank keeps its range of
/// each set, so no process holds the graph or all of its keys.
///
/// # Errors
/// Those of [`try_kg_like`] (memory: for a rank's share, on a cluster); on a cluster
/// job's driver [`Error::Rank`](crate::Error::Rank) when a rank fails.
///
/// ```
/// use strads_runtime::generate::{KgConfig, kg_like_arrays};
/// let kg = kg_like_arrays(&KgConfig {
///     entities: 500,
///     relations: 10,
///     train: 5_000,
///     valid: 200,
///     test: 200,
///     ..Default::default()
/// })?;
/// assert_eq!((kg.train.shape(), kg.triples()), ([5_000, 3], 5_400));
/// # Ok::<(), strads_runtime::Error>(())
/// ```
pub fn kg_like_arrays(cfg: &KgConfig) -> Result<KgArrays> {
    let wanted = check(cfg)?;
    if let Some(s) = crate::cluster::job::data_driver() {
        return in_place::arrays(s, cfg, wanted);
    }
    Ok(try_kg_like(cfg)?.into_arrays())
}

/// The error when the draws found only `found` distinct triples of the `wanted`.
fn too_few(cfg: &KgConfig, wanted: usize, found: usize) -> crate::Error {
    bad_parameter(
        "KgConfig.train",
        cfg.train,
        &format!(
            "fewer triples: {} draws found only {found} distinct ones of the {wanted} asked \
             for; give more entities or relations, larger clusters or more noise",
            wanted.saturating_mul(DRAWS_PER_TRIPLE),
        ),
    )
}

/// Checks the parameters of `cfg`: the number of triples wanted in all.
fn check(cfg: &KgConfig) -> Result<usize> {
    let KgConfig {
        entities,
        relations,
        train,
        valid,
        test,
        cluster_size,
        noise,
        entity_zipf,
        relation_zipf,
        seed: _,
    } = *cfg;
    for (name, n) in [
        ("KgConfig.entities", entities),
        ("KgConfig.relations", relations),
    ] {
        if !(1..=MAX_DIM).contains(&n) {
            return Err(bad_parameter(
                name,
                n,
                &format!("from 1 to {MAX_DIM} (ids are u32)"),
            ));
        }
    }
    if cluster_size == 0 {
        return Err(bad_parameter("KgConfig.cluster_size", 0, "at least 1"));
    }
    if !(0.0..=1.0).contains(&noise) {
        return Err(bad_parameter(
            "KgConfig.noise",
            noise,
            "a number from 0 to 1",
        ));
    }
    for (name, s) in [
        ("KgConfig.entity_zipf", entity_zipf),
        ("KgConfig.relation_zipf", relation_zipf),
    ] {
        if !(s.is_finite() && s >= 0.0) {
            return Err(bad_parameter(name, s, "a finite number, at least 0"));
        }
    }
    // Distinct triples are found by their key `(h * R + r) * E + t`.
    let (e, r) = (entities as u128, relations as u128);
    let wanted = (train as u128) + (valid as u128) + (test as u128);
    if e * r * e > u128::from(u64::MAX) {
        return Err(bad_parameter(
            "KgConfig.entities",
            entities,
            &format!(
                "at most {} with {relations} relations (a triple's key is a u64)",
                (u128::from(u64::MAX) / r).isqrt()
            ),
        ));
    }
    // A relation links two clusters: about (E / C)^2 pairs, halved so that distinct
    // triples stay cheap to find.
    let clusters = (entities / cluster_size).max(1);
    let size = (entities / clusters) as u128;
    let reachable = r * size * size;
    if wanted > reachable / 2 {
        return Err(bad_parameter(
            "KgConfig.train",
            train,
            &format!(
                "at most {} triples in all (training, validation and test): half of \
                 {relations} relation(s) times {size} x {size} entities (a relation links two \
                 clusters)",
                reachable / 2
            ),
        ));
    }
    // Below `reachable / 2`, which is below `E^2 R`: a `u64`.
    Ok(wanted as usize)
}

/// The generator's state: the clusters, the relations' links, and the draws so far.
struct Graph {
    members: Vec<Vec<u32>>,
    zipf: Vec<Zipf<f64>>,
    links: Vec<(usize, usize)>,
    relation_of_rank: Vec<u32>,
    rel_zipf: Zipf<f64>,
    rng: Xoshiro256PlusPlus,
    entities: usize,
    relations: usize,
    noise: f64,
}

impl Graph {
    /// The graph of `cfg` (checked), before its first draw.
    fn new(cfg: &KgConfig) -> Graph {
        let (entities, relations) = (cfg.entities, cfg.relations);
        let clusters = (entities / cfg.cluster_size).max(1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        // Entities in popularity order (most popular first), dealt to the clusters in turn:
        // each cluster's members are in popularity order too.
        let mut by_rank: Vec<u32> = (0..entities as u64).map(|x| x as u32).collect();
        by_rank.shuffle(&mut rng);
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); clusters];
        for (k, &e) in by_rank.iter().enumerate() {
            members[k % clusters].push(e);
        }
        let zipf: Vec<Zipf<f64>> = members
            .iter()
            .map(|m| Zipf::new(m.len() as f64, cfg.entity_zipf).expect("valid Zipf parameters"))
            .collect();
        // Each relation's source and target clusters (distinct when there are two or more).
        let links: Vec<(usize, usize)> = (0..relations)
            .map(|_| {
                let a = rng.random_range(0..clusters);
                let b = match clusters {
                    1 => 0,
                    n => (a + rng.random_range(1..n)) % n,
                };
                (a, b)
            })
            .collect();
        let mut relation_of_rank: Vec<u32> = (0..relations as u64).map(|x| x as u32).collect();
        relation_of_rank.shuffle(&mut rng);
        let rel_zipf =
            Zipf::new(relations as f64, cfg.relation_zipf).expect("valid Zipf parameters");
        Graph {
            members,
            zipf,
            links,
            relation_of_rank,
            rel_zipf,
            rng,
            entities,
            relations,
            noise: cfg.noise,
        }
    }

    /// A member of cluster `c`, by popularity. A Zipf sample is a float in 1..=n; the
    /// clamp guards against rounding.
    fn member(&mut self, c: usize) -> u32 {
        let m = &self.members[c];
        m[(self.zipf[c].sample(&mut self.rng) as usize).clamp(1, m.len()) - 1]
    }

    /// The next triple drawn, `[h, r, t]`, and its key.
    fn draw(&mut self) -> ([u32; 3], u64) {
        let rank = (self.rel_zipf.sample(&mut self.rng) as usize).clamp(1, self.relations) - 1;
        let rel = self.relation_of_rank[rank];
        let (a, b) = self.links[rel as usize];
        let h = self.member(a);
        let t = if self.rng.random::<f64>() < self.noise {
            self.rng.random_range(0..self.entities as u64) as u32
        } else {
            self.member(b)
        };
        let key = (u64::from(h) * self.relations as u64 + u64::from(rel)) * self.entities as u64
            + u64::from(t);
        ([h, rel, t], key)
    }
}

mod in_place;

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> KgConfig {
        KgConfig {
            entities: 400,
            relations: 12,
            train: 4_000,
            valid: 300,
            test: 300,
            ..KgConfig::default()
        }
    }

    #[test]
    fn deterministic_distinct_and_in_range() {
        let a = kg_like(&small());
        assert_eq!(a, kg_like(&small()));
        assert_ne!(a, kg_like(&KgConfig { seed: 7, ..small() }));
        let mut all: Vec<[u32; 3]> = [&a.train[..], &a.valid, &a.test].concat();
        assert_eq!(all.len(), 4_600);
        assert!(all.iter().all(|&[h, r, t]| h < 400 && r < 12 && t < 400));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4_600, "triples are distinct");
        assert_eq!(a.entity_names[399], "e399");
        assert_eq!(a.relation_names.len(), 12);
    }

    /// Without noise, a relation links one cluster of heads to one of tails.
    #[test]
    fn a_relation_links_two_clusters() {
        let kg = kg_like(&KgConfig {
            noise: 0.0,
            cluster_size: 40,
            ..small()
        });
        let mut ends: std::collections::HashMap<u32, (Vec<u32>, Vec<u32>)> = Default::default();
        for &[h, r, t] in &kg.train {
            let e = ends.entry(r).or_default();
            e.0.push(h);
            e.1.push(t);
        }
        for (heads, tails) in ends.values_mut() {
            for side in [heads, tails] {
                side.sort_unstable();
                side.dedup();
                // 400 entities in 10 clusters of 40.
                assert!(side.len() <= 40, "{} entities on one side", side.len());
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        let e = |cfg: KgConfig| try_kg_like(&cfg).unwrap_err().to_string();
        assert_eq!(
            e(KgConfig {
                entities: 0,
                ..small()
            }),
            format!("invalid setting KgConfig.entities=\"0\": from 1 to {MAX_DIM} (ids are u32)")
        );
        assert_eq!(
            e(KgConfig {
                entities: 10,
                relations: 2,
                cluster_size: 2,
                ..small()
            }),
            "invalid setting KgConfig.train=\"4000\": at most 4 triples in all (training, \
             validation and test): half of 2 relation(s) times 2 x 2 entities (a relation \
             links two clusters)"
        );
        assert_eq!(
            e(KgConfig {
                entity_zipf: -1.0,
                ..small()
            }),
            "invalid setting KgConfig.entity_zipf=\"-1\": a finite number, at least 0"
        );
    }
}
