//! The data side of strads: loaders for rating, LIBSVM and LDA-C files ([`load`],
//! [`corpus`]), synthetic data sets ([`generate`], [`corpus::generated`]), row
//! permutations for skewed data ([`permute`]), and the line reading they share (`text`).

pub mod corpus;
pub mod generate;
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
