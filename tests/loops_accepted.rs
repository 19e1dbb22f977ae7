//! Loops the analysis used to refuse (issue 10, section 2) run in parallel: strided
//! subscripts (red-black ordering), `ordered` loops reaching rows element by element
//! through an inner loop, `step_by` ranges and perfectly nested range loops. An `ordered`
//! loop gives exactly the serial loop's result at 1 to 4 workers; an unordered one gives
//! exactly the replay of the order it recorded.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

fn bits<T: Copy + Into<f64>, const N: usize>(a: &DistArray<T, N>) -> Vec<u64> {
    a.as_slice().iter().map(|&x| x.into().to_bits()).collect()
}

/// Red-black relaxation, the odd half: `x[2k + 1]` from `x[2k]` and `x[2k + 2]`. Odd and
/// even indices never meet, so it is 1D over `k`.
#[strads::parallel_for(expect = "1d")]
fn relax_odd(x: &mut DistArray<f64, 1>, n: usize) {
    for k in 0..n {
        x[2 * k + 1] = 0.5 * (x[2 * k] + x[2 * k + 2]) + 0.25 * x[2 * k + 1];
    }
}

/// The same as an `ordered` loop.
#[strads::parallel_for(ordered, expect = "1d")]
fn relax_odd_ordered(x: &mut DistArray<f64, 1>, n: usize) {
    for k in 0..n {
        x[2 * k + 1] = 0.5 * (x[2 * k] + x[2 * k + 2]) + 0.25 * x[2 * k + 1];
    }
}

#[test]
fn strided_red_black_is_1d_and_equals_serial() {
    let n = 1001;
    let start = DistArray::<f64, 1>::random([2 * n + 1], 5);
    let mut reference = start.clone();
    serial(|| relax_odd(&mut reference, n));
    for threads in 1..=4 {
        let mut x = start.clone();
        let ((), trace) = strads::with_threads(threads, || record(|| relax_odd(&mut x, n)));
        assert!(
            trace.runs[0]
                .plan
                .starts_with(&format!("1d dim=k workers={threads}")),
            "{}",
            trace.runs[0].plan
        );
        // No two iterations conflict: every order gives the serial result.
        assert_eq!(bits(&x), bits(&reference), "{threads} threads");
        let mut again = start.clone();
        replay(&trace, || relax_odd(&mut again, n));
        assert_eq!(bits(&again), bits(&x), "{threads} threads: replay");
        let mut y = start.clone();
        strads::with_threads(threads, || relax_odd_ordered(&mut y, n));
        assert_eq!(bits(&y), bits(&reference), "{threads} threads: ordered");
    }
}

/// SGD matrix factorization as an `ordered` loop over sorted ratings, each factor reached
/// element by element through an inner loop over `k`.
#[strads::parallel_for(ordered, expect = "2d")]
fn sgd_ordered(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let mut pred = 0.0f32;
        for k in 0..8 {
            pred += w[[u, k]] * h[[i, k]];
        }
        let err = r - pred;
        for k in 0..8 {
            let wk = w[[u, k]];
            w[[u, k]] += lr * (err * h[[i, k]] - 0.05 * wk);
            h[[i, k]] += lr * (err * wk - 0.05 * h[[i, k]]);
        }
    }
}

fn ratings(users: usize, items: usize, n: usize, seed: u64) -> SparseArray<f32, 2> {
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    let entries = (0..n)
        .map(|_| {
            let (u, i) = (next() % users, next() % items);
            ([u, i], 1.0 + (next() % 5) as f32)
        })
        .collect();
    SparseArray::from_entries([users, items], entries)
        .unwrap()
        .sorted()
}

#[test]
fn ordered_sgd_mf_through_an_inner_loop_equals_serial() {
    let r = ratings(61, 47, 900, 11);
    let (w0, h0) = (
        DistArray::<f32, 2>::random([61, 8], 1),
        DistArray::<f32, 2>::random([47, 8], 2),
    );
    let (mut w_ref, mut h_ref) = (w0.clone(), h0.clone());
    serial(|| {
        for _ in 0..3 {
            sgd_ordered(&r, &mut w_ref, &mut h_ref, 0.02)
        }
    });
    for threads in 1..=4 {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for _ in 0..3 {
                    sgd_ordered(&r, &mut w, &mut h, 0.02)
                }
            })
        });
        assert!(
            trace.runs[0]
                .plan
                .starts_with(&format!("2d space=u time=i workers={threads}")),
            "{}",
            trace.runs[0].plan
        );
        assert!(
            !trace.runs[0].plan.contains("one worker"),
            "{}",
            trace.runs[0].plan
        );
        assert_eq!(bits(&w), bits(&w_ref), "{threads} threads: w");
        assert_eq!(bits(&h), bits(&h_ref), "{threads} threads: h");
    }
}
