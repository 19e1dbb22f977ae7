//! When write-back buffers are applied (Orion sect. 3.3.4): at the end of every step of the
//! schedule and, with `max_delay = n`, after every `n` iterations of each worker; with one
//! worker only every `n` iterations, as the serial loop does. The points are exact (a loop
//! that reads its buffer sees the others' updates exactly there), every schedule (1D, 2D,
//! reconnaissance, wavefront, `iter_mut()`) equals the replay of its recorded order with
//! the buffers applied at the same points, one worker equals the original loop where its
//! plan keeps the serial order (all but the wavefront, which runs tiles; apply functions
//! included), and a panic between application points reaches the caller.

use strads::prelude::*;
use strads::testing::{bits, record, replay, serial};

/// `assert_eq!` without printing the (long) values.
macro_rules! same {
    ($a:expr, $b:expr $(,)?) => {
        assert!($a == $b, "results differ")
    };
    ($a:expr, $b:expr, $($msg:tt)+) => {
        assert!($a == $b, $($msg)+)
    };
}

/// Each iteration notes how many increments it sees, then adds one.
#[strads::parallel_for(buffer(count), expect = "1d")]
fn observe(seen: &mut DistArray<u64, 1>, count: &mut DistArray<u64, 1>, n: usize) {
    for i in 0..n {
        seen[i] = count[0];
        count[0] += 1;
    }
}

/// The same with the buffer applied every 2 iterations of each worker.
#[strads::parallel_for(buffer(count, max_delay = 2), expect = "1d")]
fn observe_every_2(seen: &mut DistArray<u64, 1>, count: &mut DistArray<u64, 1>, n: usize) {
    for i in 0..n {
        seen[i] = count[0];
        count[0] += 1;
    }
}

#[test]
fn application_points_are_exact() {
    let n = 8;
    type Observe = fn(&mut DistArray<u64, 1>, &mut DistArray<u64, 1>, usize);
    let run = |f: Observe, threads: usize| {
        let (mut seen, mut count) = (DistArray::zeros([n]), DistArray::zeros([1]));
        let ((), trace) = strads::with_threads(threads, || record(|| f(&mut seen, &mut count, n)));
        (seen.as_slice().to_vec(), count[0], trace)
    };
    // Two workers, iterations 0..4 and 4..8. Without max_delay each sees only its own
    // updates until the end of the step (the call's end in 1D).
    let (seen, count, trace) = run(observe, 2);
    assert_eq!(
        trace.runs[0].per_worker(),
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
    );
    assert_eq!(seen, [0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(count, 8);
    // Every 2 iterations both workers' updates are merged: 2 + 2 after the first round.
    let (seen, count, trace) = run(observe_every_2, 2);
    assert_eq!(seen, [0, 1, 4, 5, 0, 1, 4, 5]);
    assert_eq!(count, 8);
    assert!(
        trace.runs[0].plan.ends_with("buffered=count max_delay=2"),
        "{}",
        trace.runs[0].plan
    );
    assert_eq!(trace.runs[0].max_delay, Some(2));
    // One worker sees every update at once, as the serial loop does.
    for f in [observe as Observe, observe_every_2] {
        let (seen, count, _) = run(f, 1);
        assert_eq!(seen, (0..8).collect::<Vec<u64>>());
        assert_eq!(count, 8);
        let (mut s, mut c) = (DistArray::zeros([n]), DistArray::zeros([1]));
        serial(|| f(&mut s, &mut c, n));
        assert_eq!(s.as_slice(), &seen[..]);
    }
    // Four workers of two iterations: one round, each sees only its own.
    let (seen, count, _) = run(observe_every_2, 4);
    assert_eq!(seen, [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(count, 8);
}

#[test]
fn fewer_iterations_than_workers() {
    // Empty blocks still take part in every application point: no worker waits forever.
    for n in [0, 1, 3] {
        for threads in 1..=4 {
            let (mut seen, mut count) = (DistArray::zeros([n.max(1)]), DistArray::zeros([1]));
            let ((), trace) = strads::with_threads(threads, || {
                record(|| observe_every_2(&mut seen, &mut count, n))
            });
            assert_eq!(count[0], n as u64, "{n} iterations, {threads} threads");
            let (mut s2, mut c2) = (DistArray::zeros([n.max(1)]), DistArray::zeros([1]));
            replay(&trace, || observe_every_2(&mut s2, &mut c2, n));
            assert_eq!((seen, count), (s2, c2), "{n} iterations, {threads} threads");
        }
    }
}

/// SGD-MF with a global bias in a buffer applied every 16 ratings of each worker: 2D.
#[strads::parallel_for(buffer(bias, max_delay = 16), expect = "2d")]
fn sgd_bias(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    bias: &mut DistArray<f32, 1>,
    lr: f32,
) -> f64 {
    let mut sse: f64 = 0.0;
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - bias[0] - dot(wu, hi);
        bias[0] += lr * err;
        sse += (err * err) as f64;
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
    sse
}

fn ratings() -> SparseArray<f32, 2> {
    strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 90,
        items: 70,
        ratings: 2500,
        ..Default::default()
    })
}

fn factors(rows: usize, seed: u64) -> DistArray<f32, 2> {
    let r = DistArray::<f32, 2>::random([rows, 4], seed);
    DistArray::from_fn([rows, 4], |idx| 0.3 * r[idx])
}

#[test]
fn two_d_with_max_delay_equals_replay_and_serial() {
    let r = ratings();
    let [users, items] = r.shape();
    let start = || {
        (
            factors(users, 1),
            factors(items, 2),
            DistArray::<f32, 1>::zeros([1]),
        )
    };
    for threads in 1..=4 {
        let (mut w, mut h, mut b) = start();
        let (sse, trace) = strads::with_threads(threads, || {
            record(|| {
                (0..3)
                    .map(|_| sgd_bias(&r, &mut w, &mut h, &mut b, 0.02))
                    .collect::<Vec<f64>>()
            })
        });
        let (mut w2, mut h2, mut b2) = start();
        let sse2 = replay(&trace, || {
            (0..3)
                .map(|_| sgd_bias(&r, &mut w2, &mut h2, &mut b2, 0.02))
                .collect::<Vec<f64>>()
        });
        assert_eq!(sse, sse2, "{threads} threads");
        same!(
            (bits(&w), bits(&h), bits(&b)),
            (bits(&w2), bits(&h2), bits(&b2))
        );
        assert!(b[0] != 0.0);
        if threads == 1 {
            let (mut w3, mut h3, mut b3) = start();
            let sse3: Vec<f64> = serial(|| {
                (0..3)
                    .map(|_| sgd_bias(&r, &mut w3, &mut h3, &mut b3, 0.02))
                    .collect()
            });
            assert_eq!(sse, sse3);
            same!((bits(&w), bits(&b)), (bits(&w3), bits(&b3)));
        }
    }
}

/// Indirect scatter (reconnaissance) with a buffered per-bucket count applied every 7
/// samples of each worker, and a loss reduction.
#[strads::parallel_for(buffer(hits, max_delay = 7), expect = "reconnaissance")]
fn scatter(
    idx: &DistArray<u32, 1>,
    vals: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    hits: &mut DistArray<f32, 1>,
    n: usize,
) -> f64 {
    let mut loss: f64 = 0.0;
    for s in 0..n {
        let j = idx[s] as usize;
        let e = vals[s] - w[j] - 0.01 * hits[j % 4];
        w[j] += 0.1 * e;
        hits[j % 4] += e.abs();
        loss += (e * e) as f64;
    }
    loss
}

#[test]
fn reconnaissance_with_max_delay_equals_replay_and_serial() {
    let n = 3000;
    let idx = DistArray::<u32, 1>::from_fn([n], |[s]| ((s * s + 7 * s) % 301) as u32);
    let vals = DistArray::<f32, 1>::random([n], 4);
    let start = || {
        (
            DistArray::<f32, 1>::zeros([301]),
            DistArray::<f32, 1>::zeros([4]),
        )
    };
    for threads in 1..=4 {
        let (mut w, mut hits) = start();
        let (loss, trace) = strads::with_threads(threads, || {
            record(|| {
                (0..2)
                    .map(|_| scatter(&idx, &vals, &mut w, &mut hits, n))
                    .collect::<Vec<f64>>()
            })
        });
        assert!(
            trace.runs[0].plan.contains(" split=0 "),
            "{}",
            trace.runs[0].plan
        );
        let (mut w2, mut h2) = start();
        let loss2 = replay(&trace, || {
            (0..2)
                .map(|_| scatter(&idx, &vals, &mut w2, &mut h2, n))
                .collect::<Vec<f64>>()
        });
        assert_eq!(loss, loss2, "{threads} threads");
        same!(
            (bits(&w), bits(&hits)),
            (bits(&w2), bits(&h2)),
            "{threads} threads"
        );
        if threads == 1 {
            let (mut w3, mut h3) = start();
            let loss3: Vec<f64> = serial(|| {
                (0..2)
                    .map(|_| scatter(&idx, &vals, &mut w3, &mut h3, n))
                    .collect()
            });
            assert_eq!(loss, loss3);
            same!((bits(&w), bits(&hits)), (bits(&w3), bits(&h3)));
        }
    }
}

/// A wavefront (dynamic time warping) that also sums every cell into a buffer applied
/// every 50 cells of each worker, and damps each cell by what it sees there.
#[strads::parallel_for(ordered, buffer(total, max_delay = 50), expect = "unimodular")]
fn dtw_total(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>, total: &mut DistArray<f32, 1>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j]].min(d[[i, j + 1]]).min(d[[i + 1, j]]);
        let v = c + best - 1e-6 * total[0];
        d[[i + 1, j + 1]] = v;
        total[0] += v;
    }
}

#[test]
fn wavefront_with_max_delay_equals_replay_and_serial() {
    let (m, n) = (120, 90);
    let cost = DistArray::<f32, 2>::random([m, n], 9);
    let start = || {
        let mut d = DistArray::<f32, 2>::from_fn([m + 1, n + 1], |_| f32::INFINITY);
        d[[0, 0]] = 0.0;
        (d, DistArray::<f32, 1>::zeros([1]))
    };
    for threads in 1..=3 {
        let (mut d, mut t) = start();
        let ((), trace) =
            strads::with_threads(threads, || record(|| dtw_total(&cost, &mut d, &mut t)));
        let (mut d2, mut t2) = start();
        replay(&trace, || dtw_total(&cost, &mut d2, &mut t2));
        same!(
            (bits(&d), bits(&t)),
            (bits(&d2), bits(&t2)),
            "{threads} threads"
        );
    }
}

/// Per-entry state through `iter_mut()` with a buffered total applied every 5 entries of
/// each worker.
#[strads::parallel_for(buffer(total, max_delay = 5), expect = "1d")]
fn decay(entries: &mut SparseArray<f32, 2>, total: &mut DistArray<f32, 1>) {
    for ([_r, _c], v) in entries.iter_mut() {
        *v = 0.5 * *v + 0.001 * total[0];
        total[0] += *v;
    }
}

#[test]
fn iter_mut_with_max_delay_equals_replay_and_serial() {
    let start = || {
        let entries: Vec<([usize; 2], f32)> = (0..400)
            .map(|k| ([k % 37, (k * 7) % 23], 1.0 + (k % 13) as f32))
            .collect();
        (
            SparseArray::from_entries([37, 23], entries).unwrap(),
            DistArray::<f32, 1>::zeros([1]),
        )
    };
    let vals = |s: &SparseArray<f32, 2>| s.iter().map(|(_, v)| v.to_bits()).collect::<Vec<u32>>();
    for threads in 1..=3 {
        let (mut e, mut t) = start();
        let ((), trace) = strads::with_threads(threads, || record(|| decay(&mut e, &mut t)));
        let (mut e2, mut t2) = start();
        replay(&trace, || decay(&mut e2, &mut t2));
        same!(
            (vals(&e), bits(&t)),
            (vals(&e2), bits(&t2)),
            "{threads} threads"
        );
        if threads == 1 {
            let (mut e3, mut t3) = start();
            serial(|| decay(&mut e3, &mut t3));
            same!((vals(&e), bits(&t)), (vals(&e3), bits(&t3)));
        }
    }
}

/// The apply function moves each running mean towards the samples by the accumulated
/// difference, and counts how often it was called for its element.
fn pull(g: f32, m: &mut f32, calls: &mut f32) {
    *m += g / 200.0;
    *calls += 1.0;
}

/// Running means of the columns of `x`, updated through a buffer applied every 25 samples
/// of each worker.
#[strads::parallel_for(buffer(diff, apply = pull(m, calls), max_delay = 25), expect = "1d")]
fn means(
    x: &DistArray<f32, 2>,
    m: &mut DistArray<f32, 1>,
    calls: &mut DistArray<f32, 1>,
    diff: &mut DistArray<f32, 1>,
    n: usize,
) {
    for s in 0..n {
        let row = x.row(s);
        for k in 0..row.len() {
            diff[k] += row[k] - m[k];
        }
    }
}

#[test]
fn apply_function_every_max_delay_iterations() {
    let (n, d, epochs) = (400, 5, 4);
    let x = DistArray::<f32, 2>::random([n, d], 11);
    let start = || {
        (
            DistArray::<f32, 1>::zeros([d]),
            DistArray::<f32, 1>::zeros([d]),
            DistArray::<f32, 1>::zeros([d]),
        )
    };
    let (mut ms, mut cs, mut ds) = start();
    for _ in 0..epochs {
        serial(|| means(&x, &mut ms, &mut cs, &mut ds, n));
    }
    // The serial loop applies every 25 samples: 16 times an epoch.
    assert!(cs.as_slice().iter().all(|&c| c == 16.0 * epochs as f32));
    for threads in 1..=4 {
        let (mut m, mut c, mut dd) = start();
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for _ in 0..epochs {
                    means(&x, &mut m, &mut c, &mut dd, n);
                }
            })
        });
        assert!(
            dd.as_slice().iter().all(|&v| v == 0.0),
            "the buffer stays as it was"
        );
        // Each worker's block of n / threads samples takes ceil(block / 25) rounds, the
        // last one ending the step: that many applications per epoch.
        let rounds = (n.div_ceil(threads)).div_ceil(25) as f32;
        assert!(
            c.as_slice().iter().all(|&v| v == rounds * epochs as f32),
            "{threads} threads: {:?} calls, expected {rounds} per epoch",
            c.as_slice()
        );
        let (mut m2, mut c2, mut d2) = start();
        replay(&trace, || {
            for _ in 0..epochs {
                means(&x, &mut m2, &mut c2, &mut d2, n);
            }
        });
        same!(
            (bits(&m), bits(&c)),
            (bits(&m2), bits(&c2)),
            "{threads} threads"
        );
        if threads == 1 {
            same!((bits(&m), bits(&c)), (bits(&ms), bits(&cs)));
        }
        // The means follow the columns' means (within the noise of the last samples).
        for k in 0..d {
            let mean = (0..n).map(|s| x[[s, k]]).sum::<f32>() / n as f32;
            assert!(
                (m[k] - mean).abs() < 0.15,
                "{threads} threads: {} vs {mean}",
                m[k]
            );
        }
    }
}

/// Panics at one iteration, between application points.
#[strads::parallel_for(buffer(count, max_delay = 3), expect = "1d")]
fn observe_until(
    seen: &mut DistArray<u64, 1>,
    count: &mut DistArray<u64, 1>,
    n: usize,
    bad: usize,
) {
    for i in 0..n {
        if i == bad {
            panic!("iteration {i} is bad");
        }
        seen[i] = count[0];
        count[0] += 1;
    }
}

fn adagrad_or_panic(g: f32, w: &mut f32) {
    if g > 1e6 {
        panic!("gradient {g} too large");
    }
    *w -= 0.1 * g;
}

#[strads::parallel_for(buffer(grad, apply = adagrad_or_panic(w), max_delay = 4), expect = "1d")]
fn explode(w: &mut DistArray<f32, 1>, grad: &mut DistArray<f32, 1>, n: usize) {
    for i in 0..n {
        grad[0] += if i == 13 { 1e7 } else { 1.0 };
    }
}

fn panic_message(r: std::thread::Result<()>) -> String {
    let e = r.expect_err("the panic reaches the caller");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn panics_between_application_points_reach_the_caller() {
    let n = 40;
    for threads in 2..=4 {
        for bad in [0, 5, 21, 39] {
            let (mut seen, mut count) = (DistArray::zeros([n]), DistArray::zeros([1]));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                strads::with_threads(threads, || observe_until(&mut seen, &mut count, n, bad))
            }));
            assert_eq!(panic_message(r), format!("iteration {bad} is bad"));
        }
        // The apply function itself panics, on the worker that arrives last.
        let (mut w, mut g) = (DistArray::zeros([1]), DistArray::zeros([1]));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            strads::with_threads(threads, || explode(&mut w, &mut g, n))
        }));
        assert!(
            panic_message(r).starts_with("gradient "),
            "{threads} threads"
        );
    }
}
