//! What the data sets made in place on a cluster job's ranks share (`load`'s rating files,
//! `corpus`'s LDA-C files): the byte range of a file each rank reads, and a rank's first
//! error as it crosses to the others, so that the job gives the error one process gives.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Bytes `[lo, hi)` of a file of `size` bytes that rank `rank` of `ranks` reads.
pub(crate) fn byte_range(size: u64, rank: usize, ranks: usize) -> std::ops::Range<u64> {
    let at = |r: usize| (size as u128 * r as u128 / ranks.max(1) as u128) as u64;
    at(rank)..at(rank + 1)
}

/// A rank's first error, as it crosses: what the driver needs to give the error one
/// process gives, with the path the caller named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Failure {
    Parse {
        message: String,
        expected: String,
    },
    Bounds {
        index: Vec<usize>,
        shape: Vec<usize>,
    },
    Io {
        not_found: bool,
        message: String,
    },
    /// An array's shape beyond what it may hold ([`Error::Shape`]).
    Shape(String),
    Other(String),
}

/// Where a failure is: the file, and the line within the file (`global`) or within the
/// rank's range of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Fault {
    pub file: usize,
    pub line: usize,
    pub global: bool,
    pub failure: Failure,
}

impl Fault {
    pub(crate) fn of(file: usize, line: usize, global: bool, e: Error, rank: usize) -> Fault {
        let (line, failure) = match e {
            Error::Parse {
                line: l,
                message,
                expected,
                ..
            } => (l, Failure::Parse { message, expected }),
            Error::OutOfBounds { index, shape, .. } => (line, Failure::Bounds { index, shape }),
            Error::Shape(m) => (line, Failure::Shape(m)),
            Error::Io { source, .. } => (
                0,
                Failure::Io {
                    not_found: source.kind() == std::io::ErrorKind::NotFound,
                    message: if rank == 0 {
                        source.to_string()
                    } else {
                        format!(
                            "{source} (on rank {rank} of the job: every rank opens the same \
                             path, on a shared filesystem or a copy on every node)"
                        )
                    },
                },
            ),
            other => (line, Failure::Other(other.to_string())),
        };
        Fault {
            file,
            line,
            global,
            failure,
        }
    }

    /// The error one process gives, naming `path`.
    pub(crate) fn error(self, path: &Path) -> Error {
        let path = path.to_path_buf();
        match self.failure {
            Failure::Parse { message, expected } => Error::Parse {
                path,
                line: self.line,
                message,
                expected,
            },
            Failure::Bounds { index, shape } => Error::OutOfBounds {
                context: format!("{}:{}: ", path.display(), self.line),
                index,
                shape,
            },
            Failure::Io { not_found, message } => Error::Io {
                path,
                source: if not_found {
                    std::io::Error::new(std::io::ErrorKind::NotFound, message)
                } else {
                    std::io::Error::other(message)
                },
            },
            Failure::Shape(m) => Error::Shape(m),
            Failure::Other(m) => Error::Rank(m),
        }
    }
}

/// The error when the ranks see `path` at different sizes: `sizes` by rank, `None` for a
/// rank that knows none (it could not open the file, say); the first rank whose size
/// differs from the first known one is named.
pub(crate) fn sizes_differ(
    path: &Path,
    sizes: impl IntoIterator<Item = Option<u64>>,
) -> Option<Fault> {
    let seen: Vec<(usize, u64)> = sizes
        .into_iter()
        .enumerate()
        .filter_map(|(r, b)| b.map(|b| (r, b)))
        .collect();
    let &(r0, b0) = seen.first()?;
    let &(r, b) = seen.iter().find(|(_, b)| *b != b0)?;
    Some(other(format!(
        "rank {r} of the job sees {} as {b} bytes, rank {r0} as {b0}: every rank reads its part \
         of the same file (a shared filesystem, or the same copy on every node)",
        path.display()
    )))
}

/// A failure no line names (it stops every rank alike).
pub(crate) fn other(message: String) -> Fault {
    Fault {
        file: 0,
        line: 0,
        global: true,
        failure: Failure::Other(message),
    }
}

/// Whether the files `paths` can be read in place: each named in UTF-8 (the name crosses
/// to the ranks) and a regular file or missing (a missing file gives, in place, the error
/// one process gives). A pipe, a device or `/proc` file, whose size the ranks cannot split
/// by, is read by one process on the driver instead.
pub(crate) fn readable_in_place(paths: &[&Path]) -> bool {
    paths.iter().all(|p| {
        let regular = match std::fs::metadata(p) {
            Ok(m) => m.is_file(),
            Err(_) => true,
        };
        p.to_str().is_some() && regular
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first rank whose size differs from the first known one is named; ranks that
    /// know no size are passed over.
    #[test]
    fn sizes_that_differ_name_the_first_rank_that_differs() {
        let path = Path::new("/data/x.txt");
        assert!(sizes_differ(path, [Some(7), Some(7), None]).is_none());
        assert!(sizes_differ(path, [None, None]).is_none());
        let f = sizes_differ(path, [None, Some(7), Some(7), Some(9), Some(8)]).unwrap();
        assert_eq!(
            f.error(path).to_string(),
            Error::Rank(
                "rank 3 of the job sees /data/x.txt as 9 bytes, rank 1 as 7: every rank reads \
                 its part of the same file (a shared filesystem, or the same copy on every node)"
                    .into()
            )
            .to_string()
        );
    }
}
