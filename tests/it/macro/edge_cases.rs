//! Edge cases of iteration spaces: empty ranges, empty sparse arrays, zero-sized dims, a
//! range not starting at zero, under every kind of plan and worker count.

use strads::prelude::*;

#[strads::parallel_for(expect = "2d")]
fn sgd(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            wu[k] += 0.01 * err * hi[k];
        }
    }
}

#[strads::parallel_for(expect = "1d")]
fn shifted(lo: usize, hi: usize, x: &DistArray<f64, 1>, y: &mut DistArray<f64, 1>) {
    for i in lo..hi {
        y[i] = 2.0 * x[i - 1] + 1.0;
    }
}

#[strads::parallel_for(ordered, expect = "unimodular")]
fn table(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        d[[i + 1, j + 1]] = c + d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize) {
    for s in 0..n {
        out[idx[s] as usize] += 1.0;
    }
}

#[test]
fn empty_and_offset_spaces_on_every_plan() {
    for threads in 1..=3 {
        strads::with_threads(threads, || {
            // Empty sparse space.
            let r = SparseArray::<f32, 2>::from_entries([4, 5], vec![]).unwrap();
            let (mut w, mut h) = (DistArray::random([4, 3], 1), DistArray::random([5, 3], 2));
            let before = (w.clone(), h.clone());
            sgd(&r, &mut w, &mut h);
            assert_eq!((w, h), before);

            // A range that starts past zero, and an empty one.
            let x = DistArray::<f64, 1>::from_fn([10], |[i]| i as f64);
            let mut y = DistArray::<f64, 1>::zeros([10]);
            shifted(3, 8, &x, &mut y);
            let expect: Vec<f64> = (0..10)
                .map(|i| {
                    if (3..8).contains(&i) {
                        2.0 * (i - 1) as f64 + 1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            assert_eq!(y.as_slice(), &expect[..]);
            shifted(5, 5, &x, &mut y);
            shifted(7, 2, &x, &mut y);
            assert_eq!(y.as_slice(), &expect[..]);

            // A wavefront over a table with a zero-sized dim, and a 1 x 1 one.
            let cost = DistArray::<f32, 2>::zeros([0, 4]);
            let mut d = DistArray::<f32, 2>::zeros([1, 5]);
            table(&cost, &mut d);
            let cost = DistArray::<f32, 2>::from_fn([1, 1], |_| 2.0);
            let mut d = DistArray::<f32, 2>::zeros([2, 2]);
            table(&cost, &mut d);
            assert_eq!(d[[1, 1]], 2.0);

            // Reconnaissance over no iteration, then over a few.
            let idx = DistArray::<u32, 1>::from_fn([6], |[i]| (i % 3) as u32);
            let mut out = DistArray::<f64, 1>::zeros([3]);
            scatter(&idx, &mut out, 0);
            assert_eq!(out.as_slice(), &[0.0; 3]);
            scatter(&idx, &mut out, 6);
            assert_eq!(out.as_slice(), &[2.0; 3]);
        });
    }
}

#[strads::parallel_for(expect = "2d")]
fn sgd_panics_at(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    bad: usize,
) {
    for ([u, i], &r) in ratings {
        assert!(u != bad, "bad user {bad}");
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        wu[0] += r * hi[0];
    }
}

#[strads::parallel_for(ordered, expect = "unimodular")]
fn table_panics(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        assert!(c >= 0.0, "negative cost at {i}, {j}");
        d[[i + 1, j + 1]] = c + d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter_panics(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize, bad: usize) {
    for s in 0..n {
        assert!(s != bad, "bad sample {bad}");
        out[idx[s] as usize] += 1.0;
    }
}

/// A panic in one worker's iteration reaches the caller; the other workers stop instead of
/// waiting for it forever (rotation ring, wavefront pipeline, reconnaissance barriers).
#[test]
fn a_panicking_iteration_reaches_the_caller_under_every_schedule() {
    let caught = |f: &dyn Fn()| {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        r.err()
            .and_then(|e| e.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    };
    for threads in 2..=3 {
        strads::with_threads(threads, || {
            let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
                users: 40,
                items: 30,
                ratings: 600,
                ..Default::default()
            });
            let (mut w, mut h) = (DistArray::random([40, 2], 1), DistArray::random([30, 2], 2));
            let bad = r.entry(r.nnz() / 2).0[0];
            let msg = caught(&|| sgd_panics_at(&r, &mut w.clone(), &mut h.clone(), bad));
            assert!(msg.contains(&format!("bad user {bad}")), "{msg}");
            sgd_panics_at(&r, &mut w, &mut h, usize::MAX); // the pool still works

            let cost =
                DistArray::<f32, 2>::from_fn(
                    [30, 30],
                    |[i, j]| if i == 17 && j == 3 { -1.0 } else { 1.0 },
                );
            let msg = caught(&|| table_panics(&cost, &mut DistArray::zeros([31, 31])));
            assert!(msg.contains("negative cost at 17, 3"), "{msg}");

            let idx = DistArray::<u32, 1>::from_fn([500], |[i]| (i * 7 % 50) as u32);
            let msg = caught(&|| scatter_panics(&idx, &mut DistArray::zeros([50]), 500, 321));
            assert!(msg.contains("bad sample 321"), "{msg}");
        });
    }
}

#[strads::parallel_for(expect = "1d")]
fn outer(rows: &DistArray<f64, 2>, sums: &mut DistArray<f64, 1>) {
    for ([i, _j], _) in rows {
        if sums[i] == 0.0 {
            sums[i] = inner_total(rows.shape()[1]);
        }
    }
}

#[strads::parallel_for(expect = "1d")]
fn inner(out: &mut DistArray<f64, 1>) {
    for i in 0..out.len() {
        out[i] = i as f64;
    }
}

fn inner_total(n: usize) -> f64 {
    let mut v = DistArray::<f64, 1>::zeros([n]);
    inner(&mut v);
    v.as_slice().iter().sum()
}

/// A parallel loop called from inside another one's body runs on that worker alone.
#[test]
fn a_loop_called_inside_a_loop_body_runs_inline() {
    let rows = DistArray::<f64, 2>::zeros([6, 5]);
    let mut sums = DistArray::<f64, 1>::zeros([6]);
    strads::with_threads(3, || outer(&rows, &mut sums));
    assert_eq!(sums.as_slice(), &[10.0; 6]);
}

/// Two threads calling one reconnaissance loop on the same inputs at once share its plan;
/// they take turns and both get the right result.
#[test]
fn concurrent_calls_of_one_reconnaissance_loop() {
    let idx = DistArray::<u32, 1>::from_fn([4000], |[i]| (i * 13 % 97) as u32);
    let expect: Vec<f64> = {
        let mut v = vec![0.0; 97];
        for i in 0..4000 {
            v[i * 13 % 97] += 1.0;
        }
        v
    };
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                strads::with_threads(2, || {
                    for _ in 0..5 {
                        let mut out = DistArray::<f64, 1>::zeros([97]);
                        scatter(&idx, &mut out, 4000);
                        assert_eq!(out.as_slice(), &expect[..]);
                    }
                })
            });
        }
    });
}

/// Two threads running different multi-worker loops at once (a rotation ring and a
/// wavefront pipeline) share the pool's threads; they take turns instead of deadlocking.
#[test]
fn different_loops_from_two_threads_at_once() {
    let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 60,
        items: 50,
        ratings: 1500,
        ..Default::default()
    });
    let cost = DistArray::<f32, 2>::from_fn([40, 40], |[i, j]| ((i * 7 + j * 3) % 11) as f32);
    let mut reference = DistArray::<f32, 2>::zeros([41, 41]);
    strads::testing::serial(|| table(&cost, &mut reference));
    std::thread::scope(|s| {
        s.spawn(|| {
            strads::with_threads(2, || {
                let (mut w, mut h) = (DistArray::random([60, 4], 1), DistArray::random([50, 4], 2));
                for _ in 0..50 {
                    sgd(&r, &mut w, &mut h);
                }
            })
        });
        s.spawn(|| {
            strads::with_threads(2, || {
                for _ in 0..50 {
                    let mut d = DistArray::<f32, 2>::zeros([41, 41]);
                    table(&cost, &mut d);
                    assert_eq!(d, reference);
                }
            })
        });
    });
}
