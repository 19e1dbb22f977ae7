// Reductions beside captures and local names: a non-`Copy` capture given back after the
// loop (`weights`), a slice capture (`bias`), updates inside an inner loop and inside a
// closure, and a local in the body that shadows the reduction's name (left alone).

use strads::prelude::*;

#[strads::parallel_for]
fn weighted(
    x: &DistArray<f32, 2>,
    out: &mut DistArray<f32, 1>,
    weights: Vec<f32>,
    bias: &[f32],
) -> (Vec<f32>, f32, u32) {
    let mut total: f32 = 0.0;
    let mut calls: u32 = 0;
    for i in 0..out.len() {
        let mut row = 0.0;
        for k in 0..weights.len() {
            let v = weights[k] * x[[i, k]];
            row += v;
            total += v;
        }
        (0..2).for_each(|_| calls += 1);
        {
            let total = row + bias[i % bias.len()];
            out[i] = total;
        }
    }
    (weights, total, calls)
}

fn main() {
    let x = DistArray::from_fn([30, 3], |[i, k]| (i + k) as f32);
    for threads in 1..=3 {
        let mut out = DistArray::zeros([30]);
        let (w, total, calls) = strads::with_threads(threads, || {
            weighted(&x, &mut out, vec![1.0, 2.0, 4.0], &[0.5])
        });
        assert_eq!(w, vec![1.0, 2.0, 4.0]);
        let want: f32 = (0..30).map(|i| (7 * i + 10) as f32).sum();
        assert_eq!(total, want, "{threads} threads");
        assert_eq!(calls, 60);
        assert_eq!(out[2], 24.5);
    }
}
