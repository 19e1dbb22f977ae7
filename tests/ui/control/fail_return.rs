// `return` in the loop body is an error at `return`: one iteration cannot end the function
// while other iterations still run on other workers.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        if x[i].is_nan() {
            return;
        }
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
