// Naming a sparse array in the body (other than through the loop pattern) is an error at its
// name: a sparse array can only be iterated.

use strads::prelude::*;

#[strads::parallel_for]
fn rescale(ratings: &SparseArray<f32, 2>, mask: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>) {
    for ([u, i], &r) in ratings {
        w[[u, 0]] += r * mask.len() as f32 * i as f32;
    }
}

fn main() {}
