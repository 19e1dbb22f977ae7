//! Loops over `a.iter_mut()`: every entry's value belongs to its iteration, so updating it
//! adds no dependence. A Gibbs-style reassignment of per-entry topics (doc counts local,
//! word counts rotated in 2D, topic totals in a buffer) equals the replay of its recorded
//! order, keeps every count consistent, and on one worker equals the original loop.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

#[strads::parallel_for(buffer(nk), expect = "2d")]
fn reassign(
    tokens: &mut SparseArray<Vec<u16>, 2>,
    ndk: &mut DistArray<i32, 2>,
    nwk: &mut DistArray<i32, 2>,
    nk: &mut DistArray<i32, 1>,
    k: usize,
    seed: u64,
) {
    for ([d, w], zs) in tokens.iter_mut() {
        let mut rng = IterRng::new(seed, &[d as u64, w as u64]);
        for z in zs.iter_mut() {
            let old = *z as usize;
            ndk[[d, old]] -= 1;
            nwk[[w, old]] -= 1;
            nk[old] -= 1;
            // Prefer topics this document already uses.
            let new = if rng.next_f32() < 0.5 && ndk[[d, old]] > 0 {
                old
            } else {
                rng.below(k)
            };
            *z = new as u16;
            ndk[[d, new]] += 1;
            nwk[[w, new]] += 1;
            nk[new] += 1;
        }
    }
}

const K: usize = 5;

fn corpus() -> (
    SparseArray<Vec<u16>, 2>,
    DistArray<i32, 2>,
    DistArray<i32, 2>,
    DistArray<i32, 1>,
) {
    let (docs, words) = (30, 40);
    let r = DistArray::<f64, 1>::random([docs * words], 3);
    let mut entries = Vec::new();
    for d in 0..docs {
        for w in 0..words {
            let x = r[d * words + w];
            if x < 0.3 {
                let n = 1 + (x * 10.0) as usize;
                entries.push((
                    [d, w],
                    (0..n)
                        .map(|j| ((d + w + j) % K) as u16)
                        .collect::<Vec<u16>>(),
                ));
            }
        }
    }
    let tokens = SparseArray::from_entries([docs, words], entries).unwrap();
    let (mut ndk, mut nwk, mut nk) = (
        DistArray::zeros([docs, K]),
        DistArray::zeros([words, K]),
        DistArray::zeros([K]),
    );
    for ([d, w], zs) in &tokens {
        for &z in zs {
            ndk[[d, z as usize]] += 1;
            nwk[[w, z as usize]] += 1;
            nk[z as usize] += 1;
        }
    }
    (tokens, ndk, nwk, nk)
}

fn consistent(
    tokens: &SparseArray<Vec<u16>, 2>,
    ndk: &DistArray<i32, 2>,
    nwk: &DistArray<i32, 2>,
    nk: &DistArray<i32, 1>,
) {
    let (_, a, b, c) = {
        let mut ndk2 = DistArray::<i32, 2>::zeros(ndk.shape());
        let mut nwk2 = DistArray::<i32, 2>::zeros(nwk.shape());
        let mut nk2 = DistArray::<i32, 1>::zeros(nk.shape());
        for ([d, w], zs) in tokens {
            for &z in zs {
                ndk2[[d, z as usize]] += 1;
                nwk2[[w, z as usize]] += 1;
                nk2[z as usize] += 1;
            }
        }
        ((), ndk2, nwk2, nk2)
    };
    assert_eq!(&a, ndk);
    assert_eq!(&b, nwk);
    assert_eq!(&c, nk);
}

#[test]
fn iter_mut_loop_equals_replay_and_keeps_counts() {
    for threads in 1..=4 {
        let (mut tokens, mut ndk, mut nwk, mut nk) = corpus();
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for sweep in 0..3 {
                    reassign(&mut tokens, &mut ndk, &mut nwk, &mut nk, K, sweep);
                }
            })
        });
        consistent(&tokens, &ndk, &nwk, &nk);
        let plan = &trace.runs[0].plan;
        assert!(plan.starts_with("2d "), "{plan}");
        assert!(plan.ends_with(" buffered=nk"), "{plan}");
        let (mut t2, mut ndk2, mut nwk2, mut nk2) = corpus();
        replay(&trace, || {
            for sweep in 0..3 {
                reassign(&mut t2, &mut ndk2, &mut nwk2, &mut nk2, K, sweep);
            }
        });
        assert_eq!(tokens.values(), t2.values(), "{threads} threads");
        assert_eq!(
            (ndk.clone(), nwk.clone(), nk.clone()),
            (ndk2, nwk2, nk2),
            "{threads} threads"
        );
        if threads == 1 {
            let (mut t3, mut ndk3, mut nwk3, mut nk3) = corpus();
            serial(|| {
                for sweep in 0..3 {
                    reassign(&mut t3, &mut ndk3, &mut nwk3, &mut nk3, K, sweep);
                }
            });
            assert_eq!(tokens.values(), t3.values());
        }
    }
}

/// Sweeps with serial code between them that reads the values, writes one, or leaves them
/// alone: a call takes the values as the last one left them (in its own order) only when
/// nothing read them since. Every way gives the values of the same sweeps with a read
/// after each (which puts them in entry order every time), of the replay of the recorded
/// order, and on one worker of the serial loop.
#[test]
fn values_kept_in_a_calls_order_between_calls_equal_those_read_after_every_call() {
    let run = |mode: &Mode<'_>, read_always: bool| {
        let (mut tokens, mut ndk, mut nwk, mut nk) = corpus();
        let mut seen = Vec::new();
        let mut sweeps = |tokens: &mut SparseArray<Vec<u16>, 2>| {
            for sweep in 0..6 {
                reassign(tokens, &mut ndk, &mut nwk, &mut nk, K, sweep);
                if read_always {
                    assert_eq!(tokens.values().len(), tokens.nnz());
                }
                match sweep % 3 {
                    // A read: the values in entry order.
                    0 => seen.push(tokens.entry(7).1.clone()),
                    // A write: the next sweep sees it.
                    1 => {
                        let ([d, w], zs) = tokens.entry_mut(3);
                        let z = zs[0] as usize;
                        let next = (z + 1) % K;
                        zs[0] = next as u16;
                        ndk[[d, z]] -= 1;
                        ndk[[d, next]] += 1;
                        nwk[[w, z]] -= 1;
                        nwk[[w, next]] += 1;
                        nk[z] -= 1;
                        nk[next] += 1;
                    }
                    // Nothing: the next sweep takes them in this one's order.
                    _ => {}
                }
            }
        };
        let trace = match mode {
            Mode::Serial => {
                serial(|| sweeps(&mut tokens));
                None
            }
            Mode::Threads(n) => Some(strads::with_threads(*n, || record(|| sweeps(&mut tokens))).1),
            Mode::Replay(trace) => {
                replay(trace, || sweeps(&mut tokens));
                None
            }
        };
        consistent(&tokens, &ndk, &nwk, &nk);
        ((tokens.values().to_vec(), seen), trace)
    };
    let (alone, _) = run(&Mode::Serial, false);
    assert_eq!(alone.1.len(), 2);
    for threads in [1, 2, 3] {
        let (got, trace) = run(&Mode::Threads(threads), false);
        let trace = trace.expect("recorded");
        assert_eq!(trace.runs.len(), 6);
        assert!(trace.runs.iter().all(|r| r.plan.starts_with("2d ")));
        if threads == 1 {
            assert_eq!(got, alone, "one worker runs the serial order");
        }
        let (read_always, _) = run(&Mode::Threads(threads), true);
        assert_eq!(got, read_always, "{threads} threads, read after every call");
        let (replayed, _) = run(&Mode::Replay(&trace), false);
        assert_eq!(got, replayed, "{threads} threads, replayed");
    }
}

enum Mode<'t> {
    Serial,
    Threads(usize),
    Replay(&'t strads::testing::Trace),
}

/// Sums each row's values: a loop that reads the entries (and so holds them bucketed by
/// its plan's blocks).
#[strads::parallel_for(expect = "1d")]
fn row_sums(a: &SparseArray<f32, 2>, sums: &mut DistArray<f32, 1>) {
    for ([i, _], &v) in a {
        sums[i] += v;
    }
}

#[test]
fn a_loop_over_the_entries_sees_values_changed_since_its_last_call() {
    let mut a = SparseArray::from_entries(
        [8, 8],
        (0..40).map(|e| ([e % 8, e / 5], e as f32)).collect(),
    )
    .expect("entries");
    let expected = |a: &SparseArray<f32, 2>| {
        let mut s = vec![0.0f32; 8];
        for ([i, _], &v) in a {
            s[i] += v;
        }
        s
    };
    let ((), trace) = strads::with_threads(2, || {
        record(|| {
            let mut sums = DistArray::<f32, 1>::zeros([8]);
            row_sums(&a, &mut sums);
            assert_eq!(sums.as_slice(), &expected(&a)[..]);
            // Serial code changes every value; the next call must read the new ones, not
            // the entries its first call bucketed.
            for (_, v) in a.iter_mut() {
                *v *= 2.0;
            }
            let mut sums = DistArray::<f32, 1>::zeros([8]);
            row_sums(&a, &mut sums);
            assert_eq!(sums.as_slice(), &expected(&a)[..], "stale values");
        })
    });
    assert!(
        trace.runs.iter().all(|r| r.plan.starts_with("1d ")),
        "{:?}",
        trace.runs[0].plan
    );
}
