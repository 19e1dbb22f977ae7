// `break` in the parallel loop's body is an error at `break`: iterations run side by side
// on several workers, so there is no "rest of the loop" to skip.

use strads::prelude::*;

#[strads::parallel_for]
fn clip(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, limit: f32) {
    for i in 0..x.len() {
        if x[i] > limit {
            break;
        }
        out[i] = x[i];
    }
}

fn main() {}
