// A closure defined before the loop and called inside it cannot be stored in the loop's
// struct: the error at its name says to write it as a function item (`pass_helper_fn.rs`).

use strads::prelude::*;

#[strads::parallel_for]
fn clipped(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, limit: f32) {
    let clip = |v: f32| v.min(limit).max(-limit);
    for i in 0..x.len() {
        out[i] = clip(x[i]);
    }
}

fn main() {}
