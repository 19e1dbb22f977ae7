// A part of a tuple pattern whose type is not evident (here the result of a function) is
// an error at its name, with a fix written for the tuple: the pattern's type, the evident
// part's type filled in.

use strads::prelude::*;

fn low_of(lr: f32) -> f32 {
    2.0 * lr
}

#[strads::parallel_for]
fn clamp(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32) {
    let (lo, hi) = (low_of(lr), 5.0f32);
    for i in 0..x.len() {
        out[i] = x[i].clamp(lo, hi);
    }
}

fn main() {}
