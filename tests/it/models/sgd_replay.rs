//! End to end: the SGD-MF loop of docs/design.md runs 2D-parallel, and every run equals the
//! serial replay of the order its workers recorded, bit for bit.

use crate::common::sgd_epoch;
use strads::prelude::*;
use strads::testing::{assert_replay_equal, bits, serial};

fn data() -> SparseArray<f32, 2> {
    strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 120,
        items: 90,
        ratings: 3000,
        ..Default::default()
    })
}

#[test]
fn parallel_equals_replay_of_recorded_order() {
    let r = data();
    let runs = assert_replay_equal(
        [1, 2, 3, 4],
        || {
            (
                DistArray::random([120, 8], 1),
                DistArray::random([90, 8], 2),
            )
        },
        |(w, h)| {
            for _ in 0..3 {
                sgd_epoch(&r, w, h, 0.01, 0.05);
            }
        },
    );
    for ((_, (), trace), threads) in runs.iter().zip(1..) {
        assert_eq!(trace.runs.len(), 3);
        let run = &trace.runs[0];
        // Two time partitions per worker (`plan::grid::time_split`), one on one thread.
        let steps = if threads > 1 { 2 * threads } else { 1 };
        assert_eq!(run.steps.len(), steps, "2P time steps");
        let mut ids = run.order();
        ids.sort();
        assert_eq!(
            ids,
            (0..r.nnz()).collect::<Vec<_>>(),
            "every iteration once"
        );
    }
}

#[test]
fn one_thread_equals_the_original_loop() {
    let r = data();
    let (mut w, mut h) = (
        DistArray::random([120, 8], 1),
        DistArray::random([90, 8], 2),
    );
    strads::with_threads(1, || sgd_epoch(&r, &mut w, &mut h, 0.01, 0.05));
    let (mut ws, mut hs) = (
        DistArray::random([120, 8], 1),
        DistArray::random([90, 8], 2),
    );
    serial(|| sgd_epoch(&r, &mut ws, &mut hs, 0.01, 0.05));
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
        strads::with_threads(3, || sgd_epoch(&r, &mut w, &mut h, 0.01, 0.05));
        (bits(&w), bits(&h))
    };
    assert_eq!(run(), run());
}
