//! A 2D loop over ratings that writes both factor arrays (`w` by users, `h` by items),
//! shared by the harness-less cluster tests.

use strads::prelude::*;

/// One SGD-like pass: `w`'s rows by users, `h`'s by items.
#[strads::parallel_for]
pub(crate) fn step(r: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>) {
    for ([u, i], &x) in r {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        for k in 0..wu.len() {
            let a = wu[k];
            wu[k] += 0.01 * (x * hi[k] - a);
            hi[k] += 0.01 * (x * a - hi[k]);
        }
    }
}
