//! The one error type of strads.

use std::path::PathBuf;

/// Everything that can go wrong in strads' runtime, with enough context to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A line of a data file does not have the expected format.
    #[error("{}:{line}: {message}; expected {expected}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        message: String,
        /// The format the loader expects.
        expected: String,
    },
    /// An index lies outside an array's shape.
    #[error("{context}index {index:?} is outside the array's shape {shape:?}")]
    OutOfBounds {
        /// Where the index came from (`"u.data:17: "`), or empty.
        context: String,
        /// The offending index.
        index: Vec<usize>,
        /// The array's shape.
        shape: Vec<usize>,
    },
    /// Two things that must agree in shape do not.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// Memory for a requested size could not be had (or the size does not fit in a
    /// `u64`: `bytes` is `None`).
    #[error("cannot allocate {} for {what}", match bytes {
        Some(b) => format!("{b} bytes"),
        None => "more than 2^64 bytes".to_owned(),
    })]
    Alloc {
        /// What the memory was for.
        what: String,
        /// How much was asked for.
        bytes: Option<u64>,
    },
    /// A setting (environment variable, flag) has an invalid value.
    #[error("invalid setting {name}={value:?}: {expected}")]
    Setting {
        /// The setting's name.
        name: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A rank of a cluster job could not do its part of making data in place (the
    /// message names the rank and says what went wrong there).
    #[error("{0}")]
    Rank(String),
    /// A checkpoint file that does not read back: cut short, corrupted, of another
    /// format, or without the array asked for.
    #[error("{}: {message}", path.display())]
    Checkpoint {
        /// The file (`<memory>` for a checkpoint never saved).
        path: PathBuf,
        /// What is wrong, naming the array when one is.
        message: String,
    },
}

/// `Result` with strads' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
