use super::*;
use crate::data::text::MAX_QUOTE;
use crate::error::Error;
use std::path::PathBuf;
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

mod libsvm;
mod ratings;
