//! Byte-level helpers the data loaders ([`crate::load`], [`crate::corpus`]) share: the lines
//! of a file with their line numbers, trimming, unsigned integer fields, and fields quoted
//! in error messages.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// The loaders' floor for the largest id a file may hold where ids size an array (1-based
/// rating ids, LIBSVM feature indices, LDA-C word ids without a vocabulary): any file may
/// use ids up to 1 048 576.
pub const ID_FLOOR: u64 = 1 << 20;

/// Above [`ID_FLOOR`], the largest id may be at most this many times the number of
/// entries the file holds (ratings, `index:value` or `id:count` pairs), so that a few
/// lines cannot make a program allocate gigabytes.
pub const IDS_PER_ENTRY: u64 = 16;

/// The largest id a file of `entries` entries may hold (see [`ID_FLOOR`]).
pub(crate) fn id_limit(entries: usize) -> u64 {
    ID_FLOOR.max(IDS_PER_ENTRY.saturating_mul(entries as u64))
}

/// Longest field (in characters) quoted verbatim in an error message.
pub(crate) const MAX_QUOTE: usize = 40;

/// Longest line (in bytes, without its `\n`) the loaders read: 16 MiB, far above real
/// data lines (a LIBSVM line of 100 000 features is about 1.5 MB), so that a binary file
/// or an endless stream such as `/dev/zero` fails at once instead of filling memory.
pub const MAX_LINE: usize = 1 << 24;

/// Calls `f(line number, line)` for every line of `path` (1-based numbers; the line
/// without its `\n`, a UTF-8 byte order mark stripped from the first); returns the number
/// of lines. Stops at the first error `f` returns. A line longer than [`MAX_LINE`] is an
/// [`Error::Parse`] expecting `expected` (the file's format), read no further.
pub(crate) fn for_each_line(
    path: &Path,
    expected: &str,
    mut f: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<usize> {
    for_each_line_max(path, expected, MAX_LINE, &mut f)
}

/// [`for_each_line`] with lines of at most `max` bytes.
fn for_each_line_max(
    path: &Path,
    expected: &str,
    max: usize,
    f: &mut impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<usize> {
    let mut lines = Lines::open(path, 0..u64::MAX, expected, max)?;
    while let Some((line_no, _)) = lines.advance()? {
        f(line_no, lines.line())?;
    }
    Ok(lines.count())
}

/// How far this process's loaders are: bytes read and bytes to read of the files they
/// opened, summed since the process started (what [`crate::load::progress`] reports).
pub(crate) static READ: AtomicU64 = AtomicU64::new(0);
pub(crate) static TO_READ: AtomicU64 = AtomicU64::new(0);

/// A reader that counts what it reads into [`READ`].
pub(crate) struct Counted<R>(pub(crate) R);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        READ.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Counts `path`'s bytes in `[lo, hi)` as to be read.
pub(crate) fn to_read(file: &File, range: &std::ops::Range<u64>) {
    let len = file.metadata().map_or(0, |m| m.len());
    TO_READ.fetch_add(
        range.end.min(len).saturating_sub(range.start),
        Ordering::Relaxed,
    );
}

/// The lines of a file that start within a byte range, read one at a time: what one rank
/// of a cluster job reads of a file every rank sees (the data loaded in place: `load`'s
/// rating files, `corpus`'s LDA-C files). The ranges `[lo, hi)` of the ranks, one after
/// the other, cover the file, so every line is read by exactly one rank: the one whose
/// range holds its first byte.
///
/// Lines are numbered from 1 within the range; a UTF-8 byte order mark is stripped from
/// the file's first line. A line longer than `max` bytes is an [`Error::Parse`] expecting
/// `expected`, read no further.
pub(crate) struct Lines<'p> {
    path: &'p Path,
    expected: &'p str,
    max: usize,
    reader: BufReader<File>,
    buf: Vec<u8>,
    /// Offset of the next line's first byte.
    at: u64,
    hi: u64,
    line_no: usize,
}

impl<'p> Lines<'p> {
    /// Opens `path` at the first line that starts at or after `range.start`.
    pub(crate) fn open(
        path: &'p Path,
        range: std::ops::Range<u64>,
        expected: &'p str,
        max: usize,
    ) -> Result<Self> {
        let io_error = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_error)?;
        to_read(&file, &range);
        let mut reader = BufReader::with_capacity(1 << 17, file);
        let mut at = 0;
        let mut hi = range.end;
        if range.start > 0 {
            // The line holding byte `start - 1` belongs to the range before this one.
            reader
                .seek(SeekFrom::Start(range.start - 1))
                .map_err(io_error)?;
            let mut skipped = Vec::new();
            let n = (&mut reader)
                .take(max as u64 + 2)
                .read_until(b'\n', &mut skipped)
                .map_err(io_error)?;
            at = range.start - 1 + n as u64;
            if skipped.last() != Some(&b'\n') {
                // The file ends in that line, or the line is longer than `max`: the
                // range before reads it (and refuses it); nothing starts in this one.
                hi = 0;
            }
        }
        Ok(Lines {
            path,
            expected,
            max,
            reader,
            buf: Vec::with_capacity(4096),
            at,
            hi,
            line_no: 0,
        })
    }

    /// Reads the next line of the range: its number and its first byte's offset, or
    /// `None` after the last.
    pub(crate) fn advance(&mut self) -> Result<Option<(usize, u64)>> {
        if self.at >= self.hi {
            return Ok(None);
        }
        self.buf.clear();
        // At most `max` bytes and the `\n`: a longer line stops here.
        let read = (&mut self.reader)
            .take(self.max as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| Error::Io {
                path: self.path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            return Ok(None);
        }
        READ.fetch_add(read as u64, Ordering::Relaxed);
        let start = self.at;
        self.at += read as u64;
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > self.max {
            return Err(Error::Parse {
                path: self.path.to_path_buf(),
                line: self.line_no,
                message: format!(
                    "the line is longer than {} bytes (the loaders' limit), starting {}: \
                     not a text file of this format",
                    self.max,
                    quote(&self.buf[..self.buf.len().min(MAX_QUOTE)])
                ),
                expected: self.expected.to_owned(),
            });
        }
        if start == 0 && self.buf.starts_with(b"\xEF\xBB\xBF") {
            self.buf.drain(..3);
        }
        Ok(Some((self.line_no, start)))
    }

    /// The line [`advance`](Lines::advance) read last, without its `\n`.
    pub(crate) fn line(&self) -> &[u8] {
        &self.buf
    }

    /// How many lines were read.
    pub(crate) fn count(&self) -> usize {
        self.line_no
    }
}

/// The size of the file at `path` in bytes, 0 when unknown (a capacity hint).
pub(crate) fn size_hint(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Why an unsigned integer field did not parse.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum IntError {
    /// Empty, or not all ASCII digits.
    NotInteger,
    /// Larger than `u64::MAX`.
    TooLarge,
}

/// Parses ASCII digits into a `u64` (callers check their own bounds).
#[inline]
pub(crate) fn parse_uint(field: &[u8]) -> std::result::Result<u64, IntError> {
    if field.is_empty() {
        return Err(IntError::NotInteger);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in field {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(IntError::NotInteger);
        }
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        Err(IntError::TooLarge)
    } else {
        Ok(v)
    }
}

/// `field` as a quoted, escaped string, shortened when very long.
pub(crate) fn quote(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > MAX_QUOTE {
        let short: String = text.chars().take(MAX_QUOTE).collect();
        format!("{short:?}...")
    } else {
        format!("{text:?}")
    }
}

/// Strips ASCII whitespace (including `\r`) from both ends.
#[inline]
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unsigned_integers() {
        assert_eq!(parse_uint(b"0"), Ok(0));
        assert_eq!(parse_uint(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_uint(b"18446744073709551616"), Err(IntError::TooLarge));
        assert_eq!(
            parse_uint(b"99999999999999999999x"),
            Err(IntError::NotInteger)
        );
        assert_eq!(parse_uint(b""), Err(IntError::NotInteger));
        assert_eq!(parse_uint(b"-1"), Err(IntError::NotInteger));
        assert_eq!(parse_uint(b"1.5"), Err(IntError::NotInteger));
    }

    #[test]
    fn trims_and_quotes() {
        assert_eq!(trim(b" \t1 2\r\n"), b"1 2");
        assert_eq!(trim(b"  "), b"");
        assert_eq!(quote(b"a\"b"), "\"a\\\"b\"");
        let long = "x".repeat(MAX_QUOTE + 5);
        assert_eq!(
            quote(long.as_bytes()),
            format!("{:?}...", &long[..MAX_QUOTE])
        );
    }

    #[test]
    fn lines_are_numbered_without_newline_or_bom() {
        let dir = std::env::temp_dir().join(format!("strads-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lines.txt");
        std::fs::write(&path, b"\xEF\xBB\xBFa\r\n\nb").unwrap();
        let mut seen = Vec::new();
        let n = for_each_line(&path, "lines", |no, line| {
            seen.push((no, line.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            seen,
            vec![(1, b"a\r".to_vec()), (2, Vec::new()), (3, b"b".to_vec())]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A line longer than the limit is an error naming the file and line, read no further
    /// (lines up to the limit are fine, with or without their `\n`).
    #[test]
    fn long_lines_are_refused() {
        let dir = std::env::temp_dir().join(format!("strads-text-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("long.txt");
        std::fs::write(&path, b"12345678\nabcdefgh\n123456789\n").unwrap();
        let mut seen = 0;
        let e = for_each_line_max(&path, "short lines", 8, &mut |_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(seen, 2);
        assert_eq!(
            e.to_string(),
            format!(
                "{}:3: the line is longer than 8 bytes (the loaders' limit), starting \
                 \"123456789\": not a text file of this format; expected short lines",
                path.display()
            )
        );
        std::fs::write(&path, b"12345678").unwrap();
        assert_eq!(
            for_each_line_max(&path, "short lines", 8, &mut |_, l| {
                assert_eq!(l, b"12345678");
                Ok(())
            })
            .unwrap(),
            1
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Ranges that cover a file, cut anywhere, read every line exactly once, in order and
    /// with its offset; a range inside a line reads nothing.
    #[test]
    fn ranges_read_every_line_once() {
        let dir = std::env::temp_dir().join(format!("strads-text-ranges-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ranges.txt");
        let text = b"\xEF\xBB\xBFab\n\ncd\r\nefg\nh";
        std::fs::write(&path, text).unwrap();
        let whole = |lo: u64, hi: u64| {
            let mut lines = Lines::open(&path, lo..hi, "lines", 8).unwrap();
            let mut seen = Vec::new();
            while let Some((_, at)) = lines.advance().unwrap() {
                seen.push((at, lines.line().to_vec()));
            }
            seen
        };
        let all = whole(0, u64::MAX);
        assert_eq!(
            all,
            vec![
                (0, b"ab".to_vec()),
                (6, Vec::new()),
                (7, b"cd\r".to_vec()),
                (11, b"efg".to_vec()),
                (15, b"h".to_vec())
            ]
        );
        let n = text.len() as u64;
        for a in 0..=n {
            for b in a..=n {
                let mut parts = whole(0, a);
                parts.extend(whole(a, b));
                parts.extend(whole(b, n));
                assert_eq!(parts, all, "cut at {a} and {b}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An endless stream fails once the limit is reached.
    #[cfg(unix)]
    #[test]
    fn dev_zero_fails_fast() {
        let e = for_each_line(Path::new("/dev/zero"), "text", |_, _| Ok(())).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "/dev/zero:1: the line is longer than 16777216 bytes (the loaders' limit)"
            ),
            "{e}"
        );
    }
}
