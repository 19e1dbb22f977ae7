//! End to end: the SGD-MF loop of DESIGN.md runs 2D-parallel, and every run equals the
//! serial replay of the order its workers recorded, bit for bit.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

#[strads::parallel_for]
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

fn data() -> SparseArray<f32, 2> {
    strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 120,
        items: 90,
        ratings: 3000,
        ..Default::default()
    })
}

fn bits(a: &DistArray<f32, 2>) -> Vec<u32> {
    a.as_slice().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn parallel_equals_replay_of_recorded_order() {
    let r = data();
    for threads in [1, 2, 3, 4] {
        let (mut w, mut h) = (
            DistArray::random([120, 8], 1),
            DistArray::random([90, 8], 2),
        );
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for _ in 0..3 {
                    sgd_epoch(&r, &mut w, &mut h, 0.01);
                }
            })
        });
        assert_eq!(trace.runs.len(), 3);
        let run = &trace.runs[0];
        assert_eq!(run.steps.len(), threads, "P time steps");
        let mut ids = run.order();
        ids.sort();
        assert_eq!(
            ids,
            (0..r.nnz()).collect::<Vec<_>>(),
            "every iteration once"
        );

        let (mut w2, mut h2) = (
            DistArray::random([120, 8], 1),
            DistArray::random([90, 8], 2),
        );
        replay(&trace, || {
            for _ in 0..3 {
                sgd_epoch(&r, &mut w2, &mut h2, 0.01);
            }
        });
        assert_eq!(bits(&w), bits(&w2), "{threads} threads: w");
        assert_eq!(bits(&h), bits(&h2), "{threads} threads: h");
    }
}

#[test]
fn one_thread_equals_the_original_loop() {
    let r = data();
    let (mut w, mut h) = (
        DistArray::random([120, 8], 1),
        DistArray::random([90, 8], 2),
    );
    strads::with_threads(1, || sgd_epoch(&r, &mut w, &mut h, 0.01));
    let (mut ws, mut hs) = (
        DistArray::random([120, 8], 1),
        DistArray::random([90, 8], 2),
    );
    serial(|| sgd_epoch(&r, &mut ws, &mut hs, 0.01));
    assert_eq!(bits(&w), bits(&ws));
    assert_eq!(bits(&h), bits(&hs));
}

#[test]
fn same_thread_count_is_bit_reproducible() {
    let r = data();
    let run = || {
        let (mut w, mut h) = (
            DistArray::random([120, 8], 1),
            DistArray::random([90, 8], 2),
        );
        strads::with_threads(3, || sgd_epoch(&r, &mut w, &mut h, 0.01));
        (bits(&w), bits(&h))
    };
    assert_eq!(run(), run());
}
