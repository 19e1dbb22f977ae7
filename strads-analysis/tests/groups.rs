//! Task groups against brute force: in every batch, iterations placed on different workers
//! never touch a common element with a write; every iteration runs exactly once, in its
//! batch; owned elements are disjoint across workers and cover what each worker writes.
//! Split components: pieces that may run at once (no path of `after` links between them)
//! never conflict, nor with any worker's groups; each worker's pieces rise in level, and
//! pieces of one level never conflict, so the replay order (levels, then groups) is a serial
//! order equal to every run.

use proptest::prelude::*;
use strads_analysis::{Accesses, plan_groups};

type Touches = Vec<Vec<(u64, bool)>>;

fn touches() -> impl Strategy<Value = Touches> {
    prop::collection::vec(
        prop::collection::vec((0u64..12, prop::bool::weighted(0.4)), 0..5),
        0..30,
    )
}

/// Checks that batch `b` runs exactly the iterations `next..` once each (in groups or
/// pieces); the first iteration of the next batch.
fn next_batch(b: &strads_analysis::Batch, next: u32) -> Result<u32, TestCaseError> {
    let mut ids: Vec<u32> = b.runs.iter().flatten().copied().collect();
    ids.extend(b.pieces.iter().flat_map(|pc| pc.iters.iter().copied()));
    ids.sort_unstable();
    let expect: Vec<u32> = (next..next + ids.len() as u32).collect();
    prop_assert_eq!(&ids, &expect);
    Ok(next + ids.len() as u32)
}

fn conflict(a: &[(u64, bool)], b: &[(u64, bool)]) -> bool {
    a.iter()
        .any(|&(e, w)| b.iter().any(|&(f, v)| e == f && (w || v)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn groups_are_sound(t in touches(), workers in 1usize..=4, batch in 1usize..=32) {
        let mut acc = Accesses::new();
        for it in &t {
            for &(e, w) in it {
                acc.touch(e, w);
            }
            acc.end_iteration();
        }
        let plan = plan_groups(&acc, 12, workers, batch);
        let mut next = 0u32;
        for b in &plan.batches {
            prop_assert_eq!(b.runs.len(), workers);
            // Iterations of this batch: exactly the next consecutive ones.
            next = next_batch(b, next)?;
            // Different workers never conflict.
            for w1 in 0..workers {
                for w2 in w1 + 1..workers {
                    for &i in &b.runs[w1] {
                        for &j in &b.runs[w2] {
                            prop_assert!(!conflict(&t[i as usize], &t[j as usize]), "{} on {} and {} on {}", i, w1, j, w2);
                        }
                    }
                }
            }
            // Ownership: disjoint, and covers every element a worker writes.
            for w1 in 0..workers {
                for &e in &b.owned[w1] {
                    for w2 in w1 + 1..workers {
                        prop_assert!(!b.owned[w2].contains(&e));
                    }
                }
                for &i in &b.runs[w1] {
                    for &(e, w) in &t[i as usize] {
                        if w {
                            prop_assert!(b.owned[w1].contains(&e));
                        }
                    }
                }
            }
        }
        prop_assert_eq!(next as usize, t.len());
    }

    #[test]
    fn split_components_are_sound(
        t in local_touches(),
        workers in 2usize..=4,
        batch in 64usize..=400,
    ) {
        let mut acc = Accesses::new();
        for it in &t {
            for &(e, w) in it {
                acc.touch(e, w);
            }
            acc.end_iteration();
        }
        let plan = plan_groups(&acc, ELEMS, workers, batch);
        let mut next = 0u32;
        for b in &plan.batches {
            next = next_batch(b, next)?;
            let n = b.pieces.len();
            // reach[a][c]: piece c runs after piece a is done (through `after` links).
            let mut reach = vec![vec![false; n]; n];
            for (c, pc) in b.pieces.iter().enumerate() {
                for &a in &pc.after {
                    prop_assert!((a as usize) < c);
                    prop_assert!(b.pieces[a as usize].level < pc.level);
                    reach[a as usize][c] = true;
                    for row in reach.iter_mut() {
                        if row[a as usize] {
                            row[c] = true;
                        }
                    }
                }
            }
            let touches = |pc: &strads_analysis::Piece| -> Vec<(u64, bool)> {
                pc.iters.iter().flat_map(|&i| t[i as usize].iter().copied()).collect()
            };
            for (c, pc) in b.pieces.iter().enumerate() {
                for (d, pd) in b.pieces.iter().enumerate().skip(c + 1) {
                    if pc.worker == pd.worker {
                        prop_assert!(pc.level < pd.level);
                        continue;
                    }
                    if conflict(&touches(pc), &touches(pd)) {
                        prop_assert!(reach[c][d], "pieces {} and {} conflict but may overlap", c, d);
                        prop_assert!(pc.level != pd.level);
                    }
                }
                for w in 0..workers {
                    for &j in &b.runs[w] {
                        prop_assert!(!conflict(&touches(pc), &t[j as usize]));
                    }
                }
                // A piece lists every element it writes; nobody owns them.
                for &(e, w) in &touches(pc) {
                    if w {
                        prop_assert!(pc.elems.contains(&e) && b.shared.contains(&e));
                        prop_assert!(b.owned.iter().all(|o| !o.contains(&e)));
                    }
                }
            }
            for w1 in 0..workers {
                for w2 in w1 + 1..workers {
                    for &i in &b.runs[w1] {
                        for &j in &b.runs[w2] {
                            prop_assert!(!conflict(&t[i as usize], &t[j as usize]));
                        }
                    }
                }
            }
        }
        prop_assert_eq!(next as usize, t.len());
    }
}

const ELEMS: u64 = 64;

/// Iterations touching elements near a point that drifts with the iteration: long chains
/// (one component per batch, split well) mixed with a hot element now and then.
fn local_touches() -> impl Strategy<Value = Touches> {
    (100usize..400, prop::bool::weighted(0.3)).prop_flat_map(|(n, hot)| {
        prop::collection::vec(
            prop::collection::vec((0u64..4, prop::bool::weighted(0.7)), 1..4),
            n,
        )
        .prop_map(move |its| {
            let n = its.len() as u64;
            its.into_iter()
                .enumerate()
                .map(|(i, it)| {
                    let centre = i as u64 * (ELEMS - 8) / n;
                    let mut v: Vec<(u64, bool)> =
                        it.into_iter().map(|(d, w)| (centre + d, w)).collect();
                    if hot && i % 7 == 0 {
                        v.push((ELEMS - 1, true));
                    }
                    v
                })
                .collect()
        })
    })
}

/// The property above is only worth something if the generator makes splits: most of its
/// cases must split at least one component.
#[test]
fn local_cases_split() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut split = 0;
    for _ in 0..200 {
        let t = local_touches().new_tree(&mut runner).unwrap().current();
        let mut acc = Accesses::new();
        for it in &t {
            for &(e, w) in it {
                acc.touch(e, w);
            }
            acc.end_iteration();
        }
        let plan = plan_groups(&acc, ELEMS, 2, 400);
        if plan.batches.iter().any(|b| b.split > 0) {
            split += 1;
        }
    }
    assert!(split >= 100, "only {split} of 200 cases split");
}
