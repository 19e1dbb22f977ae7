// `ordered` is not supported yet: an error at the option that says when to drop it.

use strads::prelude::*;

#[strads::parallel_for(ordered)]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
