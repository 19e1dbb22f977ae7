//! The data side of strads: loaders for rating, LIBSVM and LDA-C files ([`load`],
//! [`corpus`]), synthetic data sets ([`generate`], [`corpus::generated`]), row
//! permutations for skewed data ([`permute`]), and the line reading they share (`text`).

pub mod corpus;
pub mod generate;
pub mod load;
pub mod permute;
pub(crate) mod text;
