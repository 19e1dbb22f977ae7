// A local defined before the loop without a type annotation is an error at its name: the
// loop's struct stores it, so strads needs its type.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32) {
    let step = 2.0 * lr;
    for i in 0..x.len() {
        out[i] = step * x[i];
    }
}

fn main() {}
