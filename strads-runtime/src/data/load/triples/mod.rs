//! Knowledge graphs ([`knowledge_graph`]): `(head, relation, tail)` triples for link
//! prediction, from a folder in OpenKE's id layout or a folder of text triples.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::data::text::{IntError, for_each_line, parse_uint, quote, trim};
use crate::error::{Error, Result};

/// What OpenKE's triple files look like, for error messages.
pub(super) const OPENKE_TRIPLES: &str = "OpenKE triples: a first line with the number of \
     triples, then one `head tail relation` line per triple (0-based integer ids, in the \
     order head, tail, relation)";
/// What OpenKE's `entity2id.txt` and `relation2id.txt` look like, for error messages.
pub(super) const OPENKE_IDS: &str = "OpenKE ids: a first line with the number of names, then \
     one `name<TAB>id` line per name (distinct 0-based integer ids below that number)";
/// What text triples look like, for error messages.
pub(super) const TEXT_TRIPLES: &str =
    "text triples: one `head<TAB>relation<TAB>tail` line per triple (names without whitespace)";

/// OpenKE's files: the three triple sets, then the two id maps.
const OPENKE: [&str; 5] = [
    "train2id.txt",
    "valid2id.txt",
    "test2id.txt",
    "entity2id.txt",
    "relation2id.txt",
];
/// The text layout's files.
const TEXT: [&str; 3] = ["train.txt", "valid.txt", "test.txt"];

/// A knowledge graph split for link prediction: entities and relations numbered densely
/// from 0, and the training, validation and test triples as `[head, relation, tail]`.
///
/// Every id in `train`, `valid` and `test` is below `entities` (heads and tails) or
/// `relations`; `entity_names[e]` and `relation_names[r]` are the names the data gives them
/// (one per id). Triples keep the files' order, duplicates included.
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
/// assert_eq!(kg.triples(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeGraph {
    /// Number of entities: every head and tail is below it.
    pub entities: usize,
    /// Number of relations: every relation is below it.
    pub relations: usize,
    /// Training triples, `[head, relation, tail]`.
    pub train: Vec<[u32; 3]>,
    /// Validation triples.
    pub valid: Vec<[u32; 3]>,
    /// Test triples.
    pub test: Vec<[u32; 3]>,
    /// The name of each entity, by id.
    pub entity_names: Vec<String>,
    /// The name of each relation, by id.
    pub relation_names: Vec<String>,
}

impl KnowledgeGraph {
    /// Number of triples over the three sets.
    pub fn triples(&self) -> usize {
        self.train.len() + self.valid.len() + self.test.len()
    }
}

/// Loads the knowledge graph in folder `dir`, in either of two layouts:
///
/// - **OpenKE** (`train2id.txt`, `valid2id.txt`, `test2id.txt`, `entity2id.txt`,
///   `relation2id.txt`): the first line of every file is a count, which must equal the
///   number of lines that follow (blank lines aside). The triple files hold
///   `head tail relation` lines (note the order) of 0-based integer ids, below the counts of
///   `entity2id.txt` and `relation2id.txt`, whose lines are `name<TAB>id` (every id below
///   the count, each once).
/// - **Text** (`train.txt`, `valid.txt`, `test.txt`): `head<TAB>relation<TAB>tail` lines of
///   names, kept as written (`00260881` keeps its zeros). Entities and relations are
///   numbered densely in order of first appearance over train, valid and test (in a line,
///   the head before the tail).
///
/// When a folder holds `train2id.txt` it is read as OpenKE. Fields may be separated by
/// tabs or spaces; `\r\n` endings and a UTF-8 byte order mark are accepted, blank lines
/// skipped. Every triple file must hold at least one triple.
///
/// Nothing is sized by a number read from a file before the lines it announces are read.
///
/// # Errors
/// [`Error::Io`] naming the path when `dir` is not a folder of either layout (the message
/// lists the files expected) or a file cannot be read; [`Error::Parse`] naming the file,
/// the line, the offending field and the expected format for a line with the wrong number
/// of fields, an id that is not a whole number or not below its count, a duplicate id, a
/// count that disagrees with the lines, an empty file or one without triples, a name that
/// is not UTF-8.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("strads-doc-kg-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("train.txt"), "00001\tlikes\t00002\n00002\tlikes\t00003\n")?;
/// std::fs::write(dir.join("valid.txt"), "00003\tlikes\t00001\n")?;
/// std::fs::write(dir.join("test.txt"), "00001\thates\t00004\n")?;
/// let kg = strads_runtime::load::knowledge_graph(&dir)?;
/// assert_eq!((kg.entities, kg.relations), (4, 2));
/// assert_eq!(kg.train, vec![[0, 0, 1], [1, 0, 2]]);
/// assert_eq!(kg.test, vec![[0, 1, 3]]);
/// assert_eq!(kg.entity_names[3], "00004");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn knowledge_graph(dir: impl AsRef<Path>) -> Result<KnowledgeGraph> {
    let dir = dir.as_ref();
    match layout(dir)? {
        Layout::OpenKe => openke(dir),
        Layout::Text => text(dir, true),
    }
}

/// The two layouts of a knowledge graph's folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Layout {
    OpenKe,
    Text,
}

impl Layout {
    /// The triple files, train, valid and test.
    pub(super) fn triple_files(self) -> [&'static str; 3] {
        match self {
            Layout::OpenKe => [OPENKE[0], OPENKE[1], OPENKE[2]],
            Layout::Text => TEXT,
        }
    }
}

/// The layout of the folder `dir`, or the error naming the files expected.
fn layout(dir: &Path) -> Result<Layout> {
    let meta = std::fs::metadata(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if meta.is_dir() && dir.join(OPENKE[0]).exists() {
        Ok(Layout::OpenKe)
    } else if meta.is_dir() && dir.join(TEXT[0]).exists() {
        Ok(Layout::Text)
    } else {
        Err(Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "not a folder of knowledge-graph triples: expected OpenKE's {} and {}, or \
                     {} and {}",
                    OPENKE[..4].join(", "),
                    OPENKE[4],
                    TEXT[..2].join(", "),
                    TEXT[2]
                ),
            ),
        })
    }
}

/// An [`Error::Parse`] at `line` of `path`.
fn parse_error(path: &Path, line: usize, message: String, expected: &str) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        line,
        message,
        expected: expected.to_owned(),
    }
}

/// `n` and `what`, in the plural unless `n` is 1 (`1 line`, `3 lines`).
fn count_of(n: impl Into<u64>, what: &str) -> String {
    match n.into() {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// The non-blank, trimmed fields of `line`, split at tabs and spaces.
fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
}

/// Reads a file of OpenKE's shape: a first non-blank line holding a count, then that many
/// non-blank lines, each handed to `f` with its number. A missing count line (an empty
/// file), a count that is not a whole number, or a number of lines other than the count is
/// an error.
fn counted(
    path: &Path,
    expected: &str,
    mut f: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let fail = |line, message| parse_error(path, line, message, expected);
    // The count and its line, once read.
    let mut count: Option<(u64, usize)> = None;
    let mut seen = 0u64;
    let lines = for_each_line(path, expected, |no, line| {
        let line = trim(line);
        if line.is_empty() {
            return Ok(());
        }
        match count {
            None => match parse_uint(line) {
                Ok(n) => count = Some((n, no)),
                Err(_) => {
                    return Err(fail(
                        no,
                        format!(
                            "the first line {} is not a count (a whole number)",
                            quote(line)
                        ),
                    ));
                }
            },
            Some((n, at)) if seen == n => {
                return Err(fail(
                    no,
                    format!(
                        "line {at} announces {}, and this is one more",
                        count_of(n, "line")
                    ),
                ));
            }
            Some(_) => {
                seen += 1;
                f(no, line)?;
            }
        }
        Ok(())
    })?;
    match count {
        None => Err(fail(
            lines + 1,
            "the file is empty: it has no count line".to_owned(),
        )),
        Some((n, at)) if seen < n => Err(fail(
            lines + 1,
            format!(
                "the file ends after {}, but line {at} announces {n}",
                count_of(seen, "line")
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// The names of an OpenKE id file (`entity2id.txt`, `relation2id.txt`), by id.
pub(super) fn openke_names(path: &Path) -> Result<Vec<String>> {
    // (id, name, line), checked against the count once every line is read.
    let mut named: Vec<(u32, String, usize)> = Vec::new();
    counted(path, OPENKE_IDS, |no, line| {
        let fail = |message| parse_error(path, no, message, OPENKE_IDS);
        let mut it = fields(line);
        let (Some(name), Some(id), None) = (it.next(), it.next(), it.next()) else {
            return Err(fail(format!(
                "{} has {}, need 2: a name and an id",
                quote(line),
                count_of(fields(line).count() as u64, "field")
            )));
        };
        let id = parse_id(id, "id").map_err(fail)?;
        let name = std::str::from_utf8(name)
            .map_err(|_| fail(format!("the name {} is not UTF-8", quote(name))))?;
        named.push((id, name.to_owned(), no));
        Ok(())
    })?;
    // `counted` checked that the count equals the lines read: sizing by it is safe now.
    let n = named.len();
    let mut names: Vec<Option<(String, usize)>> = vec![None; n];
    for (id, name, no) in named {
        let fail = |message| parse_error(path, no, message, OPENKE_IDS);
        match names.get_mut(id as usize) {
            None => {
                return Err(fail(format!(
                    "id {id} is not below {n}, the count of names in the file"
                )));
            }
            Some(Some((_, first))) => {
                return Err(fail(format!("id {id} was given already on line {first}")));
            }
            Some(slot) => *slot = Some((name, no)),
        }
    }
    // `n` ids, distinct and below `n`: every slot is filled.
    Ok(names
        .into_iter()
        .map(|s| s.map(|(name, _)| name).unwrap_or_default())
        .collect())
}

/// A field that must be a whole number that fits a `u32` id (`what` names it).
fn parse_id(field: &[u8], what: &str) -> std::result::Result<u32, String> {
    match parse_uint(field) {
        Ok(v) if v <= u64::from(u32::MAX) => Ok(v as u32),
        Ok(_) | Err(IntError::TooLarge) => Err(format!(
            "{what} {} is too large (ids are below {})",
            quote(field),
            u64::from(u32::MAX) + 1
        )),
        Err(IntError::NotInteger) => Err(format!("{what} {} is not a whole number", quote(field))),
    }
}

/// The triple of an OpenKE line (`head tail relation`, non-blank and trimmed) as `[h, r,
/// t]`, its ids below `entities` and `relations`; otherwise what is wrong with it.
pub(super) fn openke_triple(
    line: &[u8],
    entities: usize,
    relations: usize,
) -> std::result::Result<[u32; 3], String> {
    let mut it = fields(line);
    let (Some(h), Some(t), Some(r), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return Err(format!(
            "{} has {}, need 3: head, tail and relation ids",
            quote(line),
            count_of(fields(line).count() as u64, "field")
        ));
    };
    let mut triple = [0u32; 3];
    for (slot, field, what, bound, file) in [
        (0, h, "head id", entities, "entities in entity2id.txt"),
        (2, t, "tail id", entities, "entities in entity2id.txt"),
        (
            1,
            r,
            "relation id",
            relations,
            "relations in relation2id.txt",
        ),
    ] {
        let id = parse_id(field, what)?;
        if id as usize >= bound {
            return Err(format!(
                "{what} {id} is not below {bound}, the number of {file}"
            ));
        }
        triple[slot] = id;
    }
    Ok(triple)
}

/// The triples of an OpenKE triple file (`head tail relation` lines), each handed to `keep`
/// as `[h, r, t]`; how many.
fn openke_triples(
    path: &Path,
    entities: usize,
    relations: usize,
    mut keep: impl FnMut([u32; 3]),
) -> Result<usize> {
    let mut n = 0;
    counted(path, OPENKE_TRIPLES, |no, line| {
        let triple = openke_triple(line, entities, relations)
            .map_err(|message| parse_error(path, no, message, OPENKE_TRIPLES))?;
        keep(triple);
        n += 1;
        Ok(())
    })?;
    no_triples(path, n, OPENKE_TRIPLES)?;
    Ok(n)
}

/// An error when a triple file held none (`n` triples).
fn no_triples(path: &Path, n: usize, expected: &str) -> Result<()> {
    if n == 0 {
        return Err(parse_error(
            path,
            1,
            "the file has no triples".to_owned(),
            expected,
        ));
    }
    Ok(())
}

fn openke(dir: &Path) -> Result<KnowledgeGraph> {
    let path = |i: usize| dir.join(OPENKE[i]);
    let entity_names = openke_names(&path(3))?;
    let relation_names = openke_names(&path(4))?;
    let (e, r) = (entity_names.len(), relation_names.len());
    let mut sets: [Vec<[u32; 3]>; 3] = Default::default();
    for (i, set) in sets.iter_mut().enumerate() {
        openke_triples(&path(i), e, r, |t| set.push(t))?;
    }
    let [train, valid, test] = sets;
    Ok(KnowledgeGraph {
        entities: e,
        relations: r,
        train,
        valid,
        test,
        entity_names,
        relation_names,
    })
}

/// Names numbered densely in order of first appearance.
#[derive(Default)]
pub(super) struct Names {
    ids: HashMap<String, u32>,
    pub(super) names: Vec<String>,
}

impl Names {
    /// The id of `name`, a new one the first time.
    pub(super) fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.names.len()).ok()?;
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        Some(id)
    }
}

/// The three fields of a text triple line (non-blank and trimmed), `head relation tail`,
/// each checked to be UTF-8; otherwise what is wrong with it.
pub(super) fn text_triple(line: &[u8]) -> std::result::Result<[&str; 3], String> {
    let mut it = fields(line);
    let (Some(h), Some(r), Some(t), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return Err(format!(
            "{} has {}, need 3: head, relation and tail",
            quote(line),
            count_of(fields(line).count() as u64, "field")
        ));
    };
    fn name(field: &[u8]) -> std::result::Result<&str, String> {
        std::str::from_utf8(field).map_err(|_| format!("the name {} is not UTF-8", quote(field)))
    }
    Ok([name(h)?, name(r)?, name(t)?])
}

/// The text layout's graph in `dir`; with `keep` false its triples are read and checked
/// but not kept (the error one process gives, and nothing else).
fn text(dir: &Path, keep: bool) -> Result<KnowledgeGraph> {
    let (mut entities, mut relations) = (Names::default(), Names::default());
    let mut sets: [Vec<[u32; 3]>; 3] = Default::default();
    for (file, set) in TEXT.iter().zip(&mut sets) {
        let path: PathBuf = dir.join(file);
        let mut n = 0;
        for_each_line(&path, TEXT_TRIPLES, |no, line| {
            let fail = |message| parse_error(&path, no, message, TEXT_TRIPLES);
            let line = trim(line);
            if line.is_empty() {
                return Ok(());
            }
            let [h, r, t] = text_triple(line).map_err(fail)?;
            let id = |names: &mut Names, name: &str| {
                names.id(name).ok_or_else(|| {
                    fail(format!(
                        "{} is one name too many: ids are below {}",
                        quote(name.as_bytes()),
                        u64::from(u32::MAX) + 1
                    ))
                })
            };
            let h = id(&mut entities, h)?;
            let r = id(&mut relations, r)?;
            let t = id(&mut entities, t)?;
            if keep {
                set.push([h, r, t]);
            }
            n += 1;
            Ok(())
        })?;
        no_triples(&path, n, TEXT_TRIPLES)?;
    }
    let [train, valid, test] = sets;
    Ok(KnowledgeGraph {
        entities: entities.names.len(),
        relations: relations.names.len(),
        train,
        valid,
        test,
        entity_names: entities.names,
        relation_names: relations.names,
    })
}

/// The error one process reading the graph in `dir` (of `layout`) gives, found without
/// keeping its triples; `Ok` when there is none.
pub(super) fn check(dir: &Path, layout: Layout) -> Result<()> {
    match layout {
        Layout::Text => text(dir, false).map(|_| ()),
        Layout::OpenKe => {
            let path = |i: usize| dir.join(OPENKE[i]);
            let e = openke_names(&path(3))?.len();
            let r = openke_names(&path(4))?.len();
            for i in 0..3 {
                openke_triples(&path(i), e, r, |_| ())?;
            }
            Ok(())
        }
    }
}

mod arrays;
mod in_place;

pub use arrays::{KgArrays, knowledge_graph_arrays};
