//! End to end: sparse logistic regression, whose weights are reached through feature ids
//! read from the data, runs through reconnaissance; every parallel run equals the serial
//! replay of its recorded order, bit for bit, and the model learns.

use strads::generate::{LibSvmConfig, libsvm_like};
use strads::load::LibSvm;
use strads::prelude::*;

/// The example's loops, compiled here as they are there.
#[path = "../../../examples/sparse_lr/model.rs"]
mod model;
use model::{evaluate, lr_epoch};
use strads::testing::{assert_replay_equal, bits, record, replay, serial};

fn data() -> (LibSvm, LibSvm) {
    libsvm_like(&LibSvmConfig {
        train: 3_000,
        test: 1_000,
        ..LibSvmConfig::default()
    })
}

fn epochs(d: &LibSvm, w: &mut DistArray<f32, 1>, count: usize) {
    for e in 0..count {
        let lr = 0.05 / (1.0 + e as f32 * 0.5);
        lr_epoch(
            &d.labels,
            &d.offsets,
            &d.features,
            &d.values,
            w,
            d.samples(),
            lr,
            1e-4,
        );
    }
}

fn eval(d: &LibSvm, w: &DistArray<f32, 1>) -> (usize, f64) {
    evaluate(
        &d.labels,
        &d.offsets,
        &d.features,
        &d.values,
        w,
        d.samples(),
    )
}

#[test]
fn parallel_equals_replay_of_recorded_order() {
    let (train, _) = data();
    let n_features = train.n_features;
    let runs = assert_replay_equal(
        1..=4,
        || DistArray::zeros([n_features]),
        |w| epochs(&train, w, 3),
    );
    for ((w, (), trace), threads) in runs.iter().zip(1..) {
        assert_eq!(trace.runs.len(), 3, "{threads} threads: one run per epoch");
        for run in &trace.runs {
            assert_eq!(run.loop_name, "lr_epoch");
            assert!(
                run.plan.contains("reconnaissance"),
                "{threads} threads: plan {:?}",
                run.plan
            );
            let mut ids = run.order();
            ids.sort_unstable();
            assert_eq!(
                ids,
                (0..train.samples()).collect::<Vec<_>>(),
                "{threads} threads: every sample once"
            );
        }
        assert!(w.as_slice().iter().any(|&x| x != 0.0));

        // The same thread count gives the same weights again (a static plan).
        let mut w3 = DistArray::zeros([n_features]);
        strads::with_threads(threads, || epochs(&train, &mut w3, 3));
        assert_eq!(bits(w), bits(&w3), "{threads} threads: second run");
    }
}

/// Samples that share few features (2 of 3000, uniform): reconnaissance finds many
/// independent task groups, so the workers really run at the same time, and the result
/// still equals the serial replay of the recorded order.
#[test]
fn sparse_conflicts_run_on_every_worker_and_equal_replay() {
    let (train, _) = libsvm_like(&LibSvmConfig {
        train: 4_000,
        test: 0,
        features: 3_000,
        active: 2,
        zipf_exponent: 0.0,
        ..LibSvmConfig::default()
    });
    for threads in 2..=4 {
        let mut w = DistArray::zeros([train.n_features]);
        let ((), trace) = strads::with_threads(threads, || record(|| epochs(&train, &mut w, 2)));
        for run in &trace.runs {
            let busy = run
                .per_worker()
                .iter()
                .filter(|ids| !ids.is_empty())
                .count();
            assert_eq!(busy, threads, "{threads} threads: plan {:?}", run.plan);
        }
        let mut w2 = DistArray::zeros([train.n_features]);
        replay(&trace, || epochs(&train, &mut w2, 2));
        assert_eq!(bits(&w), bits(&w2), "{threads} threads: w");
    }
}

#[test]
fn evaluation_equals_its_replay() {
    let (train, test) = data();
    let mut w = DistArray::zeros([train.n_features]);
    serial(|| epochs(&train, &mut w, 2));
    let want = serial(|| eval(&test, &w));
    for threads in 1..=4 {
        let (got, trace) = strads::with_threads(threads, || record(|| eval(&test, &w)));
        let replayed = replay(&trace, || eval(&test, &w));
        assert_eq!(got.0, replayed.0, "{threads} threads");
        assert_eq!(got.1.to_bits(), replayed.1.to_bits(), "{threads} threads");
        // The count does not depend on the order; the sum only in its last bits.
        assert_eq!(got.0, want.0, "{threads} threads");
        assert!((got.1 - want.1).abs() <= 1e-9 * want.1, "{threads} threads");
    }
}

#[test]
fn learns_better_than_the_majority_class() {
    let (train, test) = data();
    let majority = 1.0 - test.positives() as f64 / test.samples() as f64;
    for threads in [1, 2] {
        let mut w = DistArray::zeros([train.n_features]);
        strads::with_threads(threads, || epochs(&train, &mut w, 4));
        let (correct, loss) = strads::with_threads(threads, || eval(&test, &w));
        let accuracy = correct as f64 / test.samples() as f64;
        let mean_loss = loss / test.samples() as f64;
        assert!(
            accuracy > majority + 0.04,
            "{threads} threads: accuracy {accuracy}, majority class {majority}"
        );
        // A constant prediction of the base rate has a log loss of about 0.55.
        assert!(mean_loss < 0.45, "{threads} threads: log loss {mean_loss}");
    }
}

#[test]
fn serial_mode_runs_the_original_loop() {
    let (train, _) = data();
    let mut a = DistArray::zeros([train.n_features]);
    serial(|| epochs(&train, &mut a, 2));
    // The original loop by hand.
    let mut b = vec![0f32; train.n_features];
    for e in 0..2 {
        let lr = 0.05 / (1.0 + e as f32 * 0.5);
        for s in 0..train.samples() {
            let (y, f, v) = train.sample(s);
            let z: f32 = f
                .iter()
                .zip(v)
                .fold(0.0, |z, (&f, &v)| z + b[f as usize] * v);
            let g = -y / (1.0 + (y * z).exp());
            for (&f, &v) in f.iter().zip(v) {
                let f = f as usize;
                b[f] -= lr * (g * v + 1e-4 * b[f]);
            }
        }
    }
    assert_eq!(bits(&a), bits(&b));
}
