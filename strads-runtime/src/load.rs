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
//! Blank lines are skipped. Every malformed line is an [`Error::Parse`] naming the file,
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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::{DistArray, SparseArray};
use crate::error::{Error, Result};
pub use crate::text::{ID_FLOOR, IDS_PER_ENTRY, MAX_LINE};
use crate::text::{IntError, for_each_line, id_limit, parse_uint, quote, size_hint, trim};

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
/// [`Error::Io`] when the file cannot be read; [`Error::Parse`] (with file, line, the
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
/// As [`ratings`], plus an [`Error::Parse`] when the two files have different formats.
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
/// As [`ratings`]; additionally [`Error::OutOfBounds`] (its context naming file and
/// line, e.g. `"ua.test:17: "`) for an id outside `shape`, and [`Error::Parse`] for a
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
    let mut loader = Loader::new(Some(shape));
    let entries = loader.load(path.as_ref())?;
    SparseArray::from_entries(shape, entries)
}

/// Splits ratings into a training and a test set: exactly `round(test_fraction * nnz)`
/// entries, chosen uniformly at random, go to the test set, the others to the training
/// set.
///
/// The choice is deterministic for a `seed` (xoshiro256++); both halves keep the
/// original shape and the entries' relative order.
///
/// # Panics
/// When `test_fraction` is not within `[0, 1]`.
///
/// ```
/// use strads_runtime::SparseArray;
/// let entries = (0..100).map(|n| ([n / 10, n % 10], n as f32)).collect();
/// let all = SparseArray::from_entries([10, 10], entries).unwrap();
/// let (train, test) = strads_runtime::load::split(&all, 0.2, 42);
/// assert_eq!((train.nnz(), test.nnz()), (80, 20));
/// assert_eq!(test.shape(), [10, 10]);
/// ```
pub fn split(
    data: &SparseArray<f32, 2>,
    test_fraction: f64,
    seed: u64,
) -> (SparseArray<f32, 2>, SparseArray<f32, 2>) {
    assert!(
        (0.0..=1.0).contains(&test_fraction),
        "split: test_fraction must be within [0, 1], got {test_fraction}"
    );
    let n = data.nnz();
    let mut wanted = ((n as f64) * test_fraction).round() as usize;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut train = Vec::with_capacity(n - wanted);
    let mut test = Vec::with_capacity(wanted);
    // Selection sampling (Knuth's algorithm S): entry `k` goes to the test set with
    // probability (test entries still wanted) / (entries left), which picks a uniformly
    // random subset of exactly the wanted size in one pass, keeping the order.
    for (k, (idx, &v)) in data.iter().enumerate() {
        let left = (n - k) as f64;
        if wanted > 0 && rng.random::<f64>() * left < wanted as f64 {
            wanted -= 1;
            test.push((idx, v));
        } else {
            train.push((idx, v));
        }
    }
    let shape = data.shape();
    let build = |entries| {
        SparseArray::from_entries(shape, entries)
            .expect("entries of an array fit that array's shape")
    };
    (build(train), build(test))
}

/// The two file formats.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `user item rating [timestamp]`, 1-based ids.
    Whitespace,
    /// `user,item,rating[,...]`, arbitrary ids mapped densely.
    Csv,
}

impl Format {
    fn detect(line: &[u8]) -> Format {
        if line.contains(&b',') {
            Format::Csv
        } else {
            Format::Whitespace
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Format::Whitespace => WHITESPACE_FORMAT,
            Format::Csv => CSV_FORMAT,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::Whitespace => "whitespace-separated",
            Format::Csv => "CSV",
        }
    }
}

/// A fast hasher for `u64` keys (the splitmix64 finalizer): ids and packed index pairs
/// are not adversarial, and SipHash would dominate loading and generation time.
#[derive(Default, Clone, Copy)]
pub(crate) struct U64Hasher(u64);

impl Hasher for U64Hasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        let mut z = (self.0 ^ n).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        self.0 = z ^ (z >> 31);
    }
}

/// `BuildHasher` for [`U64Hasher`].
pub(crate) type U64BuildHasher = BuildHasherDefault<U64Hasher>;

/// Dense re-indexing of arbitrary ids in order of first appearance.
#[derive(Default)]
struct IdMap {
    map: HashMap<u64, usize, U64BuildHasher>,
}

impl IdMap {
    #[inline]
    fn index(&mut self, id: u64) -> usize {
        let next = self.map.len();
        *self.map.entry(id).or_insert(next)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Whether `field` is an integer (optional sign, then digits).
fn is_integer(field: &[u8]) -> bool {
    let digits = match field.first() {
        Some(b'-' | b'+') => &field[1..],
        _ => field,
    };
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// Splits `line` on `sep` (CSV) or runs of whitespace, storing the first `out.len()`
/// (trimmed) fields and returning the total number of fields.
#[inline]
fn split_fields<'a>(line: &'a [u8], format: Format, out: &mut [&'a [u8]; 4]) -> usize {
    let mut count = 0;
    match format {
        Format::Csv => {
            for field in line.split(|&b| b == b',') {
                if let Some(slot) = out.get_mut(count) {
                    *slot = trim(field);
                }
                count += 1;
            }
        }
        Format::Whitespace => {
            for field in line
                .split(|b| b.is_ascii_whitespace())
                .filter(|f| !f.is_empty())
            {
                if let Some(slot) = out.get_mut(count) {
                    *slot = field;
                }
                count += 1;
            }
        }
    }
    count
}

/// A CSV line is a header when none of its (first three) fields is a number.
fn is_csv_header(line: &[u8]) -> bool {
    line.split(|&b| b == b',')
        .take(3)
        .all(|field| std::str::from_utf8(trim(field)).map_or(true, |s| s.parse::<f64>().is_err()))
}

/// State shared by the files of one load: the format, the id mappings and the shape.
struct Loader {
    /// Format and path of the first file loaded.
    first: Option<(Format, PathBuf)>,
    /// A fixed shape (`ratings_with_shape`), checked per line.
    bounds: Option<[usize; 2]>,
    /// Largest 1-based ids seen (whitespace format).
    max_ids: [usize; 2],
    /// Where each of `max_ids` was seen: the file (an index into `files`) and line.
    max_at: [(usize, usize); 2],
    /// The files loaded so far (the current one last).
    files: Vec<PathBuf>,
    /// Dense mappings (CSV format).
    users: IdMap,
    items: IdMap,
}

impl Loader {
    fn new(bounds: Option<[usize; 2]>) -> Self {
        Loader {
            first: None,
            bounds,
            max_ids: [0; 2],
            max_at: [(0, 0); 2],
            files: Vec::new(),
            users: IdMap::default(),
            items: IdMap::default(),
        }
    }

    /// The shape covering every file loaded so far.
    fn shape(&self) -> [usize; 2] {
        match (self.bounds, &self.first) {
            (Some(shape), _) => shape,
            (None, Some((Format::Csv, _))) => [self.users.len(), self.items.len()],
            _ => self.max_ids,
        }
    }

    /// Checks the largest 1-based ids against the number of ratings loaded (see
    /// [`ratings`]); CSV ids are dense and a fixed shape is the caller's.
    fn check_ids(&self, ratings: usize) -> Result<()> {
        if self.bounds.is_some() || !matches!(self.first, Some((Format::Whitespace, _))) {
            return Ok(());
        }
        let limit = id_limit(ratings);
        for (d, name) in ["user", "item"].into_iter().enumerate() {
            let id = self.max_ids[d] as u64;
            if id > limit {
                let (file, line) = self.max_at[d];
                return Err(Error::Parse {
                    path: self.files[file].clone(),
                    line,
                    message: format!(
                        "{name} id {id} is too large for {ratings} {}: 1-based ids may be at \
                         most {limit} (the larger of {ID_FLOOR} and {IDS_PER_ENTRY} per rating), \
                         since they size the model; re-index the ids densely, or use the CSV \
                         format, which does",
                        if ratings == 1 { "rating" } else { "ratings" }
                    ),
                    expected: WHITESPACE_FORMAT.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Reads every rating of `path`, extending the id mappings and the shape.
    fn load(&mut self, path: &Path) -> Result<Vec<([usize; 2], f32)>> {
        // About 20 bytes per line in MovieLens files; reserve a little less.
        let mut entries = Vec::with_capacity(usize::try_from(size_hint(path) / 24).unwrap_or(0));
        let mut format = None;
        self.files.push(path.to_path_buf());
        let any_format = format!("{WHITESPACE_FORMAT}, or {CSV_FORMAT}");
        let line_no = for_each_line(path, &any_format, |line_no, line| {
            let line = trim(line);
            if line.is_empty() {
                return Ok(());
            }
            let format = match format {
                Some(f) => f,
                None => {
                    let f = self.start_file(path, line_no, line)?;
                    format = Some(f);
                    if f == Format::Csv && is_csv_header(line) {
                        return Ok(());
                    }
                    f
                }
            };
            entries.push(self.parse_line(path, line_no, line, format)?);
            Ok(())
        })?;
        if entries.is_empty() {
            let expected = match format.or(self.first.as_ref().map(|(f, _)| *f)) {
                Some(f) => f.describe().to_owned(),
                None => format!("{WHITESPACE_FORMAT}, or {CSV_FORMAT}"),
            };
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: line_no + 1,
                message: "the file has no ratings".to_owned(),
                expected,
            });
        }
        if self.first.is_none() {
            self.first = format.map(|f| (f, path.to_path_buf()));
        }
        Ok(entries)
    }

    /// Detects the format of a file from its first non-empty line and checks it agrees
    /// with the earlier files and the loading function.
    fn start_file(&self, path: &Path, line_no: usize, line: &[u8]) -> Result<Format> {
        let format = Format::detect(line);
        let parse_error = |message: String, expected: &str| Error::Parse {
            path: path.to_path_buf(),
            line: line_no,
            message,
            expected: expected.to_owned(),
        };
        if let Some((first, first_path)) = &self.first {
            if *first != format {
                return Err(parse_error(
                    format!(
                        "this file is {} but {} is {}",
                        format.name(),
                        first_path.display(),
                        first.name()
                    ),
                    &format!(
                        "the same format as {}: {}",
                        first_path.display(),
                        first.describe()
                    ),
                ));
            }
        }
        if self.bounds.is_some() && format == Format::Csv {
            return Err(parse_error(
                "this is a CSV file, whose ids cannot be checked against a fixed shape; \
                 load CSV training and test files together with `ratings_pair`"
                    .to_owned(),
                WHITESPACE_FORMAT,
            ));
        }
        Ok(format)
    }

    /// Parses one non-empty, trimmed data line.
    #[inline]
    fn parse_line(
        &mut self,
        path: &Path,
        line_no: usize,
        line: &[u8],
        format: Format,
    ) -> Result<([usize; 2], f32)> {
        let fail = |message: String| Error::Parse {
            path: path.to_path_buf(),
            line: line_no,
            message,
            expected: format.describe().to_owned(),
        };
        let mut fields: [&[u8]; 4] = [&[]; 4];
        let count = split_fields(line, format, &mut fields);
        match format {
            Format::Whitespace if !(3..=4).contains(&count) => {
                return Err(fail(format!("found {count} fields, need 3 or 4")));
            }
            Format::Csv if count < 3 => {
                return Err(fail(format!("found {count} fields, need at least 3")));
            }
            _ => {}
        }
        let [user, item, rating, timestamp] = fields;

        let value = std::str::from_utf8(rating)
            .ok()
            .and_then(|s| s.parse::<f32>().ok())
            .ok_or_else(|| fail(format!("rating {} is not a number", quote(rating))))?;
        if !value.is_finite() {
            return Err(fail(format!("rating {} is not finite", quote(rating))));
        }
        if value.abs() > MAX_RATING {
            return Err(fail(format!(
                "rating {} is beyond the limit: ratings are at most {MAX_RATING:e} in magnitude",
                quote(rating)
            )));
        }

        let index = match format {
            Format::Whitespace => {
                if count == 4 && !is_integer(timestamp) {
                    return Err(fail(format!(
                        "timestamp {} is not an integer",
                        quote(timestamp)
                    )));
                }
                let mut index = [0usize; 2];
                for (d, (name, field)) in [("user", user), ("item", item)].into_iter().enumerate() {
                    let id = match parse_uint(field) {
                        Ok(0) => {
                            return Err(fail(format!(
                                "{name} id {} is invalid: ids are 1-based",
                                quote(field)
                            )));
                        }
                        Ok(id) if id <= u64::from(u32::MAX) + 1 => id as usize,
                        Ok(_) | Err(IntError::TooLarge) => {
                            return Err(fail(format!(
                                "{name} id {} is too large (at most {})",
                                quote(field),
                                u64::from(u32::MAX) + 1
                            )));
                        }
                        Err(IntError::NotInteger) => {
                            return Err(fail(format!(
                                "{name} id {} is not a positive integer",
                                quote(field)
                            )));
                        }
                    };
                    index[d] = id - 1;
                    if id > self.max_ids[d] {
                        self.max_ids[d] = id;
                        self.max_at[d] = (self.files.len() - 1, line_no);
                    }
                }
                if let Some(shape) = self.bounds {
                    if index[0] >= shape[0] || index[1] >= shape[1] {
                        return Err(Error::OutOfBounds {
                            context: format!("{}:{line_no}: ", path.display()),
                            index: index.to_vec(),
                            shape: shape.to_vec(),
                        });
                    }
                }
                index
            }
            Format::Csv => {
                let id = |name: &str, field: &[u8]| match parse_uint(field) {
                    Ok(id) => Ok(id),
                    Err(IntError::TooLarge) => Err(fail(format!(
                        "{name} id {} is too large (at most {})",
                        quote(field),
                        u64::MAX
                    ))),
                    Err(IntError::NotInteger) => Err(fail(format!(
                        "{name} id {} is not a non-negative integer",
                        quote(field)
                    ))),
                };
                let (u, i) = (id("user", user)?, id("item", item)?);
                [self.users.index(u), self.items.index(i)]
            }
        };
        Ok((index, value))
    }
}

/// What the LIBSVM format looks like, for error messages.
const LIBSVM_FORMAT: &str = "LIBSVM `label index:value index:value ...` with a label +1, 1, -1 or 0 \
     and 1-based, increasing integer indices";

/// A binary classification data set in LIBSVM form, held as compressed sparse rows.
///
/// Sample `s` has label `labels[s]` (`+1.0` or `-1.0`) and the feature values
/// `values[k]` at features `features[k]` for `k` in `offsets[s]..offsets[s + 1]`.
/// Features are 0-based (the file's index minus one) and increase within a sample;
/// `offsets` has one more element than there are samples, starting at 0.
/// `n_features` bounds every feature index (for a pair loaded by [`libsvm_pair`], it
/// covers both files).
///
/// The arrays are [`DistArray`]s so that a `#[parallel_for]` loop can read them.
#[derive(Debug, Clone, PartialEq)]
pub struct LibSvm {
    /// `+1.0` or `-1.0` per sample.
    pub labels: DistArray<f32, 1>,
    /// Start of each sample's entries in `features` and `values`, plus the total at the end.
    pub offsets: DistArray<u32, 1>,
    /// 0-based feature index of each entry.
    pub features: DistArray<u32, 1>,
    /// Value of each entry.
    pub values: DistArray<f32, 1>,
    /// Number of features: every entry of `features` is below it.
    pub n_features: usize,
}

impl LibSvm {
    /// Builds a data set from CSR parts, checking that they fit together: `offsets` starts
    /// at 0, does not decrease, has `labels.len() + 1` elements and ends at
    /// `features.len() == values.len()`; features are below `n_features` and increase
    /// within each sample; labels are `+1.0` or `-1.0`; values are finite.
    ///
    /// # Errors
    /// [`Error::Shape`] saying which of these does not hold.
    ///
    /// ```
    /// use strads_runtime::load::LibSvm;
    /// let d = LibSvm::from_parts(vec![1.0, -1.0], vec![0, 2, 3], vec![0, 4, 1], vec![1.0, 0.5, 2.0], 5)?;
    /// assert_eq!(d.sample(0), (1.0, &[0, 4][..], &[1.0, 0.5][..]));
    /// assert!(LibSvm::from_parts(vec![1.0], vec![0, 1], vec![5], vec![1.0], 5).is_err());
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    pub fn from_parts(
        labels: Vec<f32>,
        offsets: Vec<u32>,
        features: Vec<u32>,
        values: Vec<f32>,
        n_features: usize,
    ) -> Result<LibSvm> {
        let fail = |message: String| Err(Error::Shape(format!("LIBSVM data: {message}")));
        if offsets.len() != labels.len() + 1 {
            return fail(format!(
                "{} offsets for {} samples, need one more than the samples",
                offsets.len(),
                labels.len()
            ));
        }
        if features.len() != values.len() {
            return fail(format!(
                "{} features but {} values",
                features.len(),
                values.len()
            ));
        }
        if offsets[0] != 0 || offsets[offsets.len() - 1] as usize != features.len() {
            return fail(format!(
                "offsets run from {} to {}, need 0 to {} (the number of entries)",
                offsets[0],
                offsets[offsets.len() - 1],
                features.len()
            ));
        }
        // Non-decreasing from 0 to the number of entries: every sample's range is in bounds.
        if let Some(s) = offsets.windows(2).position(|w| w[0] > w[1]) {
            return fail(format!(
                "offsets decrease at sample {s}: {} > {}",
                offsets[s],
                offsets[s + 1]
            ));
        }
        for (s, w) in offsets.windows(2).enumerate() {
            let row = &features[w[0] as usize..w[1] as usize];
            if let Some(p) = row.windows(2).position(|f| f[0] >= f[1]) {
                return fail(format!(
                    "features of sample {s} do not increase: {} then {}",
                    row[p],
                    row[p + 1]
                ));
            }
            if let Some(&f) = row.last().filter(|&&f| f as usize >= n_features) {
                return fail(format!(
                    "sample {s} has feature {f}, not below n_features = {n_features}"
                ));
            }
        }
        if let Some(s) = labels.iter().position(|&y| y != 1.0 && y != -1.0) {
            return fail(format!("label {} of sample {s} is not +1 or -1", labels[s]));
        }
        if let Some(k) = values.iter().position(|v| !v.is_finite()) {
            return fail(format!("value {} of entry {k} is not finite", values[k]));
        }
        Ok(Self::from_checked(
            labels, offsets, features, values, n_features,
        ))
    }

    /// Builds a data set from parts known to fit together.
    pub(crate) fn from_checked(
        labels: Vec<f32>,
        offsets: Vec<u32>,
        features: Vec<u32>,
        values: Vec<f32>,
        n_features: usize,
    ) -> LibSvm {
        let vec1 = |n: usize| [n];
        LibSvm {
            labels: DistArray::from_vec(vec1(labels.len()), labels).expect("1-D shape fits"),
            offsets: DistArray::from_vec(vec1(offsets.len()), offsets).expect("1-D shape fits"),
            features: DistArray::from_vec(vec1(features.len()), features).expect("1-D shape fits"),
            values: DistArray::from_vec(vec1(values.len()), values).expect("1-D shape fits"),
            n_features,
        }
    }

    /// Number of samples.
    pub fn samples(&self) -> usize {
        self.labels.len()
    }

    /// Number of stored entries (feature values) over all samples.
    pub fn nnz(&self) -> usize {
        self.features.len()
    }

    /// Sample `s`: its label, features and values.
    ///
    /// # Panics
    /// When `s >= self.samples()`.
    pub fn sample(&self, s: usize) -> (f32, &[u32], &[f32]) {
        let (lo, hi) = (self.offsets[s] as usize, self.offsets[s + 1] as usize);
        (
            self.labels[s],
            &self.features.as_slice()[lo..hi],
            &self.values.as_slice()[lo..hi],
        )
    }

    /// Number of samples labelled `+1`.
    pub fn positives(&self) -> usize {
        self.labels.as_slice().iter().filter(|&&y| y > 0.0).count()
    }
}

/// Loads a LIBSVM (svmlight) file of binary labels: one sample per line,
/// `label index:value index:value ...`, fields separated by spaces or tabs.
///
/// - The label is `+1` or `1` (positive) or `-1` or `0` (negative; any spelling of these
///   numbers, such as `1.0`, is accepted), stored as `+1.0` / `-1.0`.
/// - Indices are 1-based integers, strictly increasing within a line; feature
///   `index - 1` is stored. Values are finite numbers.
/// - A line may have no features. Blank lines, and everything from a `#` to the end of a
///   line (svmlight comments), are ignored; a UTF-8 byte order mark and `\r\n` endings are
///   accepted.
///
/// `n_features` is the largest index in the file. To evaluate a model on a test file
/// whose largest index is smaller than the training file's (as with `a9a.t`), load both
/// with [`libsvm_pair`].
///
/// Limits, so that a short or broken file cannot make a program allocate without bound:
/// a line holds at most [`MAX_LINE`] bytes, and the largest index (which sizes the
/// model) may be at most [`ID_FLOOR`] or [`IDS_PER_ENTRY`] times the number of entries
/// (over both files of a pair), whichever is larger.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read; [`Error::Parse`], naming the file, the
/// line, the offending field and the expected format, for a label that is not a number
/// or not binary, an entry that is not `index:value`, an index that is not a positive
/// integer or does not increase, a value that is not a finite number, an index or line
/// beyond the limits above, and a file with no samples. Nothing is returned half-built.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("strads-doc-libsvm-{}", std::process::id()));
/// std::fs::write(&path, "+1 3:1 11:0.5\n-1 1:1 \n0\n")?;
/// let d = strads_runtime::load::libsvm(&path)?;
/// assert_eq!((d.samples(), d.nnz(), d.n_features), (3, 3, 11));
/// assert_eq!(d.sample(0), (1.0, &[2, 10][..], &[1.0, 0.5][..]));
/// assert_eq!(d.sample(2), (-1.0, &[][..], &[][..]));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn libsvm(path: impl AsRef<Path>) -> Result<LibSvm> {
    let raw = RawLibSvm::load(path.as_ref())?;
    raw.check_index(raw.features.len())?;
    let n = raw.max_index;
    Ok(raw.build(n))
}

/// Loads a training and a test file (see [`libsvm`]) with one `n_features` covering
/// both, so that a model sized for the training set can be evaluated on the test set.
///
/// # Errors
/// As [`libsvm`], for either file.
///
/// ```
/// # let dir = std::env::temp_dir();
/// # let (train_path, test_path) = (
/// #     dir.join(format!("strads-doc-libsvm-train-{}", std::process::id())),
/// #     dir.join(format!("strads-doc-libsvm-test-{}", std::process::id())),
/// # );
/// std::fs::write(&train_path, "+1 1:1 7:1\n-1 2:1\n")?;
/// std::fs::write(&test_path, "-1 3:1\n")?;
/// let (train, test) = strads_runtime::load::libsvm_pair(&train_path, &test_path)?;
/// assert_eq!((train.n_features, test.n_features), (7, 7));
/// # std::fs::remove_file(&train_path)?;
/// # std::fs::remove_file(&test_path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn libsvm_pair(train: impl AsRef<Path>, test: impl AsRef<Path>) -> Result<(LibSvm, LibSvm)> {
    let train = RawLibSvm::load(train.as_ref())?;
    let test = RawLibSvm::load(test.as_ref())?;
    let entries = train.features.len() + test.features.len();
    train.check_index(entries)?;
    test.check_index(entries)?;
    let n = train.max_index.max(test.max_index);
    Ok((train.build(n), test.build(n)))
}

/// A LIBSVM file as read, before it becomes a [`LibSvm`].
struct RawLibSvm {
    labels: Vec<f32>,
    offsets: Vec<u32>,
    features: Vec<u32>,
    values: Vec<f32>,
    /// Largest 1-based index seen (0 when there are no entries).
    max_index: usize,
    /// The file and the line of `max_index`.
    path: PathBuf,
    max_line: usize,
}

impl RawLibSvm {
    fn build(self, n_features: usize) -> LibSvm {
        LibSvm::from_checked(
            self.labels,
            self.offsets,
            self.features,
            self.values,
            n_features,
        )
    }

    /// Checks the largest index against `entries`, the entries of the file(s) loaded
    /// together (see [`libsvm`]).
    fn check_index(&self, entries: usize) -> Result<()> {
        let limit = id_limit(entries);
        if self.max_index as u64 <= limit {
            return Ok(());
        }
        Err(Error::Parse {
            path: self.path.clone(),
            line: self.max_line,
            message: format!(
                "index {} is too large for {entries} {}: indices may be at most {limit} (the \
                 larger of {ID_FLOOR} and {IDS_PER_ENTRY} per entry), since they size the model",
                self.max_index,
                if entries == 1 { "entry" } else { "entries" }
            ),
            expected: LIBSVM_FORMAT.to_owned(),
        })
    }

    fn load(path: &Path) -> Result<RawLibSvm> {
        // a9a spends about 5 bytes per entry and 70 per line.
        let size = size_hint(path);
        let entries = usize::try_from(size / 5).unwrap_or(0);
        let lines = usize::try_from(size / 64).unwrap_or(0);
        let mut raw = RawLibSvm {
            labels: Vec::with_capacity(lines),
            offsets: Vec::with_capacity(lines + 1),
            features: Vec::with_capacity(entries),
            values: Vec::with_capacity(entries),
            max_index: 0,
            path: path.to_path_buf(),
            max_line: 0,
        };
        raw.offsets.push(0);
        let line_no = for_each_line(path, LIBSVM_FORMAT, |line_no, mut line| {
            if let Some(hash) = line.iter().position(|&b| b == b'#') {
                line = &line[..hash];
            }
            let line = trim(line);
            if line.is_empty() {
                return Ok(());
            }
            raw.parse_line(path, line_no, line)
        })?;
        if raw.labels.is_empty() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: line_no + 1,
                message: "the file has no samples".to_owned(),
                expected: LIBSVM_FORMAT.to_owned(),
            });
        }
        Ok(raw)
    }

    /// Parses one non-empty, trimmed line, appending its sample; on error nothing of the
    /// line is kept (the caller drops everything anyway).
    #[inline]
    fn parse_line(&mut self, path: &Path, line_no: usize, line: &[u8]) -> Result<()> {
        let fail = |message: String| Error::Parse {
            path: path.to_path_buf(),
            line: line_no,
            message,
            expected: LIBSVM_FORMAT.to_owned(),
        };
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let label_field = fields.next().expect("a non-empty trimmed line has a field");
        let label = match label_field {
            b"+1" | b"1" => 1.0,
            b"-1" | b"0" => -1.0,
            _ => match std::str::from_utf8(label_field)
                .ok()
                .and_then(|s| s.parse::<f32>().ok())
            {
                Some(y) if y == -1.0 || y == 0.0 => -1.0,
                // `1.0`, `+1e0`, ...: -1 is matched above.
                Some(y) if y.abs() == 1.0 => 1.0,
                Some(_) => {
                    return Err(fail(format!(
                        "label {} is not +1, 1, -1 or 0",
                        quote(label_field)
                    )));
                }
                None => {
                    return Err(fail(format!(
                        "label {} is not a number",
                        quote(label_field)
                    )));
                }
            },
        };
        let mut previous = 0u64;
        for entry in fields {
            let colon = entry.iter().position(|&b| b == b':');
            let (index, value) = match colon {
                Some(c) if c > 0 && c + 1 < entry.len() && !entry[c + 1..].contains(&b':') => {
                    (&entry[..c], &entry[c + 1..])
                }
                _ => {
                    return Err(fail(format!("entry {} is not index:value", quote(entry))));
                }
            };
            let index = match parse_uint(index) {
                Ok(0) => {
                    return Err(fail(format!(
                        "index 0 in {} is invalid: indices are 1-based",
                        quote(entry)
                    )));
                }
                Ok(i) if i <= u64::from(u32::MAX) + 1 => i,
                Ok(_) | Err(IntError::TooLarge) => {
                    return Err(fail(format!(
                        "index in {} is too large (at most {})",
                        quote(entry),
                        u64::from(u32::MAX) + 1
                    )));
                }
                Err(IntError::NotInteger) => {
                    return Err(fail(format!(
                        "index {} in {} is not a positive integer",
                        quote(index),
                        quote(entry)
                    )));
                }
            };
            if index <= previous {
                return Err(fail(format!(
                    "index {index} in {} does not follow index {previous}: indices must increase",
                    quote(entry)
                )));
            }
            previous = index;
            let value = if value == b"1" {
                1.0
            } else {
                std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<f32>().ok())
                    .ok_or_else(|| {
                        fail(format!(
                            "value {} in {} is not a number",
                            quote(value),
                            quote(entry)
                        ))
                    })?
            };
            if !value.is_finite() {
                return Err(fail(format!(
                    "value {} in {} is not finite",
                    quote(&entry[colon.unwrap_or(0) + 1..]),
                    quote(entry)
                )));
            }
            if self.features.len() == u32::MAX as usize {
                return Err(fail(format!(
                    "the file has more than {} entries (offsets are u32)",
                    u32::MAX
                )));
            }
            self.features.push((index - 1) as u32);
            self.values.push(value);
        }
        if previous as usize > self.max_index {
            self.max_index = previous as usize;
            self.max_line = line_no;
        }
        self.labels.push(label);
        self.offsets.push(self.features.len() as u32);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::MAX_QUOTE;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary file removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str, contents: &str) -> TempFile {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path =
                std::env::temp_dir().join(format!("strads-load-{}-{n}-{name}", std::process::id()));
            std::fs::write(&path, contents).unwrap();
            TempFile(path)
        }

        fn shown(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn entries(a: &SparseArray<f32, 2>) -> Vec<([usize; 2], f32)> {
        a.iter().map(|(k, &v)| (k, v)).collect()
    }

    fn err(contents: &str) -> (TempFile, String) {
        let f = TempFile::new("bad", contents);
        let e = ratings(&f.0).unwrap_err().to_string();
        (f, e)
    }

    #[test]
    fn whitespace_format_is_one_based() {
        let f = TempFile::new(
            "u.data",
            "1\t1\t5\t874965758\n\n2 3   4.5\n  1\t4\t1\t874965759  \r\n",
        );
        let r = ratings(&f.0).unwrap();
        assert_eq!(r.shape(), [2, 4]);
        assert_eq!(
            entries(&r),
            vec![([0, 0], 5.0), ([1, 2], 4.5), ([0, 3], 1.0)]
        );
    }

    #[test]
    fn csv_skips_header_and_reindexes_densely() {
        let f = TempFile::new(
            "ratings.csv",
            "\u{feff}userId,movieId,rating,timestamp\r\n\
             10,500,4.0,964982703\r\n\
             \r\n\
             3,7,3.5,964981247\r\n\
             10,7,0.5,964982224,extra\r\n",
        );
        let r = ratings(&f.0).unwrap();
        assert_eq!(r.shape(), [2, 2]);
        assert_eq!(
            entries(&r),
            vec![([0, 0], 4.0), ([1, 1], 3.5), ([0, 1], 0.5)]
        );
    }

    #[test]
    fn csv_without_header() {
        let f = TempFile::new("nohdr.csv", "0,0,1\n5, 2 ,2\n");
        let r = ratings(&f.0).unwrap();
        assert_eq!(r.shape(), [2, 2]);
        assert_eq!(entries(&r), vec![([0, 0], 1.0), ([1, 1], 2.0)]);
    }

    #[test]
    fn pair_shares_csv_mapping() {
        let train = TempFile::new("train.csv", "u,i,r\n7,100,4\n9,100,2\n");
        let test = TempFile::new("test.csv", "u,i,r\n9,300,3\n11,100,1\n7,300,5\n");
        let (a, b) = ratings_pair(&train.0, &test.0).unwrap();
        assert_eq!(a.shape(), [3, 2]);
        assert_eq!(b.shape(), [3, 2]);
        assert_eq!(entries(&a), vec![([0, 0], 4.0), ([1, 0], 2.0)]);
        assert_eq!(
            entries(&b),
            vec![([1, 1], 3.0), ([2, 0], 1.0), ([0, 1], 5.0)]
        );
    }

    #[test]
    fn pair_shares_one_based_shape() {
        let train = TempFile::new("train", "1 1 5\n2 2 4\n");
        let test = TempFile::new("test", "3 1 3\n1 6 2\n");
        let (a, b) = ratings_pair(&train.0, &test.0).unwrap();
        assert_eq!(a.shape(), [3, 6]);
        assert_eq!(b.shape(), [3, 6]);
        assert_eq!(entries(&b), vec![([2, 0], 3.0), ([0, 5], 2.0)]);
    }

    #[test]
    fn pair_rejects_mixed_formats() {
        let train = TempFile::new("train", "1 1 5\n");
        let test = TempFile::new("test.csv", "\nu,i,r\n1,1,5\n");
        let e = ratings_pair(&train.0, &test.0).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:2: this file is CSV but {} is whitespace-separated; expected the same \
                 format as {}: {WHITESPACE_FORMAT}",
                test.shown(),
                train.shown(),
                train.shown()
            )
        );
    }

    #[test]
    fn with_shape_checks_bounds() {
        let f = TempFile::new("ua.test", "1 1 5\n2 2 4\n943 1683 3\n");
        let r = ratings_with_shape(&f.0, [943, 1683]).unwrap();
        assert_eq!(r.shape(), [943, 1683]);
        assert_eq!(r.nnz(), 3);
        let e = ratings_with_shape(&f.0, [943, 1682])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{}:3: index [942, 1682] is outside the array's shape [943, 1682]",
                f.shown()
            )
        );
    }

    #[test]
    fn with_shape_rejects_csv() {
        let f = TempFile::new("r.csv", "u,i,r\n1,1,5\n");
        let e = ratings_with_shape(&f.0, [2, 2]).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:1: this is a CSV file, whose ids cannot be checked against a fixed shape; \
                 load CSV training and test files together with `ratings_pair`; \
                 expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn wrong_field_count() {
        let (f, e) = err("1 1 5\n1 2\n");
        assert_eq!(
            e,
            format!(
                "{}:2: found 2 fields, need 3 or 4; expected whitespace-separated \
                 `user item rating [timestamp]` with 1-based integer ids",
                f.shown()
            )
        );
        let (f, e) = err("1 1 5 3 9\n");
        assert_eq!(
            e,
            format!(
                "{}:1: found 5 fields, need 3 or 4; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("u,i,r\n1,1\n");
        assert_eq!(
            e,
            format!(
                "{}:2: found 2 fields, need at least 3; expected CSV \
                 `user,item,rating[,timestamp,...]` with non-negative integer ids and an \
                 optional header line",
                f.shown()
            )
        );
    }

    #[test]
    fn non_numeric_rating() {
        let (f, e) = err("1 1 5\n\n2 2 x 881250949\n");
        assert_eq!(
            e,
            format!(
                "{}:3: rating \"x\" is not a number; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1,1,four\n");
        assert_eq!(
            e,
            format!(
                "{}:1: rating \"four\" is not a number; expected {CSV_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn non_finite_rating() {
        let (f, e) = err("1 1 NaN\n");
        assert_eq!(
            e,
            format!(
                "{}:1: rating \"NaN\" is not finite; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1,1,3\n2,2,inf\n");
        assert_eq!(
            e,
            format!(
                "{}:2: rating \"inf\" is not finite; expected {CSV_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn non_integer_id() {
        let (f, e) = err("1 1.5 4\n");
        assert_eq!(
            e,
            format!(
                "{}:1: item id \"1.5\" is not a positive integer; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("userId,movieId,rating\n-3,1,4\n");
        assert_eq!(
            e,
            format!(
                "{}:2: user id \"-3\" is not a non-negative integer; expected {CSV_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 99999999999 4\n");
        assert_eq!(
            e,
            format!(
                "{}:1: item id \"99999999999\" is too large (at most 4294967296); \
                 expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn bad_timestamp() {
        let (f, e) = err("1 1 4 yesterday\n");
        assert_eq!(
            e,
            format!(
                "{}:1: timestamp \"yesterday\" is not an integer; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn id_zero() {
        let (f, e) = err("1 1 4\n0 3 4\n");
        assert_eq!(
            e,
            format!(
                "{}:2: user id \"0\" is invalid: ids are 1-based; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn empty_files() {
        let (f, e) = err("");
        assert_eq!(
            e,
            format!(
                "{}:1: the file has no ratings; expected {WHITESPACE_FORMAT}, or {CSV_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("\n  \n");
        assert_eq!(
            e,
            format!(
                "{}:3: the file has no ratings; expected {WHITESPACE_FORMAT}, or {CSV_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("userId,movieId,rating\n");
        assert_eq!(
            e,
            format!(
                "{}:2: the file has no ratings; expected {CSV_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn missing_file_is_io_error() {
        let path = std::env::temp_dir().join("strads-load-no-such-file");
        let e = ratings(&path).unwrap_err();
        assert!(
            matches!(&e, Error::Io { path: p, .. } if *p == path),
            "{e:?}"
        );
        assert!(e.to_string().starts_with(&format!("{}: ", path.display())));
    }

    #[test]
    fn long_fields_are_shortened() {
        let long = "7".repeat(30) + &"x".repeat(30);
        let (f, e) = err(&format!("1 1 {long}\n"));
        assert_eq!(
            e,
            format!(
                "{}:1: rating \"{}\"... is not a number; expected {WHITESPACE_FORMAT}",
                f.shown(),
                &long[..MAX_QUOTE]
            )
        );
    }

    #[test]
    fn split_is_deterministic_and_exact() {
        let all = SparseArray::from_entries(
            [50, 40],
            (0..1000).map(|n| ([n % 50, n % 40], n as f32)).collect(),
        )
        .unwrap();
        let (train, test) = split(&all, 0.1, 7);
        let (train2, test2) = split(&all, 0.1, 7);
        let (_, test3) = split(&all, 0.1, 8);
        assert_eq!((train.nnz(), test.nnz()), (900, 100));
        assert_eq!((train.shape(), test.shape()), ([50, 40], [50, 40]));
        assert_eq!(entries(&train), entries(&train2));
        assert_eq!(entries(&test), entries(&test2));
        assert_ne!(entries(&test), entries(&test3));
        // Relative order is kept: the values (original positions) increase in both halves.
        for half in [&train, &test] {
            assert!(half.values().windows(2).all(|w| w[0] < w[1]));
        }
        // Together they are the original entries.
        let mut merged: Vec<f32> = train
            .values()
            .iter()
            .chain(test.values())
            .copied()
            .collect();
        merged.sort_by(f32::total_cmp);
        assert_eq!(merged, all.values());
        let (all_train, none) = split(&all, 0.0, 1);
        assert_eq!((all_train.nnz(), none.nnz()), (1000, 0));
        let (none, all_test) = split(&all, 1.0, 1);
        assert_eq!((none.nnz(), all_test.nnz()), (0, 1000));
    }

    #[test]
    fn movielens_100k() {
        let dir = Path::new("/work/shared/data/movielens-100k");
        if !dir.exists() {
            return;
        }
        let (train, test) = ratings_pair(dir.join("ua.base"), dir.join("ua.test")).unwrap();
        assert_eq!(train.shape(), [943, 1682]);
        assert_eq!(test.shape(), [943, 1682]);
        assert_eq!(train.nnz(), 90570);
        assert_eq!(test.nnz(), 9430);
        let test_alone = ratings_with_shape(dir.join("ua.test"), train.shape()).unwrap();
        assert_eq!(entries(&test_alone), entries(&test));
    }

    #[test]
    fn movielens_latest_small() {
        let path = Path::new("/work/shared/data/movielens-latest-small/ratings.csv");
        if !path.exists() {
            return;
        }
        let r = ratings(path).unwrap();
        assert_eq!(r.nnz(), 100836);
        assert_eq!(r.shape(), [610, 9724]);
        assert!(r.values().iter().all(|v| (0.5..=5.0).contains(v)));
    }

    fn svm(contents: &str) -> LibSvm {
        let f = TempFile::new("svm", contents);
        libsvm(&f.0).unwrap()
    }

    fn svm_err(contents: &str) -> (TempFile, String) {
        let f = TempFile::new("bad.svm", contents);
        let e = libsvm(&f.0).unwrap_err().to_string();
        (f, e)
    }

    #[test]
    fn libsvm_reads_csr() {
        let d =
            svm("\u{feff}+1 3:1 11:0.5 \n\n-1 1:1\t2:-2.5e1\r\n0 # no features\n1.0 4:1 # note\n");
        assert_eq!(d.samples(), 4);
        assert_eq!(d.nnz(), 5);
        assert_eq!(d.n_features, 11);
        assert_eq!(d.labels.as_slice(), &[1.0, -1.0, -1.0, 1.0]);
        assert_eq!(d.offsets.as_slice(), &[0, 2, 4, 4, 5]);
        assert_eq!(d.features.as_slice(), &[2, 10, 0, 1, 3]);
        assert_eq!(d.values.as_slice(), &[1.0, 0.5, 1.0, -25.0, 1.0]);
        assert_eq!(d.positives(), 2);
        assert_eq!(d.sample(1), (-1.0, &[0, 1][..], &[1.0, -25.0][..]));
    }

    #[test]
    fn libsvm_pair_shares_n_features() {
        let train = TempFile::new("train.svm", "+1 1:1 123:1\n");
        let test = TempFile::new("test.svm", "-1 2:1 122:1\n");
        let (a, b) = libsvm_pair(&train.0, &test.0).unwrap();
        assert_eq!((a.n_features, b.n_features), (123, 123));
        let (b, a) = libsvm_pair(&test.0, &train.0).unwrap();
        assert_eq!((a.n_features, b.n_features), (123, 123));
        assert_eq!(libsvm(&test.0).unwrap().n_features, 122);
    }

    #[test]
    fn libsvm_bad_labels() {
        let (f, e) = svm_err("+1 1:1\nyes 2:1\n");
        assert_eq!(
            e,
            format!(
                "{}:2: label \"yes\" is not a number; expected LIBSVM \
                 `label index:value index:value ...` with a label +1, 1, -1 or 0 and 1-based, \
                 increasing integer indices",
                f.shown()
            )
        );
        let (f, e) = svm_err("2 1:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: label \"2\" is not +1, 1, -1 or 0; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        // A line that starts with a feature has no label.
        let (f, e) = svm_err("1:1 2:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: label \"1:1\" is not a number; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn libsvm_malformed_entries() {
        for (entry, line) in [
            ("3", "+1 3\n"),
            ("3:", "+1 3:\n"),
            (":1", "-1 :1\n"),
            ("3:1:1", "-1 3:1:1\n"),
        ] {
            let (f, e) = svm_err(line);
            assert_eq!(
                e,
                format!(
                    "{}:1: entry \"{entry}\" is not index:value; expected {LIBSVM_FORMAT}",
                    f.shown()
                )
            );
        }
        let (f, e) = svm_err("-1 1:1\n-1 2:1\n+1 x:1\n");
        assert_eq!(
            e,
            format!(
                "{}:3: index \"x\" in \"x:1\" is not a positive integer; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("-1 -2:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: index \"-2\" in \"-2:1\" is not a positive integer; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("-1 4294967297:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: index in \"4294967297:1\" is too large (at most 4294967296); \
                 expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn libsvm_index_zero() {
        let (f, e) = svm_err("+1 1:1\n\n+1 0:1 3:1\n");
        assert_eq!(
            e,
            format!(
                "{}:3: index 0 in \"0:1\" is invalid: indices are 1-based; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn libsvm_indices_must_increase() {
        let (f, e) = svm_err("-1 5:1 7:1 6:1\n");
        assert_eq!(
            e,
            format!(
                "{}:1: index 6 in \"6:1\" does not follow index 7: indices must increase; \
                 expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("-1 5:1 5:2\n");
        assert_eq!(
            e,
            format!(
                "{}:1: index 5 in \"5:2\" does not follow index 5: indices must increase; \
                 expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    /// Ids that would size the model far beyond what the file holds are refused, naming
    /// the line of the largest id (the whitespace format; CSV ids are re-indexed).
    #[test]
    fn ids_are_bounded_by_the_ratings() {
        let (f, e) = err("1 1 5\n100000000 2 3\n");
        assert_eq!(
            e,
            format!(
                "{}:2: user id 100000000 is too large for 2 ratings: 1-based ids may be at most \
                 1048576 (the larger of 1048576 and 16 per rating), since they size the model; \
                 re-index the ids densely, or use the CSV format, which does; expected \
                 {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = err("1 4294967296 5\n");
        assert!(
            e.starts_with(&format!(
                "{}:1: item id 4294967296 is too large for 1 rating: ",
                f.shown()
            )),
            "{e}"
        );
        // The floor: any file may use ids up to 2^20.
        let f = TempFile::new("floor", "1048576 1 5\n");
        assert_eq!(ratings(&f.0).unwrap().shape(), [1 << 20, 1]);
        // A pair counts the ratings of both files and names the file of the largest id.
        let train = TempFile::new("train", "1 1 5\n");
        let test = TempFile::new("test", "1 1 5\n1 2000000 3\n");
        let e = ratings_pair(&train.0, &test.0).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:2: item id 2000000 is too large for 3 ratings",
                test.shown()
            )),
            "{e}"
        );
        // CSV ids are dense whatever their values.
        let f = TempFile::new("big.csv", "4294967296,99999999999,5\n");
        assert_eq!(ratings(&f.0).unwrap().shape(), [1, 1]);
    }

    #[test]
    fn huge_ratings_are_refused() {
        let (f, e) = err("1 1 5\n2 2 3e38\n");
        assert_eq!(
            e,
            format!(
                "{}:2: rating \"3e38\" is beyond the limit: ratings are at most 1e9 in \
                 magnitude; expected {WHITESPACE_FORMAT}",
                f.shown()
            )
        );
        let (_, e) = err("1,1,-2e9\n");
        assert!(e.contains("rating \"-2e9\" is beyond the limit"), "{e}");
        let f = TempFile::new("ok", "1 1 -1e9\n");
        assert_eq!(ratings(&f.0).unwrap().values(), &[-1e9]);
    }

    #[test]
    fn libsvm_indices_are_bounded_by_the_entries() {
        let (f, e) = svm_err("+1 1:1\n-1 4294967296:1\n");
        assert_eq!(
            e,
            format!(
                "{}:2: index 4294967296 is too large for 2 entries: indices may be at most \
                 1048576 (the larger of 1048576 and 16 per entry), since they size the model; \
                 expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let train = TempFile::new("train.svm", "+1 1:1 2:1\n");
        let test = TempFile::new("test.svm", "-1 5000000:1\n");
        let e = libsvm_pair(&train.0, &test.0).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:1: index 5000000 is too large for 3 entries",
                test.shown()
            )),
            "{e}"
        );
        assert_eq!(svm("+1 1048576:1\n").n_features, 1 << 20);
    }

    #[test]
    fn libsvm_bad_values() {
        let (f, e) = svm_err("-1 5:one\n");
        assert_eq!(
            e,
            format!(
                "{}:1: value \"one\" in \"5:one\" is not a number; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("+1 1:1\n-1 5:NaN\n");
        assert_eq!(
            e,
            format!(
                "{}:2: value \"NaN\" in \"5:NaN\" is not finite; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("-1 5:-inf\n");
        assert_eq!(
            e,
            format!(
                "{}:1: value \"-inf\" in \"5:-inf\" is not finite; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn libsvm_empty_files() {
        let (f, e) = svm_err("");
        assert_eq!(
            e,
            format!(
                "{}:1: the file has no samples; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
        let (f, e) = svm_err("\n# only a comment\n  \n");
        assert_eq!(
            e,
            format!(
                "{}:4: the file has no samples; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }

    #[test]
    fn libsvm_pair_names_the_failing_file() {
        let train = TempFile::new("train.svm", "+1 1:1\n");
        let test = TempFile::new("test.svm", "+1 1:1\n-1 2:x\n");
        let e = libsvm_pair(&train.0, &test.0).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:2: value \"x\" in \"2:x\" is not a number; expected {LIBSVM_FORMAT}",
                test.shown()
            )
        );
        let missing = std::env::temp_dir().join("strads-load-no-such-libsvm");
        let e = libsvm_pair(&missing, &test.0).unwrap_err();
        assert!(
            matches!(&e, Error::Io { path, .. } if *path == missing),
            "{e:?}"
        );
    }

    #[test]
    fn libsvm_from_parts_checks() {
        let ok = LibSvm::from_parts(
            vec![1.0, -1.0],
            vec![0, 1, 3],
            vec![4, 0, 2],
            vec![1.0; 3],
            5,
        )
        .unwrap();
        assert_eq!(ok.sample(1), (-1.0, &[0, 2][..], &[1.0, 1.0][..]));
        let bad = |labels: Vec<f32>, offsets: Vec<u32>, features: Vec<u32>, n: usize| {
            let values = vec![1.0; features.len()];
            LibSvm::from_parts(labels, offsets, features, values, n)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            bad(vec![1.0], vec![0], vec![], 1),
            "shape mismatch: LIBSVM data: 1 offsets for 1 samples, need one more than the samples"
        );
        assert_eq!(
            bad(vec![1.0], vec![0, 2], vec![0], 1),
            "shape mismatch: LIBSVM data: offsets run from 0 to 2, need 0 to 1 (the number of entries)"
        );
        assert_eq!(
            bad(vec![1.0, 1.0], vec![0, 2, 1], vec![0], 3),
            "shape mismatch: LIBSVM data: offsets decrease at sample 1: 2 > 1"
        );
        assert_eq!(
            bad(vec![1.0], vec![0, 2], vec![3, 3], 5),
            "shape mismatch: LIBSVM data: features of sample 0 do not increase: 3 then 3"
        );
        assert_eq!(
            bad(vec![1.0], vec![0, 1], vec![5], 5),
            "shape mismatch: LIBSVM data: sample 0 has feature 5, not below n_features = 5"
        );
        assert_eq!(
            bad(vec![0.0], vec![0, 0], vec![], 5),
            "shape mismatch: LIBSVM data: label 0 of sample 0 is not +1 or -1"
        );
    }

    #[test]
    fn libsvm_a9a() {
        let dir = Path::new("/work/shared/data/libsvm-a9a");
        if !dir.exists() {
            return;
        }
        let (train, test) = libsvm_pair(dir.join("a9a"), dir.join("a9a.t")).unwrap();
        assert_eq!((train.samples(), train.nnz()), (32561, 451592));
        assert_eq!((test.samples(), test.nnz()), (16281, 225731));
        assert_eq!((train.n_features, test.n_features), (123, 123));
        assert_eq!((train.positives(), test.positives()), (7841, 3846));
        assert_eq!(libsvm(dir.join("a9a.t")).unwrap().n_features, 122);
        assert!(train.values.as_slice().iter().all(|&v| v == 1.0));
        // The head of PROVENANCE.md: `-1 3:1 11:1 14:1 19:1 39:1 ...`.
        let (y, f, _) = train.sample(0);
        assert_eq!(y, -1.0);
        assert_eq!(&f[..5], &[2, 10, 13, 18, 38]);
    }
}
