//! The data-parallel mode (`sync = "bsp"`, `"ssp(s)"`): each worker updates its replica of
//! the arrays the loop writes; the replicas' differences are averaged (summed in the
//! workers' tree order, `array/buffer/tree.rs`) every `batch` iterations and at the end,
//! under `ssp(s)` behind the workers, each starting batch `k` from the merge of the batches
//! before `k - s` plus its own since (`array/buffer/stale.rs`). One worker's plan equals
//! the serial loop; more workers' runs equal the replay of their recorded order and are the
//! same on every run; the merge is the mean of the differences.

use strads::prelude::*;
use strads::testing::{bits, plan_always, record, replay, serial};

/// Logistic regression over samples of `nnz` features each (hub features shared by all).
#[strads::parallel_for(sync = "bsp", batch = 64)]
fn lr_bsp(
    features: &DistArray<u32, 1>,
    labels: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    nnz: usize,
    lr: f32,
) {
    for s in 0..labels.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[features[s * nnz + k] as usize];
        }
        let g = -labels[s] / (1.0 + (labels[s] * z).exp());
        for k in 0..nnz {
            w[features[s * nnz + k] as usize] -= lr * g;
        }
    }
}

#[strads::parallel_for(sync = "ssp(2)", batch = 16)]
fn lr_ssp(
    features: &DistArray<u32, 1>,
    labels: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    nnz: usize,
    lr: f32,
) {
    for s in 0..labels.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[features[s * nnz + k] as usize];
        }
        let g = -labels[s] / (1.0 + (labels[s] * z).exp());
        for k in 0..nnz {
            w[features[s * nnz + k] as usize] -= lr * g;
        }
    }
}

/// `lr_ssp` without the run-ahead: every batch merges before the next starts.
#[strads::parallel_for(sync = "bsp", batch = 16)]
fn lr_bsp16(
    features: &DistArray<u32, 1>,
    labels: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    nnz: usize,
    lr: f32,
) {
    for s in 0..labels.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[features[s * nnz + k] as usize];
        }
        let g = -labels[s] / (1.0 + (labels[s] * z).exp());
        for k in 0..nnz {
            w[features[s * nnz + k] as usize] -= lr * g;
        }
    }
}

/// Every iteration sets the one element: the replicas' differences average.
#[strads::parallel_for(sync = "bsp", batch = 1000)]
fn set_last(x: &DistArray<f64, 1>, out: &mut DistArray<f64, 1>) {
    for i in 0..x.len() {
        out[0] = x[i];
    }
}

/// As `set_last`, the replicas' differences summed instead of averaged.
#[strads::parallel_for(sync = "bsp", batch = 1000, merge = strads::merge::sum)]
fn set_last_summed(x: &DistArray<f64, 1>, out: &mut DistArray<f64, 1>) {
    for i in 0..x.len() {
        out[0] = x[i];
    }
}

/// A merge of the user's: the value moves by at most 1 per merge.
fn clipped(value: f64, summed: f64, replicas: usize) -> f64 {
    value + (summed / replicas as f64).clamp(-1.0, 1.0)
}

#[strads::parallel_for(sync = "ssp(1)", batch = 100, merge = clipped)]
fn set_last_clipped(x: &DistArray<f64, 1>, out: &mut DistArray<f64, 1>) {
    for i in 0..x.len() {
        out[0] = x[i];
    }
}

#[strads::parallel_for(sync = "bsp", batch = 64, merge = strads::merge::sum)]
fn lr_summed(
    features: &DistArray<u32, 1>,
    labels: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    nnz: usize,
    lr: f32,
) {
    for s in 0..labels.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[features[s * nnz + k] as usize];
        }
        let g = -labels[s] / (1.0 + (labels[s] * z).exp());
        for k in 0..nnz {
            w[features[s * nnz + k] as usize] -= lr * g;
        }
    }
}

/// `lr_bsp` with the threads sharing one replica (`sync = "hybrid"`).
#[strads::parallel_for(sync = "hybrid", batch = 64)]
fn lr_hybrid(
    features: &DistArray<u32, 1>,
    labels: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    nnz: usize,
    lr: f32,
) {
    for s in 0..labels.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[features[s * nnz + k] as usize];
        }
        let g = -labels[s] / (1.0 + (labels[s] * z).exp());
        for k in 0..nnz {
            w[features[s * nnz + k] as usize] -= lr * g;
        }
    }
}

fn data(n: usize, nnz: usize) -> (DistArray<u32, 1>, DistArray<f32, 1>) {
    let mut seed = 11u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let features = DistArray::from_fn([n * nnz], |[e]| {
        if e % nnz == 0 {
            0
        } else {
            (next() % 200) as u32
        }
    });
    let labels = DistArray::from_fn([n], |_| if next() % 2 == 0 { 1.0 } else { -1.0 });
    (features, labels)
}

#[test]
fn one_worker_equals_the_serial_loop() {
    let (features, labels) = data(3000, 5);
    let mut want = DistArray::<f32, 1>::zeros([200]);
    serial(|| lr_bsp(&features, &labels, &mut want, 5, 0.1));
    let mut got = DistArray::<f32, 1>::zeros([200]);
    plan_always(|| strads::with_threads(1, || lr_bsp(&features, &labels, &mut got, 5, 0.1)));
    assert_eq!(bits(&got), bits(&want));
    let mut ssp = DistArray::<f32, 1>::zeros([200]);
    plan_always(|| strads::with_threads(1, || lr_ssp(&features, &labels, &mut ssp, 5, 0.1)));
    assert_eq!(bits(&ssp), bits(&want));
}

#[test]
fn merges_equal_their_replay_and_every_run() {
    let (features, labels) = data(3000, 5);
    for threads in 2..=4 {
        let mut w = DistArray::<f32, 1>::zeros([200]);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| lr_bsp(&features, &labels, &mut w, 5, 0.1))
        });
        let mut again = DistArray::<f32, 1>::zeros([200]);
        replay(&trace, || lr_bsp(&features, &labels, &mut again, 5, 0.1));
        assert_eq!(bits(&again), bits(&w), "{threads} threads: the replay");
        let mut third = DistArray::<f32, 1>::zeros([200]);
        strads::with_threads(threads, || lr_bsp(&features, &labels, &mut third, 5, 0.1));
        assert_eq!(
            bits(&third),
            bits(&w),
            "{threads} threads: the same bits every run"
        );
        let mut ssp = DistArray::<f32, 1>::zeros([200]);
        let ((), t) = strads::with_threads(threads, || {
            record(|| lr_ssp(&features, &labels, &mut ssp, 5, 0.1))
        });
        let mut ssp_again = DistArray::<f32, 1>::zeros([200]);
        replay(&t, || lr_ssp(&features, &labels, &mut ssp_again, 5, 0.1));
        assert_eq!(
            bits(&ssp_again),
            bits(&ssp),
            "{threads} threads: the ssp replay"
        );
        // The workers ran ahead, merges behind them: the same bits on every run, and not
        // those of merging every batch.
        for _ in 0..3 {
            let mut ssp_third = DistArray::<f32, 1>::zeros([200]);
            strads::with_threads(threads, || {
                lr_ssp(&features, &labels, &mut ssp_third, 5, 0.1)
            });
            assert_eq!(
                bits(&ssp_third),
                bits(&ssp),
                "{threads} threads: the same ssp bits every run"
            );
        }
        assert!(
            t.runs[0].plan.contains(
                "sync=ssp(2) replicas=w every=16 (data-parallel: replicas averaged in the \
                 workers' tree order behind the workers, each up to 2 batches ahead of the \
                 slowest; not equal to a serial order)"
            ),
            "{}",
            t.runs[0].plan
        );
        let mut every_batch = DistArray::<f32, 1>::zeros([200]);
        strads::with_threads(threads, || {
            lr_bsp16(&features, &labels, &mut every_batch, 5, 0.1)
        });
        assert_ne!(
            bits(&every_batch),
            bits(&ssp),
            "{threads} threads: ssp(2) is not bsp"
        );
    }
}

#[test]
fn replicas_merge_by_their_mean_difference() {
    // Two workers, one batch each: worker 0 ends its half with x[499], worker 1 with x[999];
    // out[0] = 0 + ((x[499] - 0) + (x[999] - 0)) / 2.
    let x = DistArray::<f64, 1>::from_fn([1000], |[i]| i as f64);
    let mut out = DistArray::<f64, 1>::zeros([1]);
    plan_always(|| strads::with_threads(2, || set_last(&x, &mut out)));
    assert_eq!(out[0], (499.0 + 999.0) / 2.0);
}

#[test]
fn a_merge_function_replaces_the_mean() {
    let x = DistArray::<f64, 1>::from_fn([1000], |[i]| i as f64);
    let mut out = DistArray::<f64, 1>::zeros([1]);
    plan_always(|| strads::with_threads(2, || set_last_summed(&x, &mut out)));
    assert_eq!(out[0], 499.0 + 999.0);
    // ssp(1), batch 100: a merge of every 100 iterations of each worker (5 rounds of 500),
    // each moving the value by at most 1.
    let mut out = DistArray::<f64, 1>::zeros([1]);
    plan_always(|| strads::with_threads(2, || set_last_clipped(&x, &mut out)));
    assert_eq!(out[0], 5.0);
    // One worker: no merge, the serial loop.
    let mut one = DistArray::<f64, 1>::zeros([1]);
    plan_always(|| strads::with_threads(1, || set_last_clipped(&x, &mut one)));
    assert_eq!(one[0], 999.0);
    // A merged loop equals its replay and is the same on every run.
    let (features, labels) = data(3000, 5);
    let mut w = DistArray::<f32, 1>::zeros([200]);
    let ((), trace) = strads::with_threads(3, || {
        record(|| lr_summed(&features, &labels, &mut w, 5, 0.1))
    });
    let mut again = DistArray::<f32, 1>::zeros([200]);
    replay(&trace, || lr_summed(&features, &labels, &mut again, 5, 0.1));
    assert_eq!(bits(&again), bits(&w));
    let mut averaged = DistArray::<f32, 1>::zeros([200]);
    strads::with_threads(3, || lr_bsp(&features, &labels, &mut averaged, 5, 0.1));
    assert_ne!(bits(&averaged), bits(&w), "summing differs from averaging");
    assert!(
        trace.runs[0].plan.ends_with(
            "sync replicas=w every=64 (data-parallel: replicas merged by strads::merge::sum in \
             the workers' tree order; not equal to a serial order)"
        ),
        "{}",
        trace.runs[0].plan
    );
}

#[test]
fn the_plan_line_says_the_loop_is_no_longer_a_serial_order() {
    let (features, labels) = data(200, 5);
    let mut w = DistArray::<f32, 1>::zeros([200]);
    let ((), trace) =
        strads::with_threads(2, || record(|| lr_bsp(&features, &labels, &mut w, 5, 0.1)));
    let plan = &trace.runs[0].plan;
    assert!(
        plan.ends_with(
            "sync replicas=w every=64 (data-parallel: replicas averaged in the workers' tree \
             order; not equal to a serial order)"
        ),
        "{plan}"
    );
}

/// Random data sets, sizes and worker counts: one worker's plan is the serial loop, bit for
/// bit (`hybrid` too); more workers' runs (averaged or summed) equal the replay of their
/// recorded order.
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn random_data(
        seed: u64,
        n: usize,
        nnz: usize,
        features: usize,
    ) -> (DistArray<u32, 1>, DistArray<f32, 1>) {
        let mut s = seed | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let f = DistArray::from_fn([n * nnz], |_| (next() % features as u64) as u32);
        let y = DistArray::from_fn([n], |_| if next() % 2 == 0 { 1.0 } else { -1.0 });
        (f, y)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn sync_loops_are_serial_on_one_worker_and_replayable_on_more(
            seed in any::<u64>(),
            n in 1usize..700,
            nnz in 1usize..6,
            workers in 2usize..5,
        ) {
            let features = 200;
            let (f, y) = random_data(seed, n, nnz, features);
            let zeros = || DistArray::<f32, 1>::zeros([features]);
            let (mut want, mut one) = (zeros(), zeros());
            serial(|| lr_bsp(&f, &y, &mut want, nnz, 0.1));
            plan_always(|| strads::with_threads(1, || lr_bsp(&f, &y, &mut one, nnz, 0.1)));
            prop_assert_eq!(bits(&one), bits(&want));
            let mut summed_one = zeros();
            plan_always(|| strads::with_threads(1, || lr_summed(&f, &y, &mut summed_one, nnz, 0.1)));
            prop_assert_eq!(bits(&summed_one), bits(&want));
            // `hybrid`: one thread is the serial loop too; more give finite weights.
            let (mut hybrid_one, mut hybrid_many) = (zeros(), zeros());
            plan_always(|| strads::with_threads(1, || lr_hybrid(&f, &y, &mut hybrid_one, nnz, 0.1)));
            prop_assert_eq!(bits(&hybrid_one), bits(&want));
            plan_always(|| strads::with_threads(workers, || lr_hybrid(&f, &y, &mut hybrid_many, nnz, 0.1)));
            prop_assert!(hybrid_many.as_slice().iter().all(|v| v.is_finite()));
            for run in [lr_bsp, lr_ssp, lr_summed] {
                let mut w = zeros();
                let ((), trace) = strads::with_threads(workers, || {
                    record(|| run(&f, &y, &mut w, nnz, 0.1))
                });
                let mut again = zeros();
                replay(&trace, || run(&f, &y, &mut again, nnz, 0.1));
                prop_assert_eq!(bits(&again), bits(&w));
            }
        }
    }
}
