// A function without a top-level `for` loop is an error at its name.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    x.iter().for_each(|([i], v)| out[i] = 2.0 * v);
}

fn main() {}
