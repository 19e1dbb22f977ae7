// A range without an end is an error at the range: the iteration space must be finite.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0.. {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
