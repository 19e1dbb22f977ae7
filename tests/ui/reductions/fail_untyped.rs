// A reduction variable declared without a type is an error at its name: strads keeps a
// per-worker accumulator of its type.

use strads::prelude::*;

#[strads::parallel_for]
fn total(x: &DistArray<f64, 1>) -> f64 {
    let mut sum = 0.0;
    for i in 0..x.len() {
        sum += x[i];
    }
    sum
}

fn main() {}
