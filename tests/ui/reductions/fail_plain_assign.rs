// `sum = sum + e` is a plain assignment of an outer variable, not a reduction; the error is
// at `sum =` and says to write `sum += ..`.

use strads::prelude::*;

#[strads::parallel_for]
fn total(x: &DistArray<f64, 1>) -> f64 {
    let mut sum: f64 = 0.0;
    for i in 0..x.len() {
        sum = sum + x[i];
    }
    sum
}

fn main() {}
