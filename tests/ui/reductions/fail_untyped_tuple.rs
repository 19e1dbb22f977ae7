// A reduction variable bound by a tuple pattern needs an evident type too: without one the
// error is at its name, with the tuple's type to write.

use strads::prelude::*;

#[strads::parallel_for]
fn total(x: &DistArray<f64, 1>) -> f64 {
    let (mut sum, scale) = (0.0, 2u8);
    for i in 0..x.len() {
        sum += x[i] * f64::from(scale);
    }
    sum
}

fn main() {}
