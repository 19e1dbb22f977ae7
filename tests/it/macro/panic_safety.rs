//! Loops that once refused, and test modes that switch off again: an ordered loop over
//! the `iter()` or `iter_mut()` of unsorted entries runs them in their stored order, as
//! the serial loop does; `testing::record` ends with a panic.

use strads::prelude::*;
use strads::testing::{record, serial};

/// A wavefront over a sparse array's entries, each entry keeping the value it saw.
#[strads::parallel_for(ordered)]
fn sweep_mut(cells: &mut SparseArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], c) in cells.iter_mut() {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]);
        d[[i + 1, j + 1]] = *c + best;
        *c = best;
    }
}

/// The same loop over `iter()`.
#[strads::parallel_for(ordered)]
fn sweep(cells: &SparseArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cells {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

const N: usize = 24;

fn cells(shuffled: bool) -> SparseArray<f32, 2> {
    let mut entries: Vec<([usize; 2], f32)> = (0..N * N)
        .filter(|k| k % 3 != 1)
        .map(|k| ([k / N, k % N], ((k * 7919) % 101) as f32 / 10.0))
        .collect();
    if shuffled {
        // A fixed permutation: entries out of index order.
        entries.reverse();
        entries.swap(3, 40);
    }
    SparseArray::from_entries([N, N], entries).unwrap()
}

fn start() -> DistArray<f32, 2> {
    DistArray::from_fn([N + 1, N + 1], |[i, j]| {
        if i == 0 || j == 0 {
            (i + j) as f32
        } else {
            0.0
        }
    })
}

#[test]
fn ordered_loops_over_unsorted_entries_run_in_the_entries_order() {
    // The serial loop runs the entries in their stored order, and so does every plan: a
    // wavefront's tiles would order them by index, so the plan runs them on one worker.
    // Plans always run here (else the cost model would hand these calls to the serial
    // loop, which proves nothing).
    strads::testing::plan_always(unsorted_equals_serial);
}

fn unsorted_equals_serial() {
    let (mut want_xs, mut want_d) = (cells(true), start());
    serial(|| sweep_mut(&mut want_xs, &mut want_d));
    let mut want_d2 = start();
    serial(|| sweep(&cells(true), &mut want_d2));
    for threads in 1..=4 {
        let (mut xs, mut d) = (cells(true), start());
        let ((), trace) = strads::with_threads(threads, || {
            strads::testing::record(|| sweep_mut(&mut xs, &mut d))
        });
        assert_eq!(d.as_slice(), want_d.as_slice(), "{threads} threads");
        let (a, b): (Vec<f32>, Vec<f32>) = (
            xs.iter().map(|(_, &v)| v).collect(),
            want_xs.iter().map(|(_, &v)| v).collect(),
        );
        assert_eq!(a, b, "{threads} threads: the entries' values");
        assert!(
            trace.runs[0]
                .plan
                .contains("ordered over entries not in index order"),
            "{}",
            trace.runs[0].plan
        );
        let mut d2 = start();
        strads::with_threads(threads, || sweep(&cells(true), &mut d2));
        assert_eq!(
            d2.as_slice(),
            want_d2.as_slice(),
            "{threads} threads: iter()"
        );
    }
}

#[test]
fn ordered_iter_mut_over_sorted_entries_equals_serial() {
    let (mut want_xs, mut want_d) = (cells(false), start());
    serial(|| sweep_mut(&mut want_xs, &mut want_d));
    for threads in 1..=4 {
        let (mut xs, mut d) = (cells(false), start());
        strads::with_threads(threads, || sweep_mut(&mut xs, &mut d));
        assert_eq!(d.as_slice(), want_d.as_slice(), "{threads} threads");
        let (a, b): (Vec<f32>, Vec<f32>) = (
            xs.iter().map(|(_, &v)| v).collect(),
            want_xs.iter().map(|(_, &v)| v).collect(),
        );
        assert_eq!(a, b, "{threads} threads");
    }
}

#[test]
fn record_switches_off_after_a_panic() {
    let xs = cells(false);
    let mut d = start();
    let ((), outer) = record(|| {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            record(|| {
                strads::with_threads(2, || sweep(&xs, &mut d));
                panic!("the user's code panics inside record");
            })
        }));
        assert!(r.is_err());
    });
    // The inner `record` ended with its panic: the outer one records again, and saw
    // nothing of its own.
    assert!(outer.runs.is_empty(), "{} runs leaked", outer.runs.len());
    let ((), again) = record(|| strads::with_threads(2, || sweep(&xs, &mut d)));
    assert_eq!(again.runs.len(), 1);
}
