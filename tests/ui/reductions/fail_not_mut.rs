// A reduction variable declared without `mut` is an error at its name (rustc then repeats it
// for the original loop, at the update).

use strads::prelude::*;

#[strads::parallel_for]
fn total(x: &DistArray<f64, 1>) -> f64 {
    let sum: f64 = 0.0;
    for i in 0..x.len() {
        sum += x[i];
    }
    sum
}

fn main() {}
