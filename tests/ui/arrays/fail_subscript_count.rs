// An index with the wrong number of subscripts is an error at the index: `w` has 2 dims.
// rustc's type error on the original function follows.

use strads::prelude::*;

#[strads::parallel_for]
fn first_col(w: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        out[i] = w[[i, 0, 0]];
    }
}

fn main() {}
