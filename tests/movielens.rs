//! SGD-MF on MovieLens 100k (`ua.base` / `ua.test`), when `../shared/data` exists: the
//! 2-thread run reaches the accuracy of the serial loop, and equals the serial replay of its
//! recorded order. Skipped (with a note) on machines without the data.

use std::path::PathBuf;

use strads::prelude::*;
use strads::testing::{record, replay, serial};

#[strads::parallel_for]
fn sgd_epoch(
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

fn rmse(data: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let sum: f64 = data
        .iter()
        .map(|([u, i], &r)| ((r - dot(w.row(u), h.row(i))) as f64).powi(2))
        .sum();
    (sum / data.nnz() as f64).sqrt()
}

fn data_dir() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/movielens-100k");
    if d.join("ua.base").exists() {
        Some(d)
    } else {
        eprintln!("skipped: {} not found", d.display());
        None
    }
}

fn model(users: usize, items: usize) -> (DistArray<f32, 2>, DistArray<f32, 2>) {
    let scale = 1.0 / 32f32.sqrt();
    let init = |n, seed| {
        let r = DistArray::<f32, 2>::random([n, 32], seed);
        DistArray::from_fn([n, 32], |idx| r[idx] * scale)
    };
    (init(users, 1), init(items, 2))
}

#[test]
fn two_threads_match_serial_accuracy_on_ml100k() {
    let Some(dir) = data_dir() else { return };
    let (train, test) =
        strads::load::ratings_pair(dir.join("ua.base"), dir.join("ua.test")).unwrap();
    let [users, items] = train.shape();
    let run = |parallel: bool| {
        let (mut w, mut h) = model(users, items);
        for _ in 0..20 {
            if parallel {
                strads::with_threads(2, || sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05));
            } else {
                serial(|| sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05));
            }
        }
        rmse(&test, &w, &h)
    };
    let (par, ser) = (run(true), run(false));
    eprintln!("test RMSE after 20 epochs: 2 threads {par:.6}, serial {ser:.6}");
    assert!(par <= 0.96, "2-thread test RMSE {par} above 0.96");
    assert!(
        (par - ser).abs() / ser <= 0.01,
        "2 threads {par} vs serial {ser}: more than 1% apart"
    );
}

#[test]
fn ml100k_epoch_equals_replay_of_its_order() {
    let Some(dir) = data_dir() else { return };
    let train = strads::load::ratings(dir.join("u.data")).unwrap();
    let [users, items] = train.shape();
    for threads in [2, 3] {
        let (mut w, mut h) = model(users, items);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05);
                sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05);
            })
        });
        let (mut w2, mut h2) = model(users, items);
        replay(&trace, || {
            sgd_epoch(&train, &mut w2, &mut h2, 0.01, 0.05);
            sgd_epoch(&train, &mut w2, &mut h2, 0.01, 0.05);
        });
        assert!(
            w.as_slice()
                .iter()
                .zip(w2.as_slice())
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert!(
            h.as_slice()
                .iter()
                .zip(h2.as_slice())
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert_eq!(
            trace.runs[0].plan,
            format!(
                "2d space=i time=u workers={threads} blocks={threads}x{threads} local=h rotated=w"
            )
        );
    }
}
