//! The parser of rating files behind [`ratings`](super::ratings) and its siblings: the
//! format of a file (whitespace or CSV), dense ids for CSV, and the bounds on ids.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::data::text::{ID_FLOOR, IDS_PER_ENTRY};
use crate::data::text::{IntError, Lines, MAX_LINE, for_each_line, id_limit, parse_uint, quote};
use crate::data::text::{size_hint, trim};
use crate::error::{Error, Result};

use super::{CSV_FORMAT, MAX_RATING, WHITESPACE_FORMAT};

/// The two file formats.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
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

    pub(super) fn describe(self) -> &'static str {
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

/// The hasher of loading's and generation's maps of ids and packed index pairs: foldhash's
/// fast hasher with a fixed seed (the same maps in every run); the keys are not
/// adversarial, and SipHash would dominate loading and generation time.
pub(crate) type U64BuildHasher = foldhash::fast::FixedState;

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

    /// The ids, by their index.
    fn in_order(&self) -> Vec<u64> {
        let mut ids = vec![0; self.map.len()];
        for (&id, &i) in &self.map {
            ids[i] = id;
        }
        ids
    }
}

/// A rating: its indices and value.
pub(super) type Rating = ([usize; 2], f32);

/// Where a file's ratings start, as every rank of a job finds it alike: the format, and
/// the offset of a CSV header line to skip.
pub(super) struct Start {
    pub(super) format: Format,
    pub(super) header: Option<u64>,
}

/// The error for a file without ratings: `line` is one past its last.
pub(super) fn no_ratings(path: &Path, line: usize, format: Option<Format>) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        line,
        message: "the file has no ratings".to_owned(),
        expected: match format {
            Some(f) => f.describe().to_owned(),
            None => format!("{WHITESPACE_FORMAT}, or {CSV_FORMAT}"),
        },
    }
}

/// Checks the largest 1-based ids, each with the file and line where it is first seen,
/// against the number of ratings loaded (see [`ratings`](super::ratings)).
/// The error names the dimension too.
pub(super) fn check_max_ids(
    max: [(usize, &Path, usize); 2],
    ratings: usize,
) -> std::result::Result<(), (usize, Error)> {
    let limit = id_limit(ratings);
    for (d, name) in ["user", "item"].into_iter().enumerate() {
        let (id, path, line) = max[d];
        if id as u64 > limit {
            return Err((
                d,
                Error::Parse {
                    path: path.to_path_buf(),
                    line,
                    message: format!(
                        "{name} id {id} is too large for {ratings} {}: 1-based ids may be at \
                     most {limit} (the larger of {ID_FLOOR} and {IDS_PER_ENTRY} per rating), \
                     since they size the model; re-index the ids densely, or use the CSV \
                     format, which does",
                        if ratings == 1 { "rating" } else { "ratings" }
                    ),
                    expected: WHITESPACE_FORMAT.to_owned(),
                },
            ));
        }
    }
    Ok(())
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
pub(super) struct Loader {
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
    pub(super) fn new(bounds: Option<[usize; 2]>) -> Self {
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
    pub(super) fn shape(&self) -> [usize; 2] {
        match (self.bounds, &self.first) {
            (Some(shape), _) => shape,
            (None, Some((Format::Csv, _))) => [self.users.len(), self.items.len()],
            _ => self.max_ids,
        }
    }

    /// Checks the largest 1-based ids against the number of ratings loaded (see
    /// [`ratings`]); CSV ids are dense and a fixed shape is the caller's.
    pub(super) fn check_ids(&self, ratings: usize) -> Result<()> {
        if self.bounds.is_some() || !matches!(self.first, Some((Format::Whitespace, _))) {
            return Ok(());
        }
        let at = |d: usize| {
            let (file, line) = self.max_at[d];
            (self.max_ids[d], self.files[file].as_path(), line)
        };
        check_max_ids([at(0), at(1)], ratings).map_err(|(_, e)| e)
    }

    /// Whether the shape is fixed (`ratings_with_shape`).
    pub(super) fn has_bounds(&self) -> bool {
        self.bounds.is_some()
    }

    /// Reads every rating of `path`, extending the id mappings and the shape.
    pub(super) fn load(&mut self, path: &Path) -> Result<Vec<([usize; 2], f32)>> {
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
            let format = format.or(self.first.as_ref().map(|(f, _)| *f));
            return Err(no_ratings(path, line_no + 1, format));
        }
        if self.first.is_none() {
            self.first = format.map(|f| (f, path.to_path_buf()));
        }
        Ok(entries)
    }

    /// The format of the first file (its first non-empty line), once known.
    pub(super) fn first_format(&self) -> Option<Format> {
        self.first.as_ref().map(|(f, _)| *f)
    }

    /// Finds where the ratings of `path` start, as [`load`](Loader::load) would, and
    /// checks the format against the files before (their format set by `detect` too);
    /// `None` when the file has no non-empty line. The error's line is the file's own.
    /// `shown` is the path as the caller named it, for messages about later files.
    pub(super) fn detect(&mut self, path: &Path, shown: &Path) -> Result<Option<Start>> {
        let any_format = format!("{WHITESPACE_FORMAT}, or {CSV_FORMAT}");
        let mut lines = Lines::open(path, 0..u64::MAX, &any_format, MAX_LINE)?;
        while let Some((line_no, at)) = lines.advance()? {
            let line = trim(lines.line());
            if line.is_empty() {
                continue;
            }
            let format = self.start_file(path, line_no, line)?;
            if self.first.is_none() {
                self.first = Some((format, shown.to_path_buf()));
            }
            let header = (format == Format::Csv && is_csv_header(line)).then_some(at);
            return Ok(Some(Start { format, header }));
        }
        Ok(None)
    }

    /// Reads the ratings on the lines of `path` that start within `range` (a file
    /// [`detect`](Loader::detect) started; `None` when it found no ratings), extending the
    /// id mappings; each file's largest ids start from 0. Gives the entries, the number of
    /// lines read, and the first error, whose line (counted within the range) is the last.
    pub(super) fn load_range(
        &mut self,
        path: &Path,
        range: std::ops::Range<u64>,
        start: Option<&Start>,
    ) -> (Vec<Rating>, usize, Option<Error>) {
        self.files.push(path.to_path_buf());
        self.max_ids = [0; 2];
        let mut entries = Vec::new();
        let any_format = format!("{WHITESPACE_FORMAT}, or {CSV_FORMAT}");
        let mut lines = match Lines::open(path, range, &any_format, MAX_LINE) {
            Ok(lines) => lines,
            Err(e) => return (entries, 0, Some(e)),
        };
        loop {
            let at = match lines.advance() {
                Ok(Some((_, at))) => at,
                Ok(None) => return (entries, lines.count(), None),
                Err(e) => return (entries, lines.count(), Some(e)),
            };
            let line = trim(lines.line());
            let Some(start) = start.filter(|s| !line.is_empty() && s.header != Some(at)) else {
                continue;
            };
            match self.parse_line(path, lines.count(), line, start.format) {
                Ok(entry) => entries.push(entry),
                Err(e) => return (entries, lines.count(), Some(e)),
            }
        }
    }

    /// The largest 1-based ids of the file loaded last, each with the line (within its
    /// range) where it is first seen.
    pub(super) fn file_max(&self) -> [(usize, usize); 2] {
        [0, 1].map(|d| (self.max_ids[d], self.max_at[d].1))
    }

    /// The CSV ids met so far (users, then items), by their dense index here.
    pub(super) fn ids_in_order(&self) -> [Vec<u64>; 2] {
        [self.users.in_order(), self.items.in_order()]
    }

    /// How many distinct CSV users and items were met so far.
    pub(super) fn ids_met(&self) -> [usize; 2] {
        [self.users.len(), self.items.len()]
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
