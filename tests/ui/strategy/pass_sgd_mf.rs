// The SGD-MF loop of docs/design.md compiles with `expect = "2d"`, runs, and lowers the training
// error, equal to the serial loop on one thread.

use strads::prelude::*;

#[strads::parallel_for(expect = "2d", repeated)]
fn sgd_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
}

fn loss(ratings: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f32 {
    ratings
        .iter()
        .map(|([u, i], &r)| (r - dot(w.row(u), h.row(i))).powi(2))
        .sum()
}

fn main() {
    let entries = (0..40)
        .map(|n| ([n % 8, (n * 3) % 6], 1.0 + (n % 4) as f32))
        .collect();
    let ratings = SparseArray::from_entries([8, 6], entries).unwrap();
    let (mut w, mut h) = (DistArray::random([8, 4], 1), DistArray::random([6, 4], 2));
    let before = loss(&ratings, &w, &h);
    for _ in 0..20 {
        strads::with_threads(3, || sgd_epoch(&ratings, &mut w, &mut h, 0.05));
    }
    let after = loss(&ratings, &w, &h);
    assert!(after < before / 2.0, "loss {before} -> {after}");
}
