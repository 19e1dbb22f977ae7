//! Write-back buffers: `buffer(h)` exempts `h` from the dependence analysis; each worker
//! updates its own copy and the copies are merged after the loop in worker order. Integer
//! counts come out exact on any worker count; float buffers equal the replay of the
//! recorded order bit for bit; one worker equals the original loop.

use strads::prelude::*;
use strads::testing::{assert_replay_equal, bits, record, replay, serial};

/// Per-user rating counts and a global sum, both buffered: the loop over ratings then has
/// no dependence left (1D).
#[strads::parallel_for(buffer(per_item, total), expect = "1d")]
fn histogram(
    ratings: &SparseArray<f32, 2>,
    per_user: &mut DistArray<u32, 1>,
    per_item: &mut DistArray<u32, 1>,
    total: &mut DistArray<f64, 1>,
) {
    for ([u, i], &r) in ratings {
        per_user[u] += 1;
        per_item[i] += 1;
        total[0] += r as f64;
    }
}

/// SGD-MF with a global bias learnt through a buffer: still 2D.
#[strads::parallel_for(buffer(bias), expect = "2d")]
fn sgd_bias(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    bias: &mut DistArray<f32, 1>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - bias[0] - dot(wu, hi);
        bias[0] += lr * err;
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
}

/// Counts moved between bins: a bin a worker takes from ends below its base in that
/// worker's copy, a difference an unsigned type carries only by wrapping (the merge of a
/// debug build used to panic on it).
#[strads::parallel_for(buffer(bins), expect = "1d")]
fn move_counts(moves: &DistArray<u32, 2>, bins: &mut DistArray<u32, 1>, n: usize) {
    for m in 0..n {
        let (from, to) = (moves[[m, 0]] as usize, moves[[m, 1]] as usize);
        bins[from] -= 1;
        bins[to] += 1;
    }
}

fn data() -> SparseArray<f32, 2> {
    strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 90,
        items: 70,
        ratings: 2500,
        ..Default::default()
    })
}

#[test]
fn buffered_counts_are_exact_on_any_worker_count() {
    let r = data();
    let [users, items] = r.shape();
    let run = || {
        let (mut pu, mut pi, mut t) = (
            DistArray::<u32, 1>::zeros([users]),
            DistArray::<u32, 1>::zeros([items]),
            DistArray::<f64, 1>::zeros([1]),
        );
        histogram(&r, &mut pu, &mut pi, &mut t);
        (pu, pi, t)
    };
    let (su, si, st) = serial(run);
    for threads in 1..=4 {
        let (pu, pi, t) = strads::with_threads(threads, run);
        assert_eq!(pu, su, "{threads} threads");
        assert_eq!(pi, si, "{threads} threads");
        assert!(
            (t[0] - st[0]).abs() < 1e-6 * st[0].abs(),
            "{threads} threads"
        );
    }
}

#[test]
fn buffered_bias_equals_replay_and_one_worker_equals_serial() {
    let r = data();
    let [users, items] = r.shape();
    let fresh = || {
        (
            DistArray::<f32, 2>::random([users, 8], 1),
            DistArray::<f32, 2>::random([items, 8], 2),
            DistArray::<f32, 1>::zeros([1]),
        )
    };
    let runs = assert_replay_equal(1..=4, fresh, |(w, h, b)| {
        for _ in 0..2 {
            sgd_bias(&r, w, h, b, 0.01);
        }
    });
    for (((w, _, b), (), _), threads) in runs.iter().zip(1..) {
        // Each worker pushes its copy of the bias; their differences add up after the loop.
        assert!(
            b[0] != 0.0 && b[0].is_finite(),
            "the merged updates reached the bias"
        );
        if threads == 1 {
            let (mut w3, mut h3, mut b3) = fresh();
            serial(|| {
                for _ in 0..2 {
                    sgd_bias(&r, &mut w3, &mut h3, &mut b3, 0.01);
                }
            });
            assert_eq!(bits(w), bits(&w3));
            assert_eq!(b[0].to_bits(), b3[0].to_bits());
        }
    }
}

/// AdaGrad: the loop only accumulates gradients into `grad` (a buffer); after the loop,
/// `adagrad` turns each non-zero accumulated gradient into a step on `w`, with its own
/// per-weight history `g2` (Orion's buffer apply function).
fn adagrad(g: f32, w: &mut f32, g2: &mut f32) {
    *g2 += g * g;
    *w -= 0.5 * g / (g2.sqrt() + 1e-8);
}

#[strads::parallel_for(buffer(grad, apply = adagrad(w, g2)), expect = "1d")]
fn gradients(
    x: &DistArray<f32, 2>,
    y: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    g2: &mut DistArray<f32, 1>,
    grad: &mut DistArray<f32, 1>,
    n: usize,
) {
    for s in 0..n {
        let row = x.row(s);
        let mut pred = 0.0f32;
        for k in 0..row.len() {
            pred += row[k] * w[k];
        }
        let err = pred - y[s];
        for k in 0..row.len() {
            grad[k] += err * row[k];
        }
    }
}

#[test]
fn adagrad_through_a_buffer_apply_function() {
    let (n, d) = (400, 6);
    let x = DistArray::<f32, 2>::random([n, d], 11);
    let truth: Vec<f32> = (0..d).map(|k| k as f32 - 2.0).collect();
    let y = DistArray::from_fn([n], |[s]| (0..d).map(|k| x[[s, k]] * truth[k]).sum::<f32>());
    let loss = |w: &DistArray<f32, 1>| -> f32 {
        (0..n)
            .map(|s| {
                let p: f32 = (0..d).map(|k| x[[s, k]] * w[k]).sum::<f32>();
                (p - y[s]).powi(2i32)
            })
            .sum::<f32>()
            / n as f32
    };
    let train = |threads: usize, serial_mode: bool| {
        let (mut w, mut g2, mut grad) = (
            DistArray::<f32, 1>::zeros([d]),
            DistArray::<f32, 1>::zeros([d]),
            DistArray::<f32, 1>::zeros([d]),
        );
        for _ in 0..60 {
            if serial_mode {
                serial(|| gradients(&x, &y, &mut w, &mut g2, &mut grad, n));
            } else {
                strads::with_threads(threads, || gradients(&x, &y, &mut w, &mut g2, &mut grad, n));
            }
        }
        assert!(
            grad.as_slice().iter().all(|&g| g == 0.0),
            "the buffer itself is left as it was"
        );
        w
    };
    let serial_w = train(1, true);
    assert!(
        loss(&serial_w) < 0.05 * loss(&DistArray::zeros([d])),
        "AdaGrad learns: {}",
        loss(&serial_w)
    );
    // One worker: exactly the serial loop followed by the same apply.
    assert_eq!(train(1, false), serial_w);
    for threads in 2..=4 {
        let w = train(threads, false);
        assert!(
            loss(&w) < 0.05 * loss(&DistArray::zeros([d])),
            "{threads} threads"
        );
        // And every run equals its replay.
        let (mut w1, mut g21, mut gr1) = (
            DistArray::zeros([d]),
            DistArray::zeros([d]),
            DistArray::zeros([d]),
        );
        let ((), trace) = strads::with_threads(threads, || {
            record(|| gradients(&x, &y, &mut w1, &mut g21, &mut gr1, n))
        });
        let (mut w2, mut g22, mut gr2) = (
            DistArray::zeros([d]),
            DistArray::zeros([d]),
            DistArray::zeros([d]),
        );
        replay(&trace, || gradients(&x, &y, &mut w2, &mut g22, &mut gr2, n));
        assert_eq!((w1, g21), (w2, g22), "{threads} threads");
    }
}

/// A buffer reached through `row_mut`: per-item sums of the user factors, accumulated row by
/// row (`g[k] += ..`); the loop is 1D over `u` with `sums` buffered.
#[strads::parallel_for(buffer(sums), expect = "1d")]
fn item_sums(ratings: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, sums: &mut DistArray<f32, 2>) {
    for ([u, i], &r) in ratings {
        let wu = w.row(u);
        let g = sums.row_mut(i);
        for k in 0..g.len() {
            g[k] += r * wu[k];
        }
    }
}

#[test]
fn buffers_reached_through_rows_equal_the_replay() {
    let r = data();
    let [users, items] = r.shape();
    let w = DistArray::<f32, 2>::random([users, 4], 3);
    let mut expected = DistArray::<f32, 2>::zeros([items, 4]);
    serial(|| item_sums(&r, &w, &mut expected));
    for threads in 1..=4 {
        let mut sums = DistArray::<f32, 2>::zeros([items, 4]);
        let ((), trace) = strads::with_threads(threads, || record(|| item_sums(&r, &w, &mut sums)));
        let mut again = DistArray::<f32, 2>::zeros([items, 4]);
        replay(&trace, || item_sums(&r, &w, &mut again));
        let bits =
            |a: &DistArray<f32, 2>| a.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&sums), bits(&again), "{threads} threads");
        if threads == 1 {
            assert_eq!(
                bits(&sums),
                bits(&expected),
                "one worker is the original loop"
            );
        }
    }
}

#[test]
fn unsigned_counts_that_decrease_merge_exactly() {
    let n = 600;
    let moves =
        DistArray::<u32, 2>::from_fn([n, 2], |[m, k]| ((m * 7 + k * 3 + m * m) % 10) as u32);
    let run = || {
        let mut bins = DistArray::<u32, 1>::from_fn([10], |_| 1000);
        move_counts(&moves, &mut bins, n);
        bins
    };
    let want = serial(run);
    assert_eq!(want.as_slice().iter().sum::<u32>(), 10_000);
    assert!(want.as_slice().iter().any(|&c| c < 1000));
    for threads in 1..=4 {
        assert_eq!(
            strads::with_threads(threads, run),
            want,
            "{threads} threads"
        );
    }
}
