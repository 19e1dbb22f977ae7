// `ordered` is a flag: giving it a value is an error at the option.

use strads::prelude::*;

#[strads::parallel_for(ordered = true)]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
