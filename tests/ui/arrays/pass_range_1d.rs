// A 1D loop over a range: `out[i]` from `inp[[i, k]]` with an inner `for k in 0..m`. It
// compiles with `expect = "1d"` and computes row sums.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn row_sums(inp: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>, m: usize) {
    for i in 0..out.len() {
        let mut acc = 0.0;
        for k in 0..m {
            acc += inp[[i, k]];
        }
        out[i] = acc;
    }
}

fn main() {
    let inp = DistArray::from_fn([50, 3], |[i, k]| (i * 10 + k) as f32);
    let mut out = DistArray::zeros([50]);
    row_sums(&inp, &mut out, 3);
    for i in 0..50 {
        assert_eq!(out[i], (30 * i + 3) as f32);
    }
}
