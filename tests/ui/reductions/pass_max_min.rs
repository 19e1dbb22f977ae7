// `max` and `min` reductions in each accepted form: `hi = hi.max(e)`, `lo = e.min(lo)`,
// and `peak = i64::max(peak, e)`. Each block starts from the identity (`-inf`, `+inf`,
// `i64::MIN`), so the results are the extremes of the data and of the starting values.

use strads::prelude::*;

#[strads::parallel_for]
fn extremes(x: &DistArray<f32, 2>, cols: usize) -> (f32, f32, i64) {
    let mut hi: f32 = f32::NEG_INFINITY;
    let mut lo: f32 = 0.0;
    let mut peak: i64 = -5;
    for i in 0..x.shape()[0] {
        for k in 0..cols {
            let v = x[[i, k]];
            hi = hi.max(v);
            lo = v.min(lo);
            peak = i64::max(peak, v as i64);
        }
    }
    (hi, lo, peak)
}

fn main() {
    let x = DistArray::from_fn([97, 3], |[i, k]| ((i * 31 + k * 7) % 101) as f32 + 1.5);
    for threads in 1..=4 {
        let got = strads::with_threads(threads, || extremes(&x, 3));
        assert_eq!(got, (101.5, 0.0, 101), "{threads} threads");
    }
}
