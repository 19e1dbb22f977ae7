//! Loading rating files (MovieLens and alike) into [`SparseArray`]s, and splitting them
//! into training and test sets.
//!
//! Two formats are read, told apart by the first non-empty line of a file:
//!
//! * **whitespace-separated** (`u.data`, `ua.base`, …): `user item rating [timestamp]`
//!   per line, ids are 1-based integers and become indices `id - 1`;
//! * **CSV** (`ratings.csv`): `user,item,rating[,timestamp,…]` per line, after an
//!   optional header line; ids are arbitrary non-negative integers, re-indexed densely in
//!   order of first appearance.
//!
//! Blank lines are skipped. Every malformed line is an [`Error::Parse`](crate::Error::Parse) naming the file,
//! the line, what is wrong and the expected format; nothing is ever returned half-built.
//!
//! ```no_run
//! let (train, test) = strads_runtime::load::ratings_pair(
//!     "/data/movielens-100k/ua.base",
//!     "/data/movielens-100k/ua.test",
//! )?;
//! assert_eq!(train.shape(), test.shape());
//! # Ok::<(), strads_runtime::Error>(())
//! ```

use std::path::Path;

use crate::array::SparseArray;
pub use crate::data::text::{ID_FLOOR, IDS_PER_ENTRY, MAX_LINE};

/// How far this process's loaders are, for a progress bar: the bytes they have read and
/// the bytes of the files (or, on a cluster's rank, the byte ranges) they opened, both
/// summed since the process started. Compare two readings to follow one load; `(0, 0)`
/// before any.
pub fn progress() -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        crate::data::text::READ.load(Relaxed),
        crate::data::text::TO_READ.load(Relaxed),
    )
}
use crate::error::Result;

/// What the whitespace-separated format looks like, for error messages.
const WHITESPACE_FORMAT: &str =
    "whitespace-separated `user item rating [timestamp]` with 1-based integer ids";
/// What the CSV format looks like, for error messages.
const CSV_FORMAT: &str = "CSV `user,item,rating[,timestamp,...]` with non-negative integer ids \
     and an optional header line";

/// The largest rating magnitude the loaders accept: rating scales, scores and counts
/// stay far below it, while values near `f32::MAX` (say `3e38`) would overflow the
/// training arithmetic to infinity.
pub const MAX_RATING: f32 = 1e9;

/// Loads a rating file into a `[users, items]` sparse array of ratings.
///
/// The format is detected from the first non-empty line: a line containing a comma
/// means CSV (`ratings.csv` style: `user,item,rating[,timestamp,...]`, further columns
/// ignored, fields trimmed; a first line none of whose first three fields is a number
/// is a header and skipped; ids are arbitrary non-negative integers, re-indexed densely
/// in order of first appearance, so the shape is `[distinct users, distinct items]`),
/// anything else means whitespace-separated (`u.data` style: `user item rating
/// [timestamp]`, 1-based integer ids, index = id - 1, shape = the largest ids seen).
///
/// Ratings must be finite numbers of magnitude at most [`MAX_RATING`]. Entries keep the
/// file's order; duplicates are kept.
///
/// Limits, so that a short or broken file cannot make a program allocate without bound:
/// a line holds at most [`MAX_LINE`] bytes, and in the 1-based format (whose ids size
/// the array directly) the largest id may be at most [`ID_FLOOR`] or [`IDS_PER_ENTRY`]
/// times the number of ratings, whichever is larger (re-index sparse ids densely, or use
/// the CSV format, which does).
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) when the file cannot be read; [`Error::Parse`](crate::Error::Parse) (with file, line, the
/// offending field and the expected format) for a malformed line, a value or id beyond
/// the limits above, or a file with no ratings.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("strads-doc-ratings-{}", std::process::id()));
/// std::fs::write(&path, "1\t2\t5\t881250949\n3\t1\t3.5\t891717742\n")?;
/// let r = strads_runtime::load::ratings(&path)?;
/// assert_eq!(r.shape(), [3, 2]);
/// assert_eq!(r.entry(1), ([2, 0], &3.5));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ratings(path: impl AsRef<Path>) -> Result<SparseArray<f32, 2>> {
    if let Some(s) = in_place_driver(&[path.as_ref()]) {
        let [r] = one_each(in_place::ratings(s, &[path.as_ref()], None)?);
        return Ok(r);
    }
    let mut loader = Loader::new(None);
    let entries = loader.load(path.as_ref())?;
    loader.check_ids(entries.len())?;
    SparseArray::from_entries(loader.shape(), entries)
}

/// Loads a training and a test file with one shared id mapping and one shape covering
/// both, so a model sized by the shape can be evaluated on either.
///
/// Both files must have the same format (see [`ratings`]). For CSV, ids are re-indexed
/// densely in order of first appearance across the training file, then the test file;
/// for the 1-based format the shape is the largest ids over both files.
///
/// # Errors
/// As [`ratings`], plus an [`Error::Parse`](crate::Error::Parse) when the two files have different formats.
///
/// ```
/// # let dir = std::env::temp_dir();
/// # let (train_path, test_path) = (
/// #     dir.join(format!("strads-doc-pair-train-{}.csv", std::process::id())),
/// #     dir.join(format!("strads-doc-pair-test-{}.csv", std::process::id())),
/// # );
/// std::fs::write(&train_path, "userId,movieId,rating\n7,100,4.0\n9,100,2.5\n")?;
/// std::fs::write(&test_path, "userId,movieId,rating\n9,300,3.0\n")?;
/// let (train, test) = strads_runtime::load::ratings_pair(&train_path, &test_path)?;
/// assert_eq!(train.shape(), [2, 2]);
/// assert_eq!(test.shape(), [2, 2]);
/// assert_eq!(test.entry(0), ([1, 1], &3.0)); // user 9 and item 300 keep their indices
/// # std::fs::remove_file(&train_path)?;
/// # std::fs::remove_file(&test_path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ratings_pair(
    train: impl AsRef<Path>,
    test: impl AsRef<Path>,
) -> Result<(SparseArray<f32, 2>, SparseArray<f32, 2>)> {
    if let Some(s) = in_place_driver(&[train.as_ref(), test.as_ref()]) {
        let [train, test] = one_each(in_place::ratings(
            s,
            &[train.as_ref(), test.as_ref()],
            None,
        )?);
        return Ok((train, test));
    }
    let mut loader = Loader::new(None);
    let train_entries = loader.load(train.as_ref())?;
    let test_entries = loader.load(test.as_ref())?;
    loader.check_ids(train_entries.len() + test_entries.len())?;
    let shape = loader.shape();
    Ok((
        SparseArray::from_entries(shape, train_entries)?,
        SparseArray::from_entries(shape, test_entries)?,
    ))
}

/// Loads a whitespace-separated, 1-based rating file (`user item rating [timestamp]`)
/// into an array of the given shape, e.g. to load a test file against a model trained
/// on another file.
///
/// CSV files are rejected: their ids only mean something through the mapping built
/// while loading, so load CSV training and test files together with [`ratings_pair`].
///
/// # Errors
/// As [`ratings`]; additionally [`Error::OutOfBounds`](crate::Error::OutOfBounds) (its context naming file and
/// line, e.g. `"ua.test:17: "`) for an id outside `shape`, and [`Error::Parse`](crate::Error::Parse) for a
/// CSV file.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("strads-doc-shape-{}", std::process::id()));
/// std::fs::write(&path, "1 2 5\n3 1 4\n")?;
/// let r = strads_runtime::load::ratings_with_shape(&path, [943, 1682])?;
/// assert_eq!(r.shape(), [943, 1682]);
/// assert!(strads_runtime::load::ratings_with_shape(&path, [2, 2]).is_err());
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ratings_with_shape(
    path: impl AsRef<Path>,
    shape: [usize; 2],
) -> Result<SparseArray<f32, 2>> {
    if let Some(s) = in_place_driver(&[path.as_ref()]) {
        let [r] = one_each(in_place::ratings(s, &[path.as_ref()], Some(shape))?);
        return Ok(r);
    }
    let mut loader = Loader::new(Some(shape));
    let entries = loader.load(path.as_ref())?;
    SparseArray::from_entries(shape, entries)
}

/// The job's session when `paths` are loaded in place: on a job's driver, files the ranks
/// can each read a range of (`readable_in_place`).
fn in_place_driver(paths: &[&Path]) -> Option<&'static crate::cluster::session::Session> {
    crate::cluster::job::data_driver().filter(|_| crate::data::in_place::readable_in_place(paths))
}

/// The arrays loaded in place, one per file asked for.
fn one_each<const F: usize>(arrays: Vec<SparseArray<f32, 2>>) -> [SparseArray<f32, 2>; F] {
    arrays
        .try_into()
        .unwrap_or_else(|_| unreachable!("one array per file"))
}

mod dense;
mod in_place;
mod libsvm;
mod ratings;
mod split;
mod triples;
mod words;

pub(crate) use libsvm::in_place as libsvm_in_place;
pub use libsvm::{LibSvm, libsvm, libsvm_pair};
use ratings::Loader;
pub(crate) use ratings::U64BuildHasher;
pub use split::split;
pub use triples::{KgArrays, KnowledgeGraph, knowledge_graph, knowledge_graph_arrays};
pub use words::{MAX_WORD, WordArrays, Words, words, words_arrays};
pub(crate) use words::{frequent, keep_tokens, made_in_place as words_made_in_place, vocabulary};
#[cfg(test)]
mod tests;
