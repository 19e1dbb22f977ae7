//! A reconnaissance plan is reused only while everything that may steer the loop's
//! accesses is the same: the arrays it reads and the captured values that reach a
//! subscript or a condition. A call with another offset is planned again and equals the
//! serial loop; a value that only flows into elements (a rate) keeps the plan.

use strads::prelude::*;
use strads::testing::{bits, serial};

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(
    idx: &DistArray<u32, 1>,
    out: &mut DistArray<f32, 1>,
    n: usize,
    offset: usize,
    rate: f32,
) {
    for i in 0..n {
        let j = idx[i] as usize + offset;
        out[j] = out[j] * 0.5 + rate;
    }
}

/// The offset reaches the subscript only through a condition.
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter_if(idx: &DistArray<u32, 1>, out: &mut DistArray<f32, 1>, n: usize, shifted: bool) {
    for i in 0..n {
        let mut j = idx[i] as usize;
        if shifted {
            j += 1;
        }
        out[j] += 1.0;
    }
}

#[test]
fn another_offset_is_planned_again() {
    let n = 4000;
    let idx = DistArray::from_vec([n], (0..n as u32).map(|i| (i * 37) % 500).collect()).unwrap();
    let calls = [(0, 0.5), (7, 0.5), (0, 0.25), (300, 1.0), (7, 2.0)];
    let mut want = DistArray::<f32, 1>::random([900], 1);
    let start = want.clone();
    serial(|| {
        for &(offset, rate) in &calls {
            scatter(&idx, &mut want, n, offset, rate);
        }
    });
    for threads in 1..=4 {
        let mut got = start.clone();
        strads::with_threads(threads, || {
            for &(offset, rate) in &calls {
                scatter(&idx, &mut got, n, offset, rate);
            }
        });
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
    }
}

#[test]
fn a_value_deciding_a_branch_keys_the_plan() {
    let n = 4000;
    let idx = DistArray::from_vec([n], (0..n as u32).map(|i| (i * 37) % 500).collect()).unwrap();
    let mut want = DistArray::<f32, 1>::zeros([501]);
    serial(|| {
        for shifted in [false, true, false] {
            scatter_if(&idx, &mut want, n, shifted);
        }
    });
    for threads in 1..=4 {
        let mut got = DistArray::<f32, 1>::zeros([501]);
        strads::with_threads(threads, || {
            for shifted in [false, true, false] {
                scatter_if(&idx, &mut got, n, shifted);
            }
        });
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
    }
}

/// PageRank's push: the edge list steers the accesses, the ranks only flow into elements.
#[strads::parallel_for(expect = "reconnaissance")]
fn push(edges: &DistArray<u32, 2>, ranks: &DistArray<f64, 1>, next: &mut DistArray<f64, 1>) {
    for e in 0..edges.shape()[0] {
        let (s, d) = (edges[[e, 0]] as usize, edges[[e, 1]] as usize);
        next[d] += 0.85 * ranks[s];
    }
}

/// A read-only array whose values decide a condition steers the accesses.
#[strads::parallel_for(expect = "reconnaissance")]
fn masked(idx: &DistArray<u32, 1>, mask: &DistArray<u8, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..idx.len() {
        if mask[i] > 0 {
            out[idx[i] as usize] += 1.0;
        }
    }
}

/// Changing an array that reaches no subscript (the ranks, rewritten by serial code between
/// calls) keeps the plan; changing one that does (the edges, the mask) makes a new one. Every
/// call equals the serial loop. (Plans always run: these loops are too small to pay.)
#[test]
fn only_arrays_that_steer_the_accesses_key_the_plan() {
    strads::testing::plan_always(steering_keys);
}

fn steering_keys() {
    let (n, m) = (300usize, 5000usize);
    let mut edges =
        DistArray::<u32, 2>::from_fn([m, 2], |[e, c]| ((e * (7 + 11 * c) + c * 13) % n) as u32);
    let run = |edges: &DistArray<u32, 2>, threads: usize| {
        let mut ranks = DistArray::<f64, 1>::from_fn([n], |[i]| 1.0 + i as f64 / n as f64);
        let mut next = DistArray::<f64, 1>::zeros([n]);
        let before = strads::testing::surveys();
        for _ in 0..4 {
            strads::with_threads(threads, || push(edges, &ranks, &mut next));
            // The serial program changes the ranks between calls.
            for i in 0..n {
                ranks[i] = 0.15 + next[i] * 0.5;
                next[i] = 0.0;
            }
        }
        (bits(&ranks), strads::testing::surveys() - before)
    };
    let want = serial(|| run(&edges, 1)).0;
    for threads in 2..=3 {
        let (got, surveys) = run(&edges, threads);
        assert_eq!(got, want, "{threads} threads");
        assert_eq!(surveys, 1, "{threads} threads: one plan for four calls");
    }
    // New edges: a new plan, still equal to the serial loop.
    edges[[0, 1]] = 1;
    let want = serial(|| run(&edges, 1)).0;
    let (got, surveys) = run(&edges, 2);
    assert_eq!(got, want);
    assert_eq!(surveys, 1, "the changed edges are planned once, then kept");

    let idx = DistArray::from_vec([4000], (0..4000u32).map(|i| (i * 37) % 500).collect()).unwrap();
    let mut mask = DistArray::<u8, 1>::from_fn([4000], |[i]| (i % 3 == 0) as u8);
    let mut want = DistArray::<f32, 1>::zeros([500]);
    let mut got = want.clone();
    let before = strads::testing::surveys();
    for k in 0..3 {
        mask[k] ^= 1;
        serial(|| masked(&idx, &mask, &mut want));
        strads::with_threads(2, || masked(&idx, &mask, &mut got));
        assert_eq!(bits(&got), bits(&want), "call {k}");
    }
    assert_eq!(
        strads::testing::surveys() - before,
        3,
        "a changed mask is planned again"
    );
}
