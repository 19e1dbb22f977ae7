// Two top-level `for` loops are an error at the second: each loop to parallelize goes in its
// own function.

use strads::prelude::*;

#[strads::parallel_for]
fn two_passes(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
    for i in 0..x.len() {
        out[i] += 1.0;
    }
}

fn main() {}
