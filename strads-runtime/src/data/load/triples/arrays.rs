//! A knowledge graph whose triples are arrays ([`knowledge_graph_arrays`]): what a loop
//! reads, and on a cluster job's driver loaded in place, each rank keeping the triples
//! that start in its byte ranges of the files (`in_place`).

use std::path::Path;

use super::{KnowledgeGraph, Layout, layout};
use crate::array::DistArray;
use crate::error::Result;

/// A knowledge graph whose training, validation and test triples are `[n, 3]` arrays of
/// `[head, relation, tail]` rows: what [`knowledge_graph_arrays`] loads (in parts, on a
/// cluster job's driver) and [`KnowledgeGraph::into_arrays`] makes.
///
/// Every id in `train`, `valid` and `test` is below `entities` (heads and tails) or
/// `relations`; `entity_names[e]` and `relation_names[r]` are the names the data gives them.
/// Rows keep the files' order, duplicates included: row `k` of `train` is
/// [`KnowledgeGraph::train`]`[k]` of the same folder.
#[derive(Debug, Clone, PartialEq)]
pub struct KgArrays {
    /// Number of entities: every head and tail is below it.
    pub entities: usize,
    /// Number of relations: every relation is below it.
    pub relations: usize,
    /// Training triples, one `[head, relation, tail]` row each.
    pub train: DistArray<u32, 2>,
    /// Validation triples.
    pub valid: DistArray<u32, 2>,
    /// Test triples.
    pub test: DistArray<u32, 2>,
    /// The name of each entity, by id.
    pub entity_names: Vec<String>,
    /// The name of each relation, by id.
    pub relation_names: Vec<String>,
}

impl KgArrays {
    /// Number of triples over the three sets.
    pub fn triples(&self) -> usize {
        self.train.shape()[0] + self.valid.shape()[0] + self.test.shape()[0]
    }

    /// Brings the three sets home, on a cluster job's driver, when their rows are held by
    /// other ranks (`DistArray::gather`); nothing happens when they are here.
    pub fn gather(&self) {
        self.train.gather();
        self.valid.gather();
        self.test.gather();
    }

    /// Whether some rows of the sets are held by other ranks of a cluster job (see
    /// [`gather`](Self::gather)).
    pub fn is_spread(&self) -> bool {
        self.train.is_spread() || self.valid.is_spread() || self.test.is_spread()
    }
}

impl KnowledgeGraph {
    /// The same graph with its triple sets as `[n, 3]` arrays (on a cluster job's driver,
    /// a set of 1 MiB or more is made in parts on the ranks, as `DistArray::from_fn`
    /// makes it).
    ///
    /// ```
    /// use strads_runtime::load::KnowledgeGraph;
    /// let kg = KnowledgeGraph {
    ///     entities: 3,
    ///     relations: 1,
    ///     train: vec![[0, 0, 1], [1, 0, 2]],
    ///     valid: vec![],
    ///     test: vec![[0, 0, 2]],
    ///     entity_names: vec!["a".into(), "b".into(), "c".into()],
    ///     relation_names: vec!["r".into()],
    /// };
    /// let a = kg.into_arrays();
    /// assert_eq!(a.train.shape(), [2, 3]);
    /// assert_eq!(a.train[[1, 2]], 2);
    /// assert_eq!(a.valid.shape(), [0, 3]);
    /// ```
    pub fn into_arrays(self) -> KgArrays {
        let rows = |set: Vec<[u32; 3]>| DistArray::from_fn([set.len(), 3], |[i, c]| set[i][c]);
        KgArrays {
            entities: self.entities,
            relations: self.relations,
            train: rows(self.train),
            valid: rows(self.valid),
            test: rows(self.test),
            entity_names: self.entity_names,
            relation_names: self.relation_names,
        }
    }
}

/// Loads the knowledge graph in folder `dir` as [`knowledge_graph`](super::knowledge_graph)
/// does (the same layouts, numbering, checks and errors), its triple sets as arrays.
///
/// On a cluster job's driver the triple files are read in place: every rank reads the
/// lines that start in its byte range of each file, at the same path on every node (a
/// shared filesystem, or the same copy on each), and keeps their triples as its rows of
/// the three arrays, so the driver never holds the sets (docs/cluster.md). The ranks agree
/// on what one process finds: each file's number of triples and, for text triples, the
/// dense numbering of names in order of first appearance (each rank holds the names met in
/// its own ranges, and the driver all of them, as `knowledge_graph` keeps them; a rank
/// that owns a name, by a hash, learns where it first appears). OpenKE's id files are read
/// on the driver. When a rank
/// meets a malformed line, the driver reads the files again, keeping nothing, to give the
/// error one process gives.
///
/// # Errors
/// Those of [`knowledge_graph`](super::knowledge_graph); on a cluster job's driver also
/// [`Error::Rank`](crate::Error::Rank) when the ranks see a file at different sizes or a
/// rank fails.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("strads-doc-kga-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("train.txt"), "a\tlikes\tb\nb\tlikes\tc\n")?;
/// std::fs::write(dir.join("valid.txt"), "c\tlikes\ta\n")?;
/// std::fs::write(dir.join("test.txt"), "a\thates\td\n")?;
/// let kg = strads_runtime::load::knowledge_graph_arrays(&dir)?;
/// assert_eq!((kg.entities, kg.relations, kg.triples()), (4, 2, 4));
/// assert_eq!(kg.train.as_slice(), [0, 0, 1, 1, 0, 2]);
/// assert_eq!(kg.test.as_slice(), [0, 1, 3]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn knowledge_graph_arrays(dir: impl AsRef<Path>) -> Result<KgArrays> {
    let dir = dir.as_ref();
    let layout: Layout = layout(dir)?;
    let files = layout.triple_files().map(|f| dir.join(f));
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    if let Some(s) = crate::data::load::in_place_driver(&paths) {
        return super::in_place::arrays(s, dir, layout);
    }
    Ok(super::knowledge_graph(dir)?.into_arrays())
}
