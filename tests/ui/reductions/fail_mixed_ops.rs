// One variable updated with two operators (`+=` and `max`) cannot be combined across
// workers; the error is at the second update.

use strads::prelude::*;

#[strads::parallel_for]
fn odd(x: &DistArray<f32, 1>) -> f32 {
    let mut acc: f32 = 0.0;
    for i in 0..x.len() {
        acc += x[i];
        acc = acc.max(x[i]);
    }
    acc
}

fn main() {}
