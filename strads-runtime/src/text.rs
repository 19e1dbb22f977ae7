//! Byte-level helpers the data loaders ([`crate::load`], [`crate::corpus`]) share: the lines
//! of a file with their line numbers, trimming, unsigned integer fields, and fields quoted
//! in error messages.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{Error, Result};

/// Longest field (in characters) quoted verbatim in an error message.
pub(crate) const MAX_QUOTE: usize = 40;

/// Calls `f(line number, line)` for every line of `path` (1-based numbers; the line
/// without its `\n`, a UTF-8 byte order mark stripped from the first); returns the number
/// of lines. Stops at the first error `f` returns.
pub(crate) fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<usize> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let mut reader = BufReader::with_capacity(1 << 17, file);
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0usize;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(io_error)? == 0 {
            return Ok(line_no);
        }
        line_no += 1;
        let mut line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line_no == 1 {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        f(line_no, line)?;
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
        let n = for_each_line(&path, |no, line| {
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
}
