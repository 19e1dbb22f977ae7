//! End to end: `strads::permute::randomize` relabels ids without changing what the loop
//! computes. Training SGD-MF on randomized ids, then moving the factor rows back, gives
//! bit for bit the model that training on the original ids in the same iteration order
//! gives; and a parallel run on randomized ids equals the serial replay of its recorded
//! order, like any other run.

use crate::common::{model, sgd_epoch};
use strads::config::Partitioning;
use strads::permute::{inverse, permute_rows, randomize, sort_by_count, unpermute_rows};
use strads::prelude::*;
use strads::testing::{bits, record, replay, serial};

const LR: f32 = 0.01;
const REG: f32 = 0.05;

/// Skewed ratings whose popular users and items have the smallest ids.
fn data() -> SparseArray<f32, 2> {
    let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 150,
        items: 100,
        ratings: 3000,
        ..Default::default()
    });
    sort_by_count(&r, &[0, 1]).array
}

#[test]
fn randomize_round_trips() {
    let r = data();
    let z = randomize(&r, &[0, 1], 3);
    let (pu, pi) = (z.perms[0].as_ref().unwrap(), z.perms[1].as_ref().unwrap());
    let (iu, ii) = (inverse(pu), inverse(pi));
    assert_eq!(z.array.nnz(), r.nnz());
    for ((old, a), (new, b)) in r.iter().zip(z.array.iter()) {
        assert_eq!(a.to_bits(), b.to_bits(), "values keep their order");
        assert_eq!(new, [pu[old[0]] as usize, pi[old[1]] as usize]);
        assert_eq!([z.original(0, new[0]), z.original(1, new[1])], old);
        assert_eq!([iu[new[0]] as usize, ii[new[1]] as usize], old);
        assert_eq!([z.new_id(0, old[0]), z.new_id(1, old[1])], new);
    }
    // Same seed, same permutations; randomizing sorted ids actually moves them.
    assert_eq!(randomize(&r, &[0, 1], 3).perms, z.perms);
    assert!(pu.iter().enumerate().any(|(i, &p)| i != p as usize));
}

#[test]
fn permute_and_unpermute_rows_invert_each_other() {
    let (w, h) = model(150, 100, 8);
    let z = randomize(&data(), &[0, 1], 5);
    for (a, p) in [
        (&w, z.perms[0].as_ref().unwrap()),
        (&h, z.perms[1].as_ref().unwrap()),
    ] {
        let moved = permute_rows(a, p);
        assert_ne!(bits(&moved), bits(a));
        assert_eq!(bits(&unpermute_rows(&moved, p)), bits(a));
        assert_eq!(bits(&permute_rows(&unpermute_rows(a, p), p)), bits(a));
        for (old, &new) in p.iter().enumerate() {
            assert_eq!(moved.row(new as usize), a.row(old));
        }
    }
}

/// One thread runs the iterations in their original order, and randomize keeps that
/// order: the model trained on new ids, moved back, is the original loop's model.
#[test]
fn randomized_training_equals_original_training() {
    let r = data();
    let z = randomize(&r, &[0, 1], 7);
    let (pu, pi) = (z.perms[0].as_ref().unwrap(), z.perms[1].as_ref().unwrap());
    let (mut w, mut h) = model(150, 100, 8);
    let (mut wz, mut hz) = (permute_rows(&w, pu), permute_rows(&h, pi));
    for _ in 0..2 {
        serial(|| sgd_epoch(&r, &mut w, &mut h, LR, REG));
        strads::with_threads(1, || sgd_epoch(&z.array, &mut wz, &mut hz, LR, REG));
    }
    assert_eq!(bits(&unpermute_rows(&wz, pu)), bits(&w));
    assert_eq!(bits(&unpermute_rows(&hz, pi)), bits(&h));
}

/// At 2 and 3 threads: the parallel run on randomized ids equals (1) the serial replay of
/// its recorded order, and (2) the original loop on the original ids fed the ratings in
/// that order, once the rows are moved back.
#[test]
fn parallel_randomized_run_equals_serial_in_its_order() {
    let r = data();
    let z = randomize(&r, &[0, 1], 11);
    let (pu, pi) = (z.perms[0].as_ref().unwrap(), z.perms[1].as_ref().unwrap());
    let (w0, h0) = model(150, 100, 8);
    for threads in [2, 3] {
        let (mut w, mut h) = (permute_rows(&w0, pu), permute_rows(&h0, pi));
        let ((), trace) = strads::with_threads(threads, || {
            record(|| sgd_epoch(&z.array, &mut w, &mut h, LR, REG))
        });
        let order = trace.runs[0].order();
        let mut ids = order.clone();
        ids.sort();
        assert_eq!(
            ids,
            (0..r.nnz()).collect::<Vec<_>>(),
            "every iteration once"
        );

        let (mut wr, mut hr) = (permute_rows(&w0, pu), permute_rows(&h0, pi));
        replay(&trace, || sgd_epoch(&z.array, &mut wr, &mut hr, LR, REG));
        assert_eq!(bits(&wr), bits(&w), "{threads} threads: replay, w");
        assert_eq!(bits(&hr), bits(&h), "{threads} threads: replay, h");

        // Iteration ids are positions in the serial order, the same in both arrays.
        let reordered = SparseArray::from_entries(
            r.shape(),
            order
                .iter()
                .map(|&n| {
                    let (k, &v) = r.entry(n);
                    (k, v)
                })
                .collect(),
        )
        .unwrap();
        let (mut wo, mut ho) = (w0.clone(), h0.clone());
        serial(|| sgd_epoch(&reordered, &mut wo, &mut ho, LR, REG));
        assert_eq!(
            bits(&unpermute_rows(&w, pu)),
            bits(&wo),
            "{threads} threads: w"
        );
        assert_eq!(
            bits(&unpermute_rows(&h, pi)),
            bits(&ho),
            "{threads} threads: h"
        );
    }
}

/// Worker loads of one 2-thread epoch on `data()`, largest over mean.
fn two_thread_load() -> f64 {
    let r = data();
    let (mut w, mut h) = model(150, 100, 8);
    let ((), trace) = strads::with_threads(2, || record(|| sgd_epoch(&r, &mut w, &mut h, LR, REG)));
    let loads: Vec<usize> = trace.runs[0]
        .per_worker()
        .iter()
        .map(|ids| ids.len())
        .collect();
    assert_eq!(loads.len(), 2);
    *loads.iter().max().unwrap() as f64 / (r.nnz() as f64 / 2.0)
}

/// Run by [`partition_setting_is_honoured`] in a child process with `STRADS_PARTITION` set.
#[test]
#[ignore = "run in a child process by partition_setting_is_honoured"]
fn partition_setting_child() {
    let load = two_thread_load();
    match strads::config::get().partition {
        Partitioning::Uniform => assert!(load > 1.5, "equal ranges on sorted ids: {load}"),
        Partitioning::Balanced => assert!(load < 1.05, "histogram partitions: {load}"),
    }
}

/// `STRADS_PARTITION=uniform` switches sparse spaces to equal id ranges (imbalanced on
/// ids sorted by popularity), `balanced` (or `histogram`) is the default, anything else is
/// a clear error.
#[test]
fn partition_setting_is_honoured() {
    let child = |value: &str| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .env("STRADS_PARTITION", value)
            .args([
                "--exact",
                &crate::test_name(module_path!(), "partition_setting_child"),
                "--ignored",
            ])
            .output()
            .unwrap()
    };
    for value in ["uniform", "balanced", "histogram"] {
        let out = child(value);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "STRADS_PARTITION={value}: {stdout}");
        assert!(
            stdout.contains("1 passed"),
            "the child ran the test: {stdout}"
        );
    }
    let out = child("bogus");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(
        text.contains("invalid setting STRADS_PARTITION=\"bogus\""),
        "{text}"
    );
    // A misspelled name is ignored (histogram partitions) with one warning naming it.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("STRADS_PARTITON", "uniform")
        .args([
            "--exact",
            &crate::test_name(module_path!(), "partition_setting_child"),
            "--ignored",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("warning: unknown setting"))
            .collect::<Vec<_>>(),
        [
            "warning: unknown setting STRADS_PARTITON is ignored; the known settings are \
          STRADS_THREADS, STRADS_SERIAL, STRADS_EXPLAIN, STRADS_SPLIT, STRADS_COST, \
          STRADS_AFFINITY, \
          STRADS_PARTITION, STRADS_PROCESSES, STRADS_RANK, STRADS_SIZE, STRADS_COORDINATOR, \
          STRADS_JOB_SECRET_FILE, STRADS_CHECKPOINT, STRADS_CHECKPOINT_SECONDS, STRADS_RESUME, \
          STRADS_RESTARTS"
        ]
    );
    assert!(
        two_thread_load() < 1.05,
        "the default is histogram partitions"
    );
}
