//! Wavefronts end to end: `ordered` loops whose dependences cross every row and column run
//! through the unimodular path (tiles of the skewed nest in a pipeline) and give exactly the
//! serial loop's result, for 1 to 4 workers; and every run equals the replay of its order.

use strads::prelude::*;
use strads::testing::{bits, record, replay, serial};

/// Dynamic time warping: vectors (1, 0), (0, 1), (1, 1); no skew needed.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn dtw_fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

/// A 9-point Gauss-Seidel sweep over the interior of `a` (offset by one): reading the
/// upper-right neighbour gives the vector (1, -1), so the nest is skewed `j' = j + i`.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn gauss_seidel(grid: &DistArray<u8, 2>, a: &mut DistArray<f64, 2>, omega: f64) {
    for ([i, j], _) in grid {
        let sum = a[[i, j]]
            + a[[i, j + 1]]
            + a[[i, j + 2]]
            + a[[i + 1, j]]
            + a[[i + 1, j + 2]]
            + a[[i + 2, j]]
            + a[[i + 2, j + 1]]
            + a[[i + 2, j + 2]];
        let old = a[[i + 1, j + 1]];
        a[[i + 1, j + 1]] = old + omega * (sum / 8.0 - old);
    }
}

fn table(n: usize, m: usize) -> DistArray<f32, 2> {
    DistArray::from_fn([n + 1, m + 1], |[i, j]| match (i, j) {
        (0, 0) => 0.0,
        (0, _) | (_, 0) => f32::INFINITY,
        _ => 0.0,
    })
}

#[test]
fn dtw_equals_the_serial_loop_on_any_worker_count() {
    let (n, m) = (97, 61);
    let cost = DistArray::<f32, 2>::random([n, m], 3);
    let mut reference = table(n, m);
    serial(|| dtw_fill(&cost, &mut reference));
    for threads in 1..=4 {
        let mut d = table(n, m);
        let ((), trace) = strads::with_threads(threads, || record(|| dtw_fill(&cost, &mut d)));
        assert_eq!(bits(&d), bits(&reference), "{threads} threads");
        let plan = &trace.runs[0].plan;
        assert!(
            plan.starts_with(&format!(
                "unimodular space=i time=j workers={threads} tiled=d"
            )),
            "{plan}"
        );
        // Tiles on one anti-diagonal run together: more than one worker is busy at some step.
        if threads > 1 {
            assert!(
                trace.runs[0]
                    .steps
                    .iter()
                    .any(|s| s.iter().filter(|b| !b.is_empty()).count() > 1)
            );
        }
        let mut again = table(n, m);
        replay(&trace, || dtw_fill(&cost, &mut again));
        assert_eq!(bits(&again), bits(&d), "{threads} threads: replay");
    }
}

#[test]
fn skewed_gauss_seidel_equals_the_serial_loop() {
    let (n, m) = (40, 53);
    let grid = DistArray::<u8, 2>::zeros([n, m]);
    let start = DistArray::<f64, 2>::random([n + 2, m + 2], 9);
    let mut reference = start.clone();
    serial(|| {
        for _ in 0..3 {
            gauss_seidel(&grid, &mut reference, 1.5);
        }
    });
    for threads in 1..=4 {
        let mut a = start.clone();
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for _ in 0..3 {
                    gauss_seidel(&grid, &mut a, 1.5);
                }
            })
        });
        assert_eq!(bits(&a), bits(&reference), "{threads} threads");
        assert!(
            trace.runs[0]
                .plan
                .starts_with("unimodular skew=[[1,0],[1,1]]"),
            "{}",
            trace.runs[0].plan
        );
        let mut again = start.clone();
        replay(&trace, || {
            for _ in 0..3 {
                gauss_seidel(&grid, &mut again, 1.5);
            }
        });
        assert_eq!(bits(&again), bits(&a), "{threads} threads: replay");
    }
}
