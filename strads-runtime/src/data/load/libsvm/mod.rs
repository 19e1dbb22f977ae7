//! LIBSVM files ([`libsvm`], [`libsvm_pair`]): sparse binary classification data as a
//! CSR [`LibSvm`].

use std::path::{Path, PathBuf};

use crate::array::DistArray;
use crate::data::text::{ID_FLOOR, IDS_PER_ENTRY};
use crate::data::text::{IntError, Lines, MAX_LINE, id_limit, parse_uint, quote, size_hint, trim};
use crate::error::{Error, Result};

/// What the LIBSVM format looks like, for error messages.
pub(super) const LIBSVM_FORMAT: &str = "LIBSVM `label index:value index:value ...` with a label +1, 1, -1 or 0 \
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

    /// Sample `s`: its label, features and values. On a cluster job's driver, with the data
    /// set in place on the ranks, a window around them comes home (a walk over every
    /// sample brings the whole set, see [`gather`](Self::gather)).
    ///
    /// # Panics
    /// When `s >= self.samples()`.
    pub fn sample(&self, s: usize) -> (f32, &[u32], &[f32]) {
        let (lo, hi) = (self.offsets[s] as usize, self.offsets[s + 1] as usize);
        (
            self.labels[s],
            self.features.window_of(lo, hi),
            self.values.window_of(lo, hi),
        )
    }

    /// Number of samples labelled `+1`.
    pub fn positives(&self) -> usize {
        self.labels.as_slice().iter().filter(|&&y| y > 0.0).count()
    }

    /// Brings home every array other ranks of a cluster job hold of the data set (one
    /// transfer each; see [`DistArray::gather`]): on a job's driver, [`libsvm`],
    /// [`libsvm_pair`] and [`generate::libsvm_like`](crate::generate::libsvm_like) (or
    /// `try_libsvm_like`) keep each rank's samples where they were read or drawn. A program whose loops read the whole set on the driver (a
    /// loop planned by reconnaissance surveys every sample there; `features[k]` at `k`
    /// read from `offsets` is read whole) gathers it once after loading, instead of at
    /// its first loop. Nothing happens when the data set is here.
    pub fn gather(&self) {
        self.labels.gather();
        self.offsets.gather();
        self.features.gather();
        self.values.gather();
    }

    /// Whether some of the data set is held by other ranks of a cluster job (see
    /// [`gather`](Self::gather)).
    pub fn is_spread(&self) -> bool {
        self.labels.is_spread()
            || self.offsets.is_spread()
            || self.features.is_spread()
            || self.values.is_spread()
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
/// a line holds at most `MAX_LINE` bytes, and the largest index (which sizes the
/// model) may be at most [`ID_FLOOR`] or [`IDS_PER_ENTRY`] times the number of entries
/// (over both files of a pair), whichever is larger.
///
/// On a cluster job's driver the file is loaded in place: every rank reads the samples
/// that start in its byte range, so the file must be at the same path on every node (a
/// shared filesystem, or the same copy on each; a relative path is resolved in the
/// driver's directory; ranks that see other sizes refuse the load, but a different file
/// of the same size is not detected). Each rank keeps its samples as its regions of the
/// four arrays, and the data set comes back with the other ranks' regions away
/// ([`LibSvm::is_spread`], [`LibSvm::gather`]); the arrays and the errors are what one
/// process gives. A pipe, device or non-UTF-8 path is read on the driver instead.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read; [`Error::Parse`], naming the file, the
/// line, the offending field and the expected format, for a label that is not a number
/// or not binary, an entry that is not `index:value`, an index that is not a positive
/// integer or does not increase, a value that is not a finite number, an index or line
/// beyond the limits above, and a file with no samples. Nothing is returned half-built.
/// On a cluster, [`Error::Rank`](crate::Error::Rank) when the ranks see the file at other
/// sizes or a rank cannot hold its part.
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
    let path = path.as_ref();
    if let Some(s) = super::in_place_driver(&[path]) {
        let [d] = one_each(in_place::libsvm(s, &[path])?);
        return Ok(d);
    }
    let raw = RawLibSvm::load(path)?;
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
    let (train, test) = (train.as_ref(), test.as_ref());
    if let Some(s) = super::in_place_driver(&[train, test]) {
        let [train, test] = one_each(in_place::libsvm(s, &[train, test])?);
        return Ok((train, test));
    }
    let train = RawLibSvm::load(train)?;
    let test = RawLibSvm::load(test)?;
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
    /// Entries in the file before the lines read here (a rank's range: `in_place`), and
    /// the most entries the file may hold.
    before: u64,
    limit: u64,
    /// Only count the entries (into `before`), keeping no sample: a rank rechecking the
    /// entry limit from the entries before its range (`in_place`).
    counting: bool,
}

/// The data sets loaded in place, one per file asked for.
fn one_each<const F: usize>(sets: Vec<LibSvm>) -> [LibSvm; F] {
    sets.try_into()
        .unwrap_or_else(|_| unreachable!("one data set per file"))
}

/// The message of an index beyond [`id_limit`] of `entries`, the entries of the file(s)
/// loaded together.
fn index_message(index: u64, entries: usize) -> String {
    let limit = id_limit(entries);
    format!(
        "index {index} is too large for {entries} {}: indices may be at most {limit} (the \
         larger of {ID_FLOOR} and {IDS_PER_ENTRY} per entry), since they size the model",
        if entries == 1 { "entry" } else { "entries" }
    )
}

/// The most entries a file may hold: offsets are `u32` (less under
/// `testing::with_entry_limit`).
pub(crate) fn entry_limit() -> u64 {
    crate::testing::entry_limit().map_or(u64::from(u32::MAX), |n| n.min(u64::from(u32::MAX)))
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
        if self.max_index as u64 <= id_limit(entries) {
            return Ok(());
        }
        Err(Error::Parse {
            path: self.path.clone(),
            line: self.max_line,
            message: index_message(self.max_index as u64, entries),
            expected: LIBSVM_FORMAT.to_owned(),
        })
    }

    fn load(path: &Path) -> Result<RawLibSvm> {
        let mut lines = Lines::open(path, 0..u64::MAX, LIBSVM_FORMAT, MAX_LINE)?;
        let mut raw = RawLibSvm::new(path, size_hint(path), 0, entry_limit());
        raw.read(path, &mut lines)?;
        if raw.labels.is_empty() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: lines.count() + 1,
                message: "the file has no samples".to_owned(),
                expected: LIBSVM_FORMAT.to_owned(),
            });
        }
        Ok(raw)
    }

    /// An empty data set of file `path`, with room for about `bytes` of it; `before`
    /// entries precede it in the file, which may hold `limit`.
    fn new(path: &Path, bytes: u64, before: u64, limit: u64) -> RawLibSvm {
        // a9a spends about 5 bytes per entry and 70 per line.
        let entries = usize::try_from(bytes / 5).unwrap_or(0);
        let lines = usize::try_from(bytes / 64).unwrap_or(0);
        let mut offsets = Vec::with_capacity(lines + 1);
        offsets.push(0);
        RawLibSvm {
            labels: Vec::with_capacity(lines),
            offsets,
            features: Vec::with_capacity(entries),
            values: Vec::with_capacity(entries),
            max_index: 0,
            path: path.to_path_buf(),
            max_line: 0,
            before,
            limit,
            counting: false,
        }
    }

    /// Reads the samples of `lines` of file `path` (blank lines and `#` comments skipped),
    /// up to the first error.
    fn read(&mut self, path: &Path, lines: &mut Lines<'_>) -> Result<()> {
        while let Some((line_no, _)) = lines.advance()? {
            let mut line = lines.line();
            if let Some(hash) = line.iter().position(|&b| b == b'#') {
                line = &line[..hash];
            }
            let line = trim(line);
            if !line.is_empty() {
                self.parse_line(path, line_no, line)?;
            }
        }
        Ok(())
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
            if self.before + self.features.len() as u64 == self.limit {
                let why = if self.limit == u64::from(u32::MAX) {
                    "offsets are u32"
                } else {
                    "the limit `testing::with_entry_limit` set"
                };
                return Err(fail(format!(
                    "the file has more than {} entries ({why})",
                    self.limit
                )));
            }
            if self.counting {
                self.before += 1;
            } else {
                self.features.push((index - 1) as u32);
                self.values.push(value);
            }
        }
        if previous as usize > self.max_index {
            self.max_index = previous as usize;
            self.max_line = line_no;
        }
        if !self.counting {
            self.labels.push(label);
            self.offsets.push(self.features.len() as u32);
        }
        Ok(())
    }
}

pub(crate) mod in_place;
