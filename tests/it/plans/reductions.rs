//! Reductions end to end: each block accumulates its own part, the parts are folded in
//! schedule order, so a result is bit-identical between runs with the same thread count and
//! equal, bit for bit, to the serial replay of the recorded order, on a 1D, a 2D and an
//! `ordered` wavefront (a pipeline of tiles) loop.
//! The `f32` sums below differ between thread counts: the order matters, and the test
//! would see a replay that folded in another order.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

/// Sum, maximum, minimum and count of positive values; also writes `out` (1D).
#[strads::parallel_for(expect = "1d")]
fn stats(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> (f32, f32, f32, u64) {
    let mut sum: f32 = 0.0;
    let mut hi: f32 = f32::NEG_INFINITY;
    let mut lo: f32 = f32::INFINITY;
    let mut count: u64 = 0;
    for i in 0..x.len() {
        let v = x[i];
        sum += v;
        hi = hi.max(v);
        lo = lo.min(v);
        if v > 0.0 {
            count += 1;
        }
        out[i] = 2.0 * v;
    }
    (sum, hi, lo, count)
}

/// One SGD epoch (2D) that also returns its training loss, an `f32` reduction.
#[strads::parallel_for(expect = "2d")]
fn sgd_loss(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) -> f32 {
    let mut loss: f32 = 0.0;
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        loss += err * err;
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
    loss
}

/// A 5-point Gauss-Seidel sweep (an ordered 2D wavefront) that returns the squared and the
/// largest change it made.
#[strads::parallel_for(ordered, expect = "2d")]
fn sweep(grid: &DistArray<u8, 2>, a: &mut DistArray<f64, 2>) -> (f64, f64) {
    let mut change: f64 = 0.0;
    let mut largest: f64 = 0.0;
    for ([i, j], _) in grid {
        let old = a[[i + 1, j + 1]];
        let new = 0.25 * (a[[i, j + 1]] + a[[i + 2, j + 1]] + a[[i + 1, j]] + a[[i + 1, j + 2]]);
        a[[i + 1, j + 1]] = new;
        change += (new - old) * (new - old);
        largest = largest.max((new - old).abs());
    }
    (change, largest)
}

/// Values of very different magnitudes, so `f32` sums depend on the order.
fn data() -> DistArray<f32, 1> {
    DistArray::from_fn([5000], |[i]| {
        let k = (i * 7919 % 5003) as f32;
        let scale = [1e-3, 1.0, 1e3, 1e6][i % 4];
        (k - 2500.0) * scale
    })
}

fn bits(t: (f32, f32, f32, u64)) -> (u32, u32, u32, u64) {
    (t.0.to_bits(), t.1.to_bits(), t.2.to_bits(), t.3)
}

#[test]
fn parallel_equals_replay_and_is_reproducible() {
    let x = data();
    let want = serial(|| stats(&x, &mut DistArray::zeros([5000])));
    let mut sums = Vec::new();
    for threads in 1..=4 {
        let mut out = DistArray::zeros([5000]);
        let (got, trace) = strads::with_threads(threads, || record(|| stats(&x, &mut out)));
        assert_eq!(trace.runs.len(), 1);
        let replayed = replay(&trace, || stats(&x, &mut DistArray::zeros([5000])));
        assert_eq!(bits(got), bits(replayed), "{threads} threads: replay");
        let again = strads::with_threads(threads, || stats(&x, &mut DistArray::zeros([5000])));
        assert_eq!(bits(got), bits(again), "{threads} threads: second run");
        // Max, min and count do not depend on the order.
        assert_eq!(
            (got.1.to_bits(), got.2.to_bits(), got.3),
            (want.1.to_bits(), want.2.to_bits(), want.3),
            "{threads} threads"
        );
        assert_eq!(out[17], 2.0 * x[17]);
        sums.push(got.0);
    }
    // One worker runs the original order: the serial sum, bit for bit.
    assert_eq!(sums[0].to_bits(), want.0.to_bits());
    // The data is chosen so that the order shows.
    assert!(
        sums.iter().any(|s| s.to_bits() != want.0.to_bits()),
        "every thread count gave the serial sum {sums:?}: the test cannot see the fold order"
    );
}

#[test]
fn identities_leave_the_start_values() {
    // An empty loop: every variable keeps its initial value (no block adds anything).
    let x = DistArray::<f32, 1>::zeros([0]);
    let got = strads::with_threads(3, || stats(&x, &mut DistArray::zeros([0])));
    assert_eq!(bits(got), bits((0.0, f32::NEG_INFINITY, f32::INFINITY, 0)));
}

#[test]
fn two_d_loss_equals_replay() {
    let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 120,
        items: 90,
        ratings: 3000,
        ..Default::default()
    });
    let model = || {
        (
            DistArray::random([120, 8], 1),
            DistArray::random([90, 8], 2),
        )
    };
    let mut losses = Vec::new();
    for threads in 1..=4 {
        let (mut w, mut h) = model();
        let (loss, trace) = strads::with_threads(threads, || {
            record(|| {
                (0..2)
                    .map(|_| sgd_loss(&r, &mut w, &mut h, 0.01))
                    .collect::<Vec<_>>()
            })
        });
        let (mut w2, mut h2) = model();
        let replayed = replay(&trace, || {
            (0..2)
                .map(|_| sgd_loss(&r, &mut w2, &mut h2, 0.01))
                .collect::<Vec<_>>()
        });
        let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(b(&loss), b(&replayed), "{threads} threads");
        assert_eq!(w.as_slice(), w2.as_slice());
        losses.push(loss[0]);
    }
    let (mut w, mut h) = model();
    let want = serial(|| sgd_loss(&r, &mut w, &mut h, 0.01));
    assert_eq!(
        losses[0].to_bits(),
        want.to_bits(),
        "one worker: the serial loss"
    );
    // Other thread counts run other (equally valid) orders of the SGD updates.
    for l in &losses {
        assert!((l - want).abs() <= 0.05 * want, "{l} vs {want}");
    }
}

#[test]
fn wavefront_residual_equals_replay() {
    let (n, m) = (41, 37);
    let grid = DistArray::<u8, 2>::zeros([n, m]);
    let start = || DistArray::<f64, 2>::random([n + 2, m + 2], 5);
    let mut reference = start();
    let want = serial(|| sweep(&grid, &mut reference));
    for threads in 1..=4 {
        let mut a = start();
        let (got, trace) = strads::with_threads(threads, || record(|| sweep(&grid, &mut a)));
        let plan = &trace.runs[0].plan;
        assert!(plan.contains("tiles="), "a pipeline of tiles: {plan}");
        let mut b = start();
        let replayed = replay(&trace, || sweep(&grid, &mut b));
        assert_eq!(
            (got.0.to_bits(), got.1.to_bits()),
            (replayed.0.to_bits(), replayed.1.to_bits()),
            "{threads} threads"
        );
        // The sweep itself is the serial one; the largest change does not depend on order.
        assert_eq!(a.as_slice(), reference.as_slice(), "{threads} threads");
        assert_eq!(got.1.to_bits(), want.1.to_bits(), "{threads} threads");
        assert!(
            (got.0 - want.0).abs() <= 1e-12 * want.0,
            "{threads} threads"
        );
    }
}
