//! Loops the analysis used to refuse (issue 10, section 2) run in parallel: strided
//! subscripts (red-black ordering), `ordered` loops reaching rows element by element
//! through an inner loop, `step_by` ranges and perfectly nested range loops. An `ordered`
//! loop gives exactly the serial loop's result at 1 to 4 workers; an unordered one gives
//! exactly the replay of the order it recorded.

use strads::prelude::*;
use strads::testing::{bits, record, replay, serial};

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

/// Red-black relaxation as people write it: the odd points `(1..n - 1).step_by(2)`. The
/// index is `2t + 1` of the step `t`, so `x[i]` and `x[i ± 1]` never meet: 1D.
#[strads::parallel_for(expect = "1d")]
fn red_points(x: &mut DistArray<f64, 1>, n: usize) {
    for i in (1..n - 1).step_by(2) {
        x[i] = 0.5 * (x[i - 1] + x[i + 1]);
    }
}

#[strads::parallel_for(ordered, expect = "1d")]
fn black_points(x: &mut DistArray<f64, 1>, n: usize) {
    for i in (2..=n - 2).step_by(2) {
        x[i] = 0.5 * (x[i - 1] + x[i + 1]);
    }
}

#[test]
fn step_by_ranges_are_1d_and_equal_serial() {
    for n in [2, 3, 4, 11, 1000, 1001] {
        let start = DistArray::<f64, 1>::random([n], 7);
        let mut reference = start.clone();
        serial(|| {
            red_points(&mut reference, n);
            black_points(&mut reference, n);
        });
        for threads in 1..=4 {
            let mut x = start.clone();
            let ((), trace) = strads::with_threads(threads, || {
                record(|| {
                    red_points(&mut x, n);
                    black_points(&mut x, n);
                })
            });
            assert_eq!(bits(&x), bits(&reference), "n = {n}, {threads} threads");
            if n > 4 {
                for run in &trace.runs {
                    assert!(
                        run.plan
                            .starts_with(&format!("1d dim=i_step workers={threads}")),
                        "{}",
                        run.plan
                    );
                }
            }
            let mut again = start.clone();
            replay(&trace, || {
                red_points(&mut again, n);
                black_points(&mut again, n);
            });
            assert_eq!(bits(&again), bits(&x), "n = {n}, {threads} threads: replay");
        }
    }
}

/// Gauss-Seidel, 5 points, as people write it: two nested range loops over the interior.
/// Vectors (1, 0) and (0, 1): an ordered 2D wavefront of tiles.
#[strads::parallel_for(ordered, expect = "2d")]
fn gauss_seidel(u: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            u[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
        }
    }
}

/// Successive over-relaxation, the same nest with a factor.
#[strads::parallel_for(ordered)]
fn sor(u: &mut DistArray<f64, 2>, omega: f64) {
    for i in 1..u.shape()[0] - 1 {
        for j in 1..u.shape()[1] - 1 {
            let gs = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
            u[[i, j]] += omega * (gs - u[[i, j]]);
        }
    }
}

#[test]
fn nested_gauss_seidel_and_sor_equal_serial() {
    let (n, m) = (67, 45);
    let start = DistArray::<f64, 2>::random([n, m], 9);
    let mut reference = start.clone();
    serial(|| {
        gauss_seidel(&mut reference, n, m);
        sor(&mut reference, 1.5);
    });
    for threads in 1..=4 {
        let mut u = start.clone();
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                gauss_seidel(&mut u, n, m);
                sor(&mut u, 1.5);
            })
        });
        assert_eq!(bits(&u), bits(&reference), "{threads} threads");
        // P space tiles of `i`, 4P time tiles of `j` (44 columns), the pipeline's order:
        // worker s runs its tiles t = 0, 1, .. in turn.
        for run in &trace.runs {
            assert_eq!(
                run.plan,
                format!(
                    "2d space=i time=j workers={threads} tiled=u tiles={threads}x{}",
                    4 * threads
                )
            );
        }
        if threads > 1 {
            // Tiles on one anti-diagonal run together.
            assert!(
                trace.runs[0]
                    .steps
                    .iter()
                    .any(|s| s.iter().filter(|b| !b.is_empty()).count() > 1)
            );
        }
    }
}

/// The same 5-point sweep, unordered: any order of the points with no two neighbours at
/// once; the result equals the replay of the recorded order.
#[strads::parallel_for]
fn gauss_seidel_unordered(u: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            u[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
        }
    }
}

/// Jacobi: reads `u`, writes `v`; no dependence at all.
#[strads::parallel_for(expect = "1d")]
fn jacobi(u: &DistArray<f64, 2>, v: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            v[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
        }
    }
}

#[test]
fn unordered_nests_equal_their_replay() {
    let (n, m) = (53, 38);
    let start = DistArray::<f64, 2>::random([n, m], 4);
    let mut v_ref = DistArray::<f64, 2>::zeros([n, m]);
    serial(|| jacobi(&start, &mut v_ref, n, m));
    for threads in 1..=4 {
        let mut u = start.clone();
        let mut v = DistArray::<f64, 2>::zeros([n, m]);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                gauss_seidel_unordered(&mut u, n, m);
                jacobi(&start, &mut v, n, m);
            })
        });
        assert!(
            trace.runs[1]
                .plan
                .starts_with(&format!("1d dim=i workers={threads}")),
            "{}",
            trace.runs[1].plan
        );
        assert_eq!(bits(&v), bits(&v_ref), "{threads} threads: jacobi");
        let (mut u2, mut v2) = (start.clone(), DistArray::<f64, 2>::zeros([n, m]));
        replay(&trace, || {
            gauss_seidel_unordered(&mut u2, n, m);
            jacobi(&start, &mut v2, n, m);
        });
        assert_eq!(bits(&u2), bits(&u), "{threads} threads: replay");
        assert_eq!(bits(&v2), bits(&v), "{threads} threads: replay");
    }
}

/// Three levels, a step in the middle: a 3-D space, 1D over any dim.
#[strads::parallel_for(expect = "1d")]
fn fill3(t: &mut DistArray<u64, 3>, a: usize, c: usize) {
    for i in 0..a {
        for j in (0..t.shape()[1]).step_by(3) {
            for k in 0..c {
                t[[i, j, k]] = t[[i, j, k]] * 31 + (i * 10_000 + j * 100 + k) as u64;
            }
        }
    }
}

/// Not a perfect nest (the inner bound depends on `i`; a `continue` of the outer loop;
/// a `break` of the inner one): the inner loop stays part of the body, a 1-D space.
#[strads::parallel_for(expect = "1d")]
fn triangle(a: &mut DistArray<u64, 2>, n: usize) {
    for i in 0..n {
        for j in 0..i + 1 {
            a[[i, j]] += (i * 100 + j) as u64;
        }
    }
}

#[strads::parallel_for(expect = "1d")]
fn rows_until(a: &mut DistArray<u64, 2>, n: usize, m: usize) {
    'rows: for i in 0..n {
        for j in 0..m {
            if a[[i, j]] % 7 == 3 {
                continue 'rows;
            }
            if a[[i, j]] % 11 == 5 {
                break;
            }
            a[[i, j]] += 1;
        }
    }
}

#[test]
fn deeper_and_imperfect_nests_equal_serial() {
    let t0 = DistArray::<u64, 3>::from_fn([7, 10, 5], |[i, j, k]| (i * 3 + j * 5 + k) as u64);
    let a0 = DistArray::<u64, 2>::from_fn([23, 23], |[i, j]| (i * 13 + j * 7) as u64);
    let (mut t_ref, mut a_ref, mut b_ref) = (t0.clone(), a0.clone(), a0.clone());
    serial(|| {
        fill3(&mut t_ref, 7, 5);
        triangle(&mut a_ref, 23);
        rows_until(&mut b_ref, 23, 23);
    });
    for threads in 1..=4 {
        let (mut t, mut a, mut b) = (t0.clone(), a0.clone(), a0.clone());
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                fill3(&mut t, 7, 5);
                triangle(&mut a, 23);
                rows_until(&mut b, 23, 23);
            })
        });
        assert_eq!(t.as_slice(), t_ref.as_slice(), "{threads} threads");
        assert_eq!(a.as_slice(), a_ref.as_slice(), "{threads} threads");
        assert_eq!(b.as_slice(), b_ref.as_slice(), "{threads} threads");
        assert_eq!(
            trace
                .runs
                .iter()
                .map(|r| r.plan.clone())
                .collect::<Vec<_>>(),
            vec![
                format!("1d dim=i workers={threads} blocks={threads} local=t"),
                format!("1d dim=i workers={threads} blocks={threads} local=a"),
                format!("1d dim=i workers={threads} blocks={threads} local=a"),
            ]
        );
    }
}

#[test]
fn perfect_nests_are_dims_of_the_space() {
    let dims = |d: &[strads::__private::Cow<'static, str>]| {
        d.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(dims(&Fill3Loop::SPEC.dims), "i,j_step,k");
    assert_eq!(dims(&GaussSeidelLoop::SPEC.dims), "i,j");
    assert_eq!(dims(&SorLoop::SPEC.dims), "i,j");
    assert_eq!(dims(&JacobiLoop::SPEC.dims), "i,j");
    assert_eq!(dims(&RedPointsLoop::SPEC.dims), "i_step");
    assert_eq!(dims(&TriangleLoop::SPEC.dims), "i");
    assert_eq!(dims(&RowsUntilLoop::SPEC.dims), "i");
}

/// The step's start is not a literal: the index is not affine in the step, and the
/// subscripts are recorded at run time instead.
#[strads::parallel_for(expect = "reconnaissance")]
fn every_third(x: &mut DistArray<f64, 1>, first: usize) {
    for i in (first..x.len()).step_by(3) {
        x[i] = 2.0 * x[i] + 1.0;
    }
}

/// Empty outer ranges never compute the inner bounds (here `m - 1` would overflow), as in
/// the serial nest.
#[strads::parallel_for(expect = "1d")]
fn interior(a: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n {
        for j in 0..m - 1 {
            a[[i, j]] += 1.0;
        }
    }
}

#[test]
fn unknown_starts_and_empty_nests() {
    let start = DistArray::<f64, 1>::random([100], 2);
    let mut reference = start.clone();
    serial(|| every_third(&mut reference, 2));
    for threads in 1..=4 {
        let mut x = start.clone();
        let ((), trace) = strads::with_threads(threads, || record(|| every_third(&mut x, 2)));
        assert_eq!(bits(&x), bits(&reference), "{threads} threads");
        let mut again = start.clone();
        replay(&trace, || every_third(&mut again, 2));
        assert_eq!(bits(&again), bits(&x), "{threads} threads: replay");
        let mut a = DistArray::<f64, 2>::zeros([1, 1]);
        strads::with_threads(threads, || interior(&mut a, 1, 0));
        assert_eq!(a.as_slice(), &[0.0]);
    }
}

/// A reduction inside a nest: folded in schedule order, equal to the replay's.
#[strads::parallel_for]
fn residual(u: &DistArray<f64, 2>, r: &mut DistArray<f64, 2>) -> f64 {
    let mut norm: f64 = 0.0;
    for i in 1..u.shape()[0] - 1 {
        for j in 1..u.shape()[1] - 1 {
            let res =
                u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]];
            r[[i, j]] = res;
            if res.abs() < 0.01 {
                continue;
            }
            norm += res * res;
        }
    }
    norm
}

#[test]
fn small_and_degenerate_nests_equal_serial() {
    for (n, m) in [(2, 2), (3, 3), (3, 11), (11, 3), (4, 5), (9, 9)] {
        let start = DistArray::<f64, 2>::random([n, m], (n * 100 + m) as u64);
        let mut reference = start.clone();
        serial(|| gauss_seidel(&mut reference, n, m));
        let mut r_ref = DistArray::<f64, 2>::zeros([n, m]);
        let norm_ref = serial(|| residual(&start, &mut r_ref));
        for threads in 1..=4 {
            let mut u = start.clone();
            strads::with_threads(threads, || gauss_seidel(&mut u, n, m));
            assert_eq!(bits(&u), bits(&reference), "{n}x{m}, {threads} threads");
            let mut r = DistArray::<f64, 2>::zeros([n, m]);
            let (norm, trace) =
                strads::with_threads(threads, || record(|| residual(&start, &mut r)));
            assert_eq!(
                bits(&r),
                bits(&r_ref),
                "{n}x{m}, {threads} threads: residual"
            );
            let mut r2 = DistArray::<f64, 2>::zeros([n, m]);
            let norm2 = replay(&trace, || residual(&start, &mut r2));
            assert_eq!(
                norm.to_bits(),
                norm2.to_bits(),
                "{n}x{m}, {threads} threads"
            );
            assert!((norm - norm_ref).abs() <= 1e-9 * norm_ref.max(1.0));
        }
    }
}

/// A nest whose subscripts are read from data: reconnaissance over the 2-D space.
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter_grid(idx: &DistArray<u32, 2>, out: &mut DistArray<f64, 1>, n: usize, m: usize) {
    for i in 0..n {
        for j in (0..m).step_by(2) {
            let k = idx[[i, j]] as usize;
            out[k] = out[k] * 0.5 + (i * m + j) as f64;
        }
    }
}

#[test]
fn recorded_nests_equal_their_replay() {
    let (n, m) = (17, 12);
    let idx = DistArray::<u32, 2>::from_fn([n, m], |[i, j]| ((i * 7 + j * 5) % 23) as u32);
    for threads in 1..=4 {
        let mut out = DistArray::<f64, 1>::zeros([23]);
        let ((), trace) =
            strads::with_threads(threads, || record(|| scatter_grid(&idx, &mut out, n, m)));
        assert!(
            trace.runs[0].plan.starts_with("reconnaissance"),
            "{}",
            trace.runs[0].plan
        );
        let mut again = DistArray::<f64, 1>::zeros([23]);
        replay(&trace, || scatter_grid(&idx, &mut again, n, m));
        assert_eq!(bits(&again), bits(&out), "{threads} threads: replay");
        let ids: usize = trace.runs[0].steps.iter().flatten().map(|b| b.len()).sum();
        assert_eq!(ids, n * m / 2);
    }
}
