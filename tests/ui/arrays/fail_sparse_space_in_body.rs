// Naming the iterated sparse array inside its own loop is an error at that use: its entries
// reach the body through the loop pattern.

use strads::prelude::*;

#[strads::parallel_for]
fn normalise(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>) {
    for ([u, _i], &r) in ratings {
        w[[u, 0]] += r / ratings.nnz() as f32;
    }
}

fn main() {}
