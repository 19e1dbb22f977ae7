// Iterating something that is neither an array parameter nor a range (`v.iter()` of a
// `Vec`) is an error at the iterated expression.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(v: Vec<f32>, out: &mut DistArray<f32, 1>) {
    for x in v.iter() {
        out[0] = *x;
    }
}

fn main() {}
