// The loop pattern must bind one index per dim of the iterated array: `[u]` for a 2-D array
// is an error at the index pattern; rustc's pattern error on the original function follows.

use strads::prelude::*;

#[strads::parallel_for]
fn row_bias(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>) {
    for ([u], &r) in ratings {
        w[[u, 0]] += r;
    }
}

fn main() {}
