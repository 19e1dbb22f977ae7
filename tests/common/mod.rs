//! The SGD-MF program of docs/design.md, shared by the end-to-end tests.

#![allow(dead_code)]

use strads::prelude::*;

/// One epoch of SGD over every rating: the loop of docs/design.md with the L2 weight a parameter.
#[strads::parallel_for(expect = "2d")]
pub(crate) fn sgd_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - reg * wk);
            hi[k] += lr * (err * wk - reg * hi[k]);
        }
    }
}

/// Root mean squared error of the model on `data`.
pub(crate) fn rmse(
    data: &SparseArray<f32, 2>,
    w: &DistArray<f32, 2>,
    h: &DistArray<f32, 2>,
) -> f64 {
    let sum: f64 = data
        .iter()
        .map(|([u, i], &r)| ((r - dot(w.row(u), h.row(i))) as f64).powi(2))
        .sum();
    (sum / data.nnz().max(1) as f64).sqrt()
}

/// Factors of `k` columns for `users` and `items`, uniform in `[0, 1/sqrt(k))` (LIBMF's
/// initialisation), the same for the same seeds.
pub(crate) fn model(
    users: usize,
    items: usize,
    k: usize,
) -> (DistArray<f32, 2>, DistArray<f32, 2>) {
    let scale = 1.0 / (k as f32).sqrt();
    let init = |n, seed| {
        let r = DistArray::<f32, 2>::random([n, k], seed);
        DistArray::from_fn([n, k], |idx| r[idx] * scale)
    };
    (init(users, 1), init(items, 2))
}
