// An array parameter taken by value is an error at its type: take arrays by reference.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
