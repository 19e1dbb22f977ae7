//! `sync = "ssp(s)"` through the executor, against its definition written out from the
//! recorded order: worker `w`'s round `k` is its iterations `k * batch .. (k + 1) * batch`;
//! it starts from `B_{max(0, k - s)}` plus its own differences of the rounds since, in
//! round order; `B_{k + 1} = B_k + (the round's differences summed in the workers' tree
//! order) / workers`. Uneven tasks, workers with no iteration, and a staleness beyond the
//! rounds (which then all start from the first value).

use strads::prelude::*;
use strads::testing::{bits, plan_always, record};

/// Each iteration pulls one of 8 slots halfway to its own value: what a worker's round
/// starts from shows in its difference.
#[strads::parallel_for(sync = "ssp(2)", batch = 5)]
fn pull(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i % 8] = out[i % 8] * 0.5 + x[i];
    }
}

/// The same with a staleness beyond any call's rounds here.
#[strads::parallel_for(sync = "ssp(50)", batch = 5)]
fn pull_far(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i % 8] = out[i % 8] * 0.5 + x[i];
    }
}

/// The workers `lo..hi`'s differences of one element, summed as `tree.rs` sums them.
fn tree(d: &[f32], lo: usize, hi: usize) -> f32 {
    if hi - lo == 1 {
        return d[lo];
    }
    let mid = lo + (hi - lo) / 2;
    tree(d, lo, mid) + tree(d, mid, hi)
}

/// The definition, run on the recorded iterations of each worker.
fn by_definition(x: &[f32], init: &[f32], ids: &[Vec<usize>], s: usize, batch: usize) -> Vec<f32> {
    let p = ids.len();
    let rounds = ids
        .iter()
        .map(|l| l.len().div_ceil(batch))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut b = vec![init.to_vec()];
    let mut diffs: Vec<Vec<Vec<f32>>> = vec![Vec::new(); p];
    for k in 0..rounds {
        for w in 0..p {
            let from = k.saturating_sub(s);
            let mut c = b[from].clone();
            for d in &diffs[w][from..k] {
                c.iter_mut().zip(d).for_each(|(v, &d)| *v += d);
            }
            let start = c.clone();
            let mine = &ids[w];
            for &i in &mine[(k * batch).min(mine.len())..((k + 1) * batch).min(mine.len())] {
                c[i % 8] = c[i % 8] * 0.5 + x[i];
            }
            diffs[w].push(c.iter().zip(&start).map(|(&e, &s)| e - s).collect());
        }
        let next = (0..init.len())
            .map(|e| {
                let d: Vec<f32> = (0..p).map(|w| diffs[w][k][e]).collect();
                b[k][e] + tree(&d, 0, p) / p as f32
            })
            .collect();
        b.push(next);
    }
    b.pop().unwrap_or_default()
}

#[test]
fn runs_equal_the_definition_on_the_recorded_iterations() {
    let x = DistArray::<f32, 1>::from_fn([37], |[i]| (i as f32 * 0.37).sin());
    let init: Vec<f32> = (0..8).map(|k| k as f32).collect();
    for (threads, n) in [(2, 37), (3, 37), (4, 37), (4, 2), (3, 11)] {
        let x = DistArray::<f32, 1>::from_fn([n], |[i]| x[i % 37]);
        for (name, s) in [("pull", 2), ("pull_far", 50)] {
            let mut out = DistArray::from_fn([8], |[k]| init[k]);
            let ((), trace) = plan_always(|| {
                strads::with_threads(threads, || {
                    record(|| {
                        if s == 2 {
                            pull(&x, &mut out)
                        } else {
                            pull_far(&x, &mut out)
                        }
                    })
                })
            });
            let run = &trace.runs[0];
            assert_eq!(run.steps.len(), 1, "{name}: one step");
            let want = by_definition(x.as_slice(), &init, &run.steps[0], s, 5);
            let want = DistArray::from_fn([8], |[k]| want[k]);
            assert_eq!(
                bits(&out),
                bits(&want),
                "{name}, {threads} threads, {n} iterations (tasks {:?})",
                run.steps[0].iter().map(Vec::len).collect::<Vec<_>>()
            );
        }
    }
}
