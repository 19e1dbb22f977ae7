// A local defined before the loop whose type is not evident from its value (here the result
// of a function) is an error at its name: the loop's struct stores it, so strads needs its
// type.

use strads::prelude::*;

fn step_of(lr: f32) -> f32 {
    2.0 * lr
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32) {
    let step = step_of(lr);
    for i in 0..x.len() {
        out[i] = step * x[i];
    }
}

fn main() {}
