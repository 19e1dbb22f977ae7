// A sum of squares into an `f64` local with `+=`, returned by the trailing expression: each
// block accumulates its own part and the parts are added in schedule order. The values are
// small integers, so every order gives the exact serial result.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn sum_sq(x: &DistArray<f32, 1>) -> f64 {
    let mut sse: f64 = 0.0;
    for i in 0..x.len() {
        let v = x[i] as f64;
        sse += v * v;
    }
    sse
}

fn main() {
    let x = DistArray::from_fn([500], |[i]| (i % 7) as f32);
    let want: f64 = (0..500).map(|i| ((i % 7) * (i % 7)) as f64).sum();
    for threads in 1..=4 {
        assert_eq!(
            strads::with_threads(threads, || sum_sq(&x)),
            want,
            "{threads} threads"
        );
    }
    assert_eq!(strads::testing::serial(|| sum_sq(&x)), want);
}
