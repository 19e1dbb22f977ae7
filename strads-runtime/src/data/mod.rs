//! The data side of strads: loaders for rating, LIBSVM and LDA-C files ([`load`],
//! [`corpus`]), synthetic data sets ([`generate`], [`corpus::generated`]), row
//! permutations for skewed data ([`permute`]), and the line reading they share (`text`).

pub mod corpus;
pub mod generate;
pub(crate) mod in_place;
pub mod load;
pub mod permute;
pub(crate) mod text;

/// The folder of a shared data set beside the checkout (`../shared/data/<set>`), for unit
/// tests that `build.rs` marks ignored when it is missing.
#[cfg(test)]
pub(crate) fn shared_data(set: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data")
        .join(set)
}

/// A file in the temporary folder for a loader's unit test, removed when dropped.
#[cfg(test)]
pub(crate) struct TempFile(std::path::PathBuf);

#[cfg(test)]
impl TempFile {
    /// A file named after the test process, a counter and `name`, holding `contents`.
    pub(crate) fn new(name: &str, contents: impl AsRef<[u8]>) -> TempFile {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("strads-data-{}-{n}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }

    /// The path, as error messages show it.
    pub(crate) fn shown(&self) -> String {
        self.0.display().to_string()
    }
}

#[cfg(test)]
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
