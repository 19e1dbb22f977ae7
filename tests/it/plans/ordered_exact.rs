//! What is exact for `ordered` loops (README, "What the analysis accepts"): the arrays
//! equal the serial loop's bit for bit; so do integer reductions, `max`/`min`, and float
//! `+=`/`*=`, whose terms each block keeps and the call adds in the serial order onto the
//! value before the loop; every result also equals the serial replay of the recorded order.
//! Checked on a wavefront and on a loop planned by reconnaissance, at 1-4 threads, with
//! reductions that start from values other than their identities.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

/// Dynamic time warping's fill, with statistics of the cells it writes.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) -> (f64, u64, f32, i64) {
    let mut total: f64 = 0.125;
    let mut cheap: u64 = 3;
    let mut worst: f32 = -1.0;
    let mut signs: i64 = 1;
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        let v = c + best;
        d[[i + 1, j + 1]] = v;
        total += v as f64 * 1.000_001;
        if c < 0.25 {
            cheap += 1;
        }
        worst = worst.max(v);
        signs *= if (i + j) % 7 == 0 { -1 } else { 1 };
    }
    (total, cheap, worst, signs)
}

/// A chain through an index array, with statistics.
#[strads::parallel_for(ordered, expect = "reconnaissance")]
fn chain(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize) -> (f64, u64, f64) {
    let mut total: f64 = -2.5;
    let mut steps: u64 = 10;
    let mut least: f64 = 1e300;
    for i in 1..n {
        let (a, b) = (idx[i] as usize, idx[i - 1] as usize);
        let v = out[a] * 0.5 + out[b] + 0.1;
        out[a] = v;
        total += v;
        steps += 1;
        least = least.min(v);
    }
    (total, steps, least)
}

#[test]
fn wavefront_reductions_are_exact_where_the_readme_says() {
    let (n, m) = (70, 50);
    let cost = DistArray::<f32, 2>::random([n, m], 4);
    let start = || {
        DistArray::<f32, 2>::from_fn([n + 1, m + 1], |[i, j]| {
            if i == 0 && j == 0 {
                0.0
            } else if i == 0 || j == 0 {
                f32::INFINITY
            } else {
                0.0
            }
        })
    };
    let mut want_d = start();
    let want = serial(|| fill(&cost, &mut want_d));
    for threads in 1..=4 {
        let mut d = start();
        let (got, trace) = strads::with_threads(threads, || record(|| fill(&cost, &mut d)));
        assert_eq!(
            d.as_slice(),
            want_d.as_slice(),
            "{threads} threads: arrays exact"
        );
        assert_eq!(got.1, want.1, "{threads} threads: integer +=");
        assert_eq!(got.3, want.3, "{threads} threads: integer *=");
        assert_eq!(got.2.to_bits(), want.2.to_bits(), "{threads} threads: max");
        let mut r = start();
        let replayed = replay(&trace, || fill(&cost, &mut r));
        assert_eq!(
            got.0.to_bits(),
            replayed.0.to_bits(),
            "{threads} threads: float += = replay"
        );
        assert_eq!(
            got.0.to_bits(),
            want.0.to_bits(),
            "{threads} threads: float += equals the serial loop"
        );
    }
}

#[test]
fn reconnaissance_reductions_are_exact_where_the_readme_says() {
    let n = 3000;
    let idx = DistArray::from_vec(
        [n],
        (0..n as u32).map(|i| (i * 7919 + i / 3) % 700).collect(),
    )
    .unwrap();
    let start = DistArray::<f64, 1>::random([700], 3);
    let mut want_out = start.clone();
    let want = serial(|| chain(&idx, &mut want_out, n));
    for threads in 1..=4 {
        let mut out = start.clone();
        let (got, trace) = strads::with_threads(threads, || record(|| chain(&idx, &mut out, n)));
        assert_eq!(
            out.as_slice(),
            want_out.as_slice(),
            "{threads} threads: arrays exact"
        );
        assert_eq!(got.1, want.1, "{threads} threads: integer +=");
        assert_eq!(got.2.to_bits(), want.2.to_bits(), "{threads} threads: min");
        let mut r = start.clone();
        let replayed = replay(&trace, || chain(&idx, &mut r, n));
        assert_eq!(
            got.0.to_bits(),
            replayed.0.to_bits(),
            "{threads} threads: float += = replay"
        );
        assert_eq!(
            got.0.to_bits(),
            want.0.to_bits(),
            "{threads} threads: float += equals the serial loop"
        );
    }
}

/// A nest whose inner loop steps: iterations' places in the serial order come from their
/// coordinates, not their values (found by review: the values of `j` passed the extent of
/// its coordinates, and two places coincided, which hung the merge).
#[strads::parallel_for(ordered)]
fn stepped(x: &mut DistArray<f64, 2>, n: usize, lo: usize) -> (f64, f64) {
    let mut s: f64 = 0.0;
    let mut p: f64 = 1.0;
    for i in 0..n {
        for j in (5..11).step_by(3) {
            x[[i, j]] = x[[i, j]] * 0.5 + 1.0;
            s += 1.0 / (1 + i * 10 + j + lo) as f64 + if j == 8 { 1e3 } else { 0.0 };
            p *= 1.0 + (i as f64 - j as f64) * 1e-3;
        }
    }
    (s, p)
}

#[test]
fn stepped_nests_fold_in_the_serial_order() {
    let n = 40;
    let start = DistArray::<f64, 2>::random([n, 11], 5);
    let mut want_x = start.clone();
    let want = serial(|| stepped(&mut want_x, n, 3));
    strads::testing::plan_always(|| {
        for threads in 1..=4 {
            let mut x = start.clone();
            let got = strads::with_threads(threads, || stepped(&mut x, n, 3));
            assert_eq!(x.as_slice(), want_x.as_slice(), "{threads} threads: arrays");
            assert_eq!(
                (got.0.to_bits(), got.1.to_bits()),
                (want.0.to_bits(), want.1.to_bits()),
                "{threads} threads: float += and *= equal the serial loop"
            );
        }
    });
}
