// An unknown strategy name in `expect` is an error at the string.

use strads::prelude::*;

#[strads::parallel_for(expect = "3d")]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
