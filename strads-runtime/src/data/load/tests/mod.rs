use super::*;
use crate::data::text::MAX_QUOTE;
use crate::error::Error;

/// A temporary file removed on drop.
use crate::data::TempFile;

fn entries(a: &SparseArray<f32, 2>) -> Vec<([usize; 2], f32)> {
    a.iter().map(|(k, &v)| (k, v)).collect()
}

fn err(contents: &str) -> (TempFile, String) {
    let f = TempFile::new("bad", contents);
    let e = ratings(&f.0).unwrap_err().to_string();
    (f, e)
}

mod libsvm;
mod ratings;
mod triples;
mod words;
