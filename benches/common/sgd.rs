//! The SGD-MF loop the benches time (the loop of `examples/sgd_mf.rs`, k factors per row,
//! learning rate and L2 as arguments) and its hand-written serial counterpart; compiled into
//! each bench through `#[path]`, so every bench times the same code.

use strads::prelude::*;

/// One SGD-MF epoch over every rating: the loop of `examples/sgd_mf.rs`, annotated.
#[strads::parallel_for]
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

/// What a user would write without strads: flat factor matrices, the same arithmetic.
pub(crate) fn serial_epoch(
    ratings: &[(u32, u32, f32)],
    w: &mut [f32],
    h: &mut [f32],
    k: usize,
    lr: f32,
    reg: f32,
) {
    for &(u, i, r) in ratings {
        let (u, i) = (u as usize, i as usize);
        let wu = &mut w[u * k..(u + 1) * k];
        let hi = &mut h[i * k..(i + 1) * k];
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - reg * wk);
            hi[k] += lr * (err * wk - reg * hi[k]);
        }
    }
}

/// A `[rows, k]` factor matrix drawn uniform in `[0, 1/sqrt(k))` with `seed` (LIBMF's
/// initialisation), the start every system of a bench shares.
pub(crate) fn init_factors(rows: usize, k: usize, seed: u64) -> DistArray<f32, 2> {
    let scale = 1.0 / (k as f32).sqrt();
    let r = DistArray::<f32, 2>::random([rows, k], seed);
    DistArray::from_fn([rows, k], |idx| r[idx] * scale)
}
