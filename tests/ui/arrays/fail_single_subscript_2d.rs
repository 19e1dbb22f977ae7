// A 2-D array indexed with a single subscript is an error at the subscript, which shows the
// `w[[i, j]]` form; rustc's type error on the original function follows.

use strads::prelude::*;

#[strads::parallel_for]
fn first_col(w: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        out[i] = w[i];
    }
}

fn main() {}
