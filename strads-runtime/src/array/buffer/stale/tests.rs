//! `stale.rs`' unit tests: the phases against the definition written out, on processes
//! as threads.

use super::super::fake::{Fake, Hub, each};
use super::*;
use crate::array::DistArray;
use crate::sync::Peers;

/// What worker `w` does to its replica in round `k`: a few elements move towards
/// values of their own, so what a worker starts from shows in its difference.
fn step(w: usize, k: usize, c: &mut [f32]) {
    // A hundred elements spread over the array, so that rounds and workers meet on them,
    // and the last (in a short last chunk, for some lengths).
    let stride = (c.len() / 100).max(1);
    for j in 0..24 {
        let e = (w * 31 + k * 17 + j * 7) % 100 * stride;
        c[e] = c[e] * 0.5 + (w + 2 * k) as f32 + 0.1 * j as f32;
    }
    let last = c.len() - 1;
    c[last] += (w * 3 + k) as f32;
}

/// `rounds` rounds of `workers` workers under `ssp(s)`, the phases in the order a
/// serialized replay takes (a valid order of `exec/ahead.rs`), on `ranks` processes
/// of `workers / ranks` workers each: every process's final bits, and its rounds (all
/// to all, exchanges).
fn ahead(
    len: usize,
    s: usize,
    rounds: usize,
    ranks: usize,
    workers: usize,
) -> Vec<(Vec<u32>, (u64, u64))> {
    let init = DistArray::<f32, 1>::from_fn([len], |[i]| i as f32 * 0.25);
    let run = |peers: Option<&Fake<'_>>| {
        let mut a = init.clone();
        let b = Buffered::new(&mut a, workers).averaged();
        let dyn_peers = peers.map(|p| p as &dyn Peers);
        let local = peers.map_or(0..workers, |p| p.local());
        let at = |phase| Parked::at(7, dyn_peers, phase);
        for r in 0..rounds {
            for w in local.clone() {
                if r > 0 {
                    b.apply(&at(Phase::Rebuild {
                        worker: w,
                        round: r,
                        stale: s,
                    }));
                }
                b.with(w, |c| step(w, r, c.as_mut_slice()));
                b.apply(&at(Phase::Publish {
                    worker: w,
                    round: r,
                    stale: s,
                }));
            }
            if r >= s {
                b.apply(&at(Phase::MergeRound {
                    round: r - s,
                    stale: s,
                }));
            }
        }
        for m in rounds.saturating_sub(s)..rounds {
            b.apply(&at(Phase::MergeRound { round: m, stale: s }));
        }
        // Only this process's workers' copies were made: the others' differences crossed
        // into the merges without a slot here.
        let made: Vec<bool> = b.copies.iter().map(|c| c.made.is_completed()).collect();
        let expected: Vec<bool> = (0..workers).map(|w| local.contains(&w)).collect();
        assert_eq!(
            made, expected,
            "copies made, {local:?} of {workers} workers"
        );
        b.finish();
        a.as_slice()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<u32>>()
    };
    if ranks == 1 {
        return vec![(run(None), (0, 0))];
    }
    let hub = Hub::default();
    let fakes = hub.processes(ranks, workers / ranks);
    let bits: Vec<Vec<u32>> = each(&fakes, |f| run(Some(f)));
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    bits.into_iter()
        .zip(&fakes)
        .map(|(b, f)| (b, (load(&f.all_to_all), load(&f.exchanges))))
        .collect()
}

/// The definition, written out: `B_{m + 1} = B_m + (tree sum of the round's
/// differences) / n`; a worker starts round `k` from `B_{max(0, k - s)}` plus its own
/// differences since, in round order.
fn by_definition(len: usize, s: usize, rounds: usize, workers: usize) -> Vec<u32> {
    let mut b: Vec<Vec<f32>> = vec![(0..len).map(|i| i as f32 * 0.25).collect()];
    let mut diffs: Vec<Vec<Vec<f32>>> = vec![Vec::new(); workers];
    for k in 0..rounds {
        for (w, own) in diffs.iter_mut().enumerate() {
            let from = k.saturating_sub(s);
            let mut c = b[from].clone();
            for d in &own[from..k] {
                c.iter_mut().zip(d).for_each(|(x, &d)| *x += d);
            }
            let start = c.clone();
            step(w, k, &mut c);
            own.push(c.iter().zip(&start).map(|(&e, &s)| e - s).collect());
        }
        // The tree's order, written out: `(lo..mid) + (mid..hi)`, halving.
        fn tree(d: &dyn Fn(usize) -> f32, lo: usize, hi: usize) -> f32 {
            if hi - lo == 1 {
                return d(lo);
            }
            let mid = lo + (hi - lo) / 2;
            tree(d, lo, mid) + tree(d, mid, hi)
        }
        let next = (0..len)
            .map(|e| b[k][e] + tree(&|w| diffs[w][k][e], 0, workers) / workers as f32)
            .collect();
        b.push(next);
    }
    b[rounds].iter().map(|x| x.to_bits()).collect()
}

#[test]
fn every_layout_reaches_the_definitions_bits() {
    // 1000 f32 merge all to all across processes, one exchange a round; 20,000 (80 KB)
    // and 16,500 (65 chunks of 256, the last short) by reduce-scatter and all-gather,
    // two. Layouts whose processes' workers are nodes of the merge's tree (2 x 2), are
    // not (3 x 2: workers 0..2 and 2..4 are not nodes, 4..6 is), or are single.
    for (len, per_round) in [(1000, (1, 0)), (20_000, (0, 2)), (16_500, (0, 2))] {
        for s in 1..=3 {
            for (ranks, workers) in [
                (1, 2),
                (2, 2),
                (1, 3),
                (3, 3),
                (1, 4),
                (2, 4),
                (4, 4),
                (3, 6),
            ] {
                let want = by_definition(len, s, 6, workers);
                for (r, (got, rounds)) in ahead(len, s, 6, ranks, workers).iter().enumerate() {
                    assert!(
                        *got == want,
                        "ssp({s}), {len} elements, process {r} of {ranks}, {workers} workers"
                    );
                    if ranks > 1 {
                        assert_eq!(*rounds, (6 * per_round.0, 6 * per_round.1), "{len}");
                    }
                }
            }
        }
    }
    // Staleness shows: ssp(1) and ssp(2) end elsewhere.
    assert!(by_definition(1000, 1, 6, 2) != by_definition(1000, 2, 6, 2));
}

#[test]
fn changed_rows_cross_as_differences() {
    // A 2-D array: rows changed in the round cross; fewer rounds than the staleness.
    let init = DistArray::<f32, 2>::zeros([50, 4]);
    let hub = Hub::default();
    let fakes = hub.processes(2, 1);
    let sums: Vec<Vec<f32>> = each(&fakes, |f| {
        let mut a = init.clone();
        let b = Buffered::new(&mut a, 2).averaged();
        let w = f.local().start;
        let at = |phase| Parked::at(9, Some(f as &dyn Peers), phase);
        b.with(w, |c| c.as_mut_slice()[4 * (w + 1)] = 2.0 * (w + 1) as f32);
        b.apply(&at(Phase::Publish {
            worker: w,
            round: 0,
            stale: 3,
        }));
        b.apply(&at(Phase::MergeRound { round: 0, stale: 3 }));
        b.finish();
        a.as_slice().to_vec()
    });
    for got in &sums {
        assert_eq!((got[4], got[8], got.iter().sum::<f32>()), (1.0, 2.0, 3.0));
    }
    // One changed row of 4 f32 and a map of 50 rows: 7 + 16 bytes.
    for f in &fakes {
        assert_eq!(f.sent.load(std::sync::atomic::Ordering::Relaxed), 7 + 16);
    }
}

#[test]
fn a_phase_refuses_a_copy_that_buffered_with_holds() {
    // Buffered::with on a worker's copy (a worker without a task holds no view, so `with`
    // may reach its copy): the run-ahead's phases on that copy stop instead of racing it.
    let mut a = DistArray::<f32, 1>::zeros([64]);
    let b = Buffered::new(&mut a, 2).averaged();
    let at = |phase| Parked::at(3, None, phase);
    for phase in [
        Phase::Publish {
            worker: 1,
            round: 0,
            stale: 1,
        },
        Phase::Rebuild {
            worker: 1,
            round: 1,
            stale: 1,
        },
    ] {
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            b.with(1, |_| b.apply(&at(phase)))
        }));
        let message = got
            .err()
            .and_then(|e| e.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(
            message.contains("applied while Buffered::with ran on worker 1's copy"),
            "{phase:?}: {message}"
        );
    }
    // Without `with`, the same phases run.
    b.apply(&at(Phase::Publish {
        worker: 1,
        round: 0,
        stale: 1,
    }));
}
