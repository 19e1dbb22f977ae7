// Two subscripts read from data in one ordered loop: `x[idx[i]]` and `y[idx[i] + 1]`. The
// loop falls back to reconnaissance, which `expect = "static"` refuses; each subscript
// that sends the loop to run time gets its own error, not only the first.

use strads::prelude::*;

#[strads::parallel_for(ordered, expect = "static")]
fn gather(
    idx: &DistArray<usize, 1>,
    x: &mut DistArray<f32, 1>,
    y: &mut DistArray<f32, 1>,
    n: usize,
) {
    for i in 0..n {
        x[idx[i]] = 1.0;
        y[idx[i] + 1] += 2.0;
    }
}

fn main() {}
