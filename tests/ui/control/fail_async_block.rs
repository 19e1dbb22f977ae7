// An `async` block in the loop body is an error at the block.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        let _later = async { 1.0f32 };
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
