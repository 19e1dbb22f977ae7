//! Loops called from any context: from inside the global rayon pool (a `par_iter` whose
//! closure calls a loop), from a user's pool (`install`), several at once, and nested
//! write-back buffers. Every body runs under a time limit, so a deadlock fails the test
//! instead of hanging it; every result equals the same call made from the main thread.

use std::sync::mpsc;
use std::time::Duration;

use rayon::prelude::*;
use strads::prelude::*;

#[strads::parallel_for(expect = "2d")]
fn sgd(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * err * hi[k];
            hi[k] += lr * err * wk;
        }
    }
}

/// Runs `f` on a thread of its own and fails if it does not finish in time.
fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s: a deadlock"))
}

fn ratings(seed: u64) -> SparseArray<f32, 2> {
    let r = DistArray::<f32, 1>::random([60 * 50], seed);
    let entries = (0..60 * 50)
        .filter(|&k| r[k] < 0.3)
        .map(|k| ([k / 50, k % 50], 1.0 + 4.0 * r[k]))
        .collect();
    SparseArray::from_entries([60, 50], entries).unwrap()
}

/// One job: a few epochs on data of its own, at `threads` workers; the factors' bits.
fn job(seed: u64, threads: usize) -> Vec<u32> {
    let data = ratings(seed);
    let (mut w, mut h) = (
        DistArray::random([60, 8], seed + 1),
        DistArray::random([50, 8], seed + 2),
    );
    strads::with_threads(threads, || {
        for _ in 0..3 {
            sgd(&data, &mut w, &mut h, 0.01);
        }
    });
    w.as_slice()
        .iter()
        .chain(h.as_slice())
        .map(|x| x.to_bits())
        .collect()
}

// Each test runs whole under the limit: a thread left hanging by a deadlock holds a pool,
// and every later call on that pool (the expected results' too) would hang behind it.

#[test]
fn loops_called_from_the_global_pool() {
    within(120, || {
        for threads in 1..=4 {
            let want: Vec<Vec<u32>> = (0..8).map(|s| job(s, threads)).collect();
            let got = (0..8u64)
                .into_par_iter()
                .map(|s| job(s, threads))
                .collect::<Vec<_>>();
            assert_eq!(got, want, "{threads} threads");
        }
    });
}

#[test]
fn loops_called_from_a_users_pool() {
    within(120, || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for threads in 1..=4 {
            let want: Vec<Vec<u32>> = (0..6).map(|s| job(s, threads)).collect();
            let one = pool.install(|| job(0, threads));
            let all = pool.install(|| {
                (0..6u64)
                    .into_par_iter()
                    .map(|s| job(s, threads))
                    .collect::<Vec<_>>()
            });
            assert_eq!(one, want[0], "{threads} threads, one call");
            assert_eq!(all, want, "{threads} threads");
        }
    });
}

#[test]
fn loops_called_from_rayon_scopes_and_joins() {
    within(120, || {
        let want = (job(1, 2), job(2, 3), job(3, 2));
        let mut got = (Vec::new(), Vec::new(), Vec::new());
        rayon::scope(|s| {
            let (a, b, c) = (&mut got.0, &mut got.1, &mut got.2);
            s.spawn(move |_| *a = job(1, 2));
            s.spawn(move |_| *b = job(2, 3));
            s.spawn(move |_| *c = job(3, 2));
        });
        assert_eq!(got, want);
    });
}
