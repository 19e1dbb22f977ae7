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

#[test]
fn progress_counts_the_bytes_loaders_read() {
    let body = "1\t1\t5\t0\n2\t3\t4\t0\n".repeat(50);
    let f = TempFile::new("progress.data", &body);
    let (read0, total0) = progress();
    ratings(&f.0).unwrap();
    let (read, total) = progress();
    // Other tests load meanwhile: at least this file's bytes, on both counts.
    assert!(total - total0 >= body.len() as u64, "{total0} -> {total}");
    assert!(read - read0 >= body.len() as u64, "{read0} -> {read}");
}
