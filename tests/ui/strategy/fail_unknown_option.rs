// An unknown option is an error at its name that lists the known ones.

use strads::prelude::*;

#[strads::parallel_for(repeated, fast)]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
