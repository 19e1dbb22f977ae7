// A variable updated with `+=` is a reduction, so its type must be a number strads can
// accumulate: a `String` is an error at its declared type.

use strads::prelude::*;

#[strads::parallel_for]
fn labels(x: &DistArray<f32, 1>) -> String {
    let mut all: String = String::new();
    for i in 0..x.len() {
        all += if x[i] > 0.0 { "+" } else { "-" };
    }
    all
}

fn main() {}
