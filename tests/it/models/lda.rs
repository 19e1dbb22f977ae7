//! End to end: LDA by collapsed Gibbs sampling (the loop of `examples/lda/model.rs`) over
//! `tokens.iter_mut()`, with document-topic counts local, word-topic counts rotated in 2D
//! and topic totals in a write-back buffer. On a small generated corpus: every parallel run
//! equals the serial replay of its recorded order bit for bit, one worker equals the
//! original loop, the counts stay consistent with the assignments after every sweep, and
//! the log-likelihood improves.

use strads::corpus::{self, Corpus};
use strads::prelude::*;
use strads::testing::{record, replay, serial};

/// The example's loops, compiled here as they are there.
#[path = "../../../examples/lda/model.rs"]
mod model;
use model::{draw_topics, gibbs, ln_gamma};

/// The collapsed joint log-likelihood `log p(w, z)`, serially.
fn log_likelihood(s: &State, alpha: f64, beta: f64) -> f64 {
    let [docs, topics] = s.ndk.shape();
    let words = s.nwk.shape()[0];
    let (k, v) = (topics as f64, words as f64);
    let mut ll = docs as f64 * (ln_gamma(k * alpha) - k * ln_gamma(alpha))
        + k * (ln_gamma(v * beta) - v * ln_gamma(beta));
    for d in 0..docs {
        let row = s.ndk.row(d);
        ll += row
            .iter()
            .map(|&c| ln_gamma(f64::from(c) + alpha))
            .sum::<f64>();
        ll -= ln_gamma(f64::from(row.iter().sum::<i32>()) + k * alpha);
    }
    ll += s
        .nwk
        .as_slice()
        .iter()
        .map(|&c| ln_gamma(f64::from(c) + beta))
        .sum::<f64>();
    ll -=
        s.nk.as_slice()
            .iter()
            .map(|&c| ln_gamma(f64::from(c) + v * beta))
            .sum::<f64>();
    ll
}

const TOPICS: usize = 5;
const ALPHA: f64 = 0.5;
const BETA: f64 = 0.05;
const SEED: u64 = 11;

struct State {
    tokens: SparseArray<Vec<u16>, 2>,
    ndk: DistArray<i32, 2>,
    nwk: DistArray<i32, 2>,
    nk: DistArray<i32, 1>,
}

impl State {
    /// Random initial topics (keyed by entry) and the counts that go with them.
    fn new(c: &Corpus) -> State {
        let entries = c
            .counts
            .iter()
            .map(|([d, w], &n)| {
                let mut rng = IterRng::new(SEED, &[u64::MAX, d as u64, w as u64]);
                ([d, w], (0..n).map(|_| rng.below(TOPICS) as u16).collect())
            })
            .collect();
        let tokens = SparseArray::from_entries([c.docs, c.words], entries).unwrap();
        let (ndk, nwk, nk) = recount(&tokens, c.docs, c.words);
        State {
            tokens,
            ndk,
            nwk,
            nk,
        }
    }

    fn sweep(&mut self, iteration: u64) {
        gibbs(
            &mut self.tokens,
            &mut self.ndk,
            &mut self.nwk,
            &mut self.nk,
            ALPHA,
            BETA,
            SEED,
            iteration,
        );
    }

    /// Everything, to compare runs bit for bit.
    fn snapshot(&self) -> (Vec<Vec<u16>>, Vec<i32>, Vec<i32>, Vec<i32>) {
        (
            self.tokens.values().to_vec(),
            self.ndk.as_slice().to_vec(),
            self.nwk.as_slice().to_vec(),
            self.nk.as_slice().to_vec(),
        )
    }
}

/// The counts of the assignments in `tokens`.
fn recount(
    tokens: &SparseArray<Vec<u16>, 2>,
    docs: usize,
    words: usize,
) -> (DistArray<i32, 2>, DistArray<i32, 2>, DistArray<i32, 1>) {
    let mut ndk = DistArray::zeros([docs, TOPICS]);
    let mut nwk = DistArray::zeros([words, TOPICS]);
    let mut nk = DistArray::zeros([TOPICS]);
    for ([d, w], zs) in tokens {
        for &z in zs {
            ndk[[d, z as usize]] += 1;
            nwk[[w, z as usize]] += 1;
            nk[z as usize] += 1;
        }
    }
    (ndk, nwk, nk)
}

fn small() -> Corpus {
    corpus::generated(60, 150, TOPICS, 30.0, 5)
}

#[test]
fn parallel_sweeps_equal_the_replay_of_their_order() {
    let c = small();
    for threads in 1..=4 {
        let mut s = State::new(&c);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for it in 1..=3 {
                    s.sweep(it);
                }
            })
        });
        let mut r = State::new(&c);
        replay(&trace, || {
            for it in 1..=3 {
                r.sweep(it);
            }
        });
        assert!(s.snapshot() == r.snapshot(), "{threads} threads");
        assert_ne!(s.snapshot().0, State::new(&c).snapshot().0, "topics moved");
        if threads == 1 {
            let mut o = State::new(&c);
            serial(|| {
                for it in 1..=3 {
                    o.sweep(it);
                }
            });
            assert!(
                s.snapshot() == o.snapshot(),
                "one worker runs the original loop"
            );
        }
    }
}

/// The example's start, drawn by its parallel loop over lists made from the counts
/// (`SparseArray::repeated`), is the serial start (each entry's topics keyed by the entry,
/// the counts integers) on every worker count.
#[test]
fn the_start_drawn_in_parallel_is_the_serial_start() {
    let c = small();
    let want = State::new(&c).snapshot();
    for threads in 1..=4 {
        let mut s = State {
            tokens: SparseArray::repeated(&c.counts, 0u16).expect("lists"),
            ndk: DistArray::zeros([c.docs, TOPICS]),
            nwk: DistArray::zeros([c.words, TOPICS]),
            nk: DistArray::zeros([TOPICS]),
        };
        strads::with_threads(threads, || {
            draw_topics(&mut s.tokens, &mut s.ndk, &mut s.nwk, &mut s.nk, SEED)
        });
        assert!(s.snapshot() == want, "{threads} threads");
    }
}

#[test]
fn counts_stay_consistent_after_every_sweep() {
    let c = small();
    let n = c.tokens() as i64;
    for threads in [1, 2, 3] {
        let mut s = State::new(&c);
        strads::with_threads(threads, || {
            for it in 1..=4 {
                s.sweep(it);
                let sum = |a: &[i32]| a.iter().map(|&x| i64::from(x)).sum::<i64>();
                assert_eq!(sum(s.ndk.as_slice()), n, "{threads} threads, sweep {it}");
                assert_eq!(sum(s.nwk.as_slice()), n, "{threads} threads, sweep {it}");
                assert_eq!(sum(s.nk.as_slice()), n, "{threads} threads, sweep {it}");
                // Stronger: every count is exactly the count of the assignments.
                let (ndk, nwk, nk) = recount(&s.tokens, c.docs, c.words);
                assert_eq!(s.ndk, ndk, "{threads} threads, sweep {it}");
                assert_eq!(s.nwk, nwk, "{threads} threads, sweep {it}");
                assert_eq!(s.nk, nk, "{threads} threads, sweep {it}");
                assert!(
                    s.tokens
                        .values()
                        .iter()
                        .flatten()
                        .all(|&z| (z as usize) < TOPICS)
                );
            }
        });
    }
}

#[test]
fn log_likelihood_improves() {
    let c = small();
    for threads in [1, 2] {
        let mut s = State::new(&c);
        let start = log_likelihood(&s, ALPHA, BETA);
        let mut lls = Vec::new();
        strads::with_threads(threads, || {
            for it in 1..=8 {
                s.sweep(it);
                lls.push(log_likelihood(&s, ALPHA, BETA));
            }
        });
        assert!(lls.iter().all(|ll| ll.is_finite()));
        // Gibbs sampling is noisy sweep by sweep, but from a random start it climbs.
        assert!(lls[0] > start, "{threads} threads: {start} -> {lls:?}");
        assert!(lls[7] > lls[0], "{threads} threads: {lls:?}");
    }
}

#[test]
fn ln_gamma_matches_known_values() {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    assert!(close(ln_gamma(1.0), 0.0));
    assert!(close(ln_gamma(2.0), 0.0));
    assert!(close(ln_gamma(0.5), 0.572_364_942_924_700_4));
    assert!(close(ln_gamma(10.0), 12.801_827_480_081_467));
    assert!(close(ln_gamma(0.01), 4.599_479_878_042_022));
    assert!(close(ln_gamma(1000.5), 5_908.674_175_848_678));
}
