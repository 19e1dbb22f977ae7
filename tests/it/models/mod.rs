//! The programs of the examples and benches, end to end: SGD-MF (generated and MovieLens),
//! id relabelling, the benches' loops, LDA, sparse logistic regression, TransE, word2vec.

mod bench_loops;
mod lda;
mod movielens;
mod permute;
mod saved;
mod sgd_replay;
mod sparse_lr;
mod transe;
mod word2vec;
