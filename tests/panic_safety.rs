//! Refusals that leave the caller's data whole, and test modes that switch off again:
//! an ordered loop over the `iter_mut()` of unsorted entries refuses as the same loop over
//! `iter()` does, and its values stay in the array; `testing::record` ends with a panic.

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

fn message(r: std::thread::Result<()>) -> String {
    let e = r.expect_err("the call must refuse");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn ordered_iter_mut_over_unsorted_entries_refuses_and_keeps_the_values() {
    // On one worker a call runs the original loop (the cost model), which iterates the
    // entries in their stored order, as the program says: nothing to refuse. Plans always
    // run here: measured times could send these small calls to the serial loop.
    strads::testing::plan_always(refuses_unsorted);
}

fn refuses_unsorted() {
    for threads in 2..=4 {
        let mut xs = cells(true);
        let before: Vec<f32> = xs.iter().map(|(_, &v)| v).collect();
        let mut d = start();
        let got = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || strads::with_threads(threads, || sweep_mut(&mut xs, &mut d)),
        )));
        let xs_ref = cells(true);
        let mut d2 = start();
        let want = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || strads::with_threads(threads, || sweep(&xs_ref, &mut d2)),
        )));
        assert_eq!(
            got.replace("sweep_mut", "sweep"),
            want,
            "{threads} threads: iter_mut() refuses as iter() does"
        );
        assert!(want.contains("not in index order; sort it first"), "{want}");
        let after: Vec<f32> = xs.iter().map(|(_, &v)| v).collect();
        assert_eq!(
            after, before,
            "{threads} threads: the values stay in the array"
        );
        assert_eq!(xs.nnz(), before.len());
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
