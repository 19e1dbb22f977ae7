//! Task groups against brute force: in every batch, iterations placed on different workers
//! never touch a common element with a write; every iteration runs exactly once, in its
//! batch; owned elements are disjoint across workers and cover what each worker writes.

use proptest::prelude::*;
use strads_analysis::{Accesses, plan_groups};

type Touches = Vec<Vec<(u64, bool)>>;

fn touches() -> impl Strategy<Value = Touches> {
    prop::collection::vec(
        prop::collection::vec((0u64..12, prop::bool::weighted(0.4)), 0..5),
        0..30,
    )
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
            let mut ids: Vec<u32> = b.runs.iter().flatten().copied().collect();
            ids.sort_unstable();
            let expect: Vec<u32> = (next..next + ids.len() as u32).collect();
            prop_assert_eq!(&ids, &expect);
            next += ids.len() as u32;
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
}
