//! Exact schedules for small cases of every strategy.

use std::borrow::Cow;

use strads_analysis::{
    Access, AccessKind, ArraySpec, Batch, GroupPlan, LoopSpec, Name, Partition, Piece, SpaceKind,
    Strategy, Subscript, analyze,
};

use super::*;

pub(crate) fn array(name: &'static str, rank: usize, mutable: bool) -> ArraySpec {
    ArraySpec {
        name: Cow::Borrowed(name),
        rank,
        mutable,
        additive: false,
        steers: false,
    }
}

pub(crate) fn access(array: usize, write: bool, subs: Vec<Subscript>) -> Access {
    Access {
        array,
        kind: if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        },
        subscripts: subs.into(),
        line: 0,
    }
}

pub(crate) fn aff(coeffs: &[i64], constant: i64) -> Subscript {
    Subscript::Affine(strads_analysis::Affine {
        coeffs: coeffs.to_vec().into(),
        constant,
    })
}

pub(crate) fn spec(
    dims: &[&'static str],
    arrays: Vec<ArraySpec>,
    accesses: Vec<Access>,
    ordered: bool,
) -> LoopSpec {
    LoopSpec {
        name: Cow::Borrowed("t"),
        dims: dims
            .iter()
            .map(|d| Name::Borrowed(d))
            .collect::<Vec<_>>()
            .into(),
        space: SpaceKind::Range,
        arrays: arrays.into(),
        accesses: accesses.into(),
        ordered,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    }
}

fn task(unit: Unit, windows: usize, after: Vec<(usize, usize)>) -> Option<Task> {
    Some(Task {
        unit,
        windows,
        after,
        claim: None,
    })
}

fn range(lo: usize, hi: usize) -> Window {
    Window::Range {
        axis: 0,
        lo,
        hi,
        writable: true,
    }
}

#[test]
fn one_d_runs_p_blocks_side_by_side() {
    // for i in 0..6 { a[i] += 1 }
    let s = spec(
        &["i"],
        vec![array("a", 1, true)],
        vec![
            access(0, false, vec![aff(&[1], 0)]),
            access(0, true, vec![aff(&[1], 0)]),
        ],
        false,
    );
    let an = analyze(&s);
    let c = &an.candidates[0];
    assert_eq!(c.strategy, Strategy::OneD { dim: 0 });
    let sched = grid::schedule(&s, c, &[Partition::uniform(6, 3)], &[&[6]], 3);
    assert_eq!(
        sched,
        Schedule {
            workers: 3,
            steps: vec![Step {
                tasks: (0..3).map(|w| task(Unit::Block(w), w, vec![])).collect(),
                applies: true,
                ..Step::default()
            }],
            windows: vec![vec![range(0, 2)], vec![range(2, 4)], vec![range(4, 6)]],
            lists: vec![],
            handoffs: vec![],
            apply: None,
        }
    );
    assert_eq!(sched.concurrent_pairs().len(), 3);
    assert_eq!(sched.overlap(&[&[6]]), None);
    let one = grid::schedule(&s, c, &[Partition::uniform(6, 1)], &[&[6]], 1);
    assert_eq!(one.steps.len(), 1);
    assert_eq!(one.windows, vec![vec![range(0, 6)]]);
}

#[test]
fn two_d_rotates_time_partitions_around_the_ring() {
    // SGD-MF: w[u, *] and h[i, *] written.
    let s = spec(
        &["u", "i"],
        vec![array("w", 2, true), array("h", 2, true)],
        vec![
            access(0, true, vec![aff(&[1, 0], 0), Subscript::Full]),
            access(1, true, vec![aff(&[0, 1], 0), Subscript::Full]),
        ],
        false,
    );
    let an = analyze(&s);
    let c = &an.candidates[0];
    assert_eq!(c.strategy, Strategy::TwoD { space: 0, time: 1 });
    let parts = [Partition::uniform(4, 2), Partition::uniform(6, 2)];
    let shapes: [&[usize]; 2] = [&[4, 3], &[6, 3]];
    let sched = grid::schedule(&s, c, &parts, &shapes, 2);
    // Worker w runs block (w, (w + t) mod 2) = id 2w + (w + t) mod 2.
    let steps = vec![
        Step {
            tasks: vec![
                task(Unit::Block(0), 0, vec![]),
                task(Unit::Block(3), 3, vec![]),
            ],
            applies: true,
            ..Step::default()
        },
        Step {
            tasks: vec![
                task(Unit::Block(1), 1, vec![(0, 1)]),
                task(Unit::Block(2), 2, vec![(0, 0)]),
            ],
            applies: true,
            ..Step::default()
        },
    ];
    assert_eq!(sched.steps, steps);
    let hw = |lo, hi| [range(lo, hi)];
    assert_eq!(
        sched.windows,
        vec![
            [hw(0, 2), hw(0, 3)].concat(),
            [hw(0, 2), hw(3, 6)].concat(),
            [hw(2, 4), hw(0, 3)].concat(),
            [hw(2, 4), hw(3, 6)].concat(),
        ]
    );
    assert_eq!(
        sched.handoffs,
        vec![
            HandOff {
                array: 1,
                part: 0,
                from: 0,
                step: 0,
                to: 1
            },
            HandOff {
                array: 1,
                part: 1,
                from: 1,
                step: 0,
                to: 0
            },
        ]
    );
    // Only the blocks of one step may run at once.
    assert_eq!(
        sched.concurrent_pairs(),
        vec![((0, 0), (0, 1)), ((1, 0), (1, 1))]
    );
    assert_eq!(sched.overlap(&shapes), None);
    assert_eq!(
        sched.fold_order(),
        vec![vec![Some(0), Some(1)], vec![Some(2), Some(3)]]
    );
}

/// DTW's table: `d[i + 1, j + 1]` from `d[i, j + 1]`, `d[i + 1, j]`, `d[i, j]`, ordered.
pub(crate) fn dtw_spec() -> LoopSpec {
    spec(
        &["i", "j"],
        vec![array("d", 2, true)],
        vec![
            access(0, false, vec![aff(&[1, 0], 0), aff(&[0, 1], 1)]),
            access(0, false, vec![aff(&[1, 0], 1), aff(&[0, 1], 0)]),
            access(0, false, vec![aff(&[1, 0], 0), aff(&[0, 1], 0)]),
            access(0, true, vec![aff(&[1, 0], 1), aff(&[0, 1], 1)]),
        ],
        true,
    )
}

#[test]
fn a_wavefront_is_a_pipeline_of_tiles() {
    let s = dtw_spec();
    let an = analyze(&s);
    let c = &an.candidates[0];
    assert!(
        matches!(c.strategy, Strategy::Wavefront { .. }),
        "{:?}",
        c.strategy
    );
    let shapes: [&[usize]; 1] = [&[4, 4]];
    let t = wavefront::plan(&s, c, &[3, 3], &shapes, 2);
    assert_eq!((t.time_tiles, t.fallback.as_deref()), (3, None));
    assert!(t.tiling.skewed.is_none());
    let sched = &t.schedule;
    // Worker s runs tile (s, k - s) at step k, after worker s - 1's same tile.
    type Slot = Option<(Unit, Vec<(usize, usize)>)>;
    let units: Vec<Vec<Slot>> = sched
        .steps
        .iter()
        .map(|st| {
            st.tasks
                .iter()
                .map(|t| t.as_ref().map(|t| (t.unit, t.after.clone())))
                .collect()
        })
        .collect();
    assert_eq!(
        units,
        vec![
            vec![Some((Unit::Block(0), vec![])), None],
            vec![
                Some((Unit::Block(1), vec![])),
                Some((Unit::Block(3), vec![(0, 0)]))
            ],
            vec![
                Some((Unit::Block(2), vec![])),
                Some((Unit::Block(4), vec![(1, 0)]))
            ],
            vec![None, Some((Unit::Block(5), vec![(2, 0)]))],
        ]
    );
    // Only a worker further ahead in time runs beside one further down the pipeline.
    assert_eq!(
        sched.concurrent_pairs(),
        vec![((1, 0), (1, 1)), ((1, 1), (2, 0)), ((2, 0), (2, 1))]
    );
    assert_eq!(sched.overlap(&shapes), None);
    assert_eq!(sched.handoffs.len(), 3);
}

#[test]
fn reconnaissance_claims_then_runs_pieces_and_groups() {
    // Two arrays written; elements 0..4 are `a`'s rows, 4..6 `b`'s.
    let s = spec(
        &["i"],
        vec![array("a", 1, true), array("b", 1, true)],
        vec![
            access(0, true, vec![Subscript::Indirect]),
            access(1, true, vec![Subscript::Indirect]),
        ],
        false,
    );
    let batch = |runs: Vec<Vec<u32>>, owned: Vec<Vec<u64>>, pieces: Vec<Piece>, shared| Batch {
        runs,
        // Worker 1 of the first batch also reads row 2, which nobody writes in it.
        reads: if owned[1] == [1] {
            vec![vec![], vec![2]]
        } else {
            vec![vec![], vec![]]
        },
        owned,
        groups: 2,
        largest: 1,
        split: usize::from(!pieces.is_empty()),
        pieces,
        shared,
    };
    let groups = GroupPlan {
        workers: 2,
        batches: vec![
            batch(
                vec![vec![0], vec![1]],
                vec![vec![0], vec![1]],
                vec![],
                vec![],
            ),
            batch(
                vec![vec![6], vec![7]],
                vec![vec![2], vec![3]],
                vec![
                    Piece {
                        worker: 0,
                        level: 0,
                        iters: vec![2, 3],
                        after: vec![],
                        elems: vec![4],
                    },
                    Piece {
                        worker: 1,
                        level: 1,
                        iters: vec![4, 5],
                        after: vec![0],
                        elems: vec![4, 5],
                    },
                ],
                vec![4, 5],
            ),
        ],
    };
    let sched = recon::schedule(&s, groups, &[0, 4], 2);
    let owned = |base, batch, claimant| Window::Owned {
        base,
        batch,
        claimant,
    };
    let set = |batch, c| vec![owned(0, batch, c), owned(4, batch, c)];
    let claim = |worker, rows: Vec<u64>, batch, claimant| Claim {
        worker,
        rows,
        batch,
        claimant,
    };
    let ids = |k, windows, after: Vec<(usize, usize)>, claim: Option<Claim>| {
        Some(Task {
            unit: Unit::Ids(k),
            windows,
            after,
            claim,
        })
    };
    assert_eq!(
        sched.windows,
        vec![
            set(0, Claimant::Worker(0)),
            set(0, Claimant::Worker(1)),
            set(1, Claimant::Piece(0)),
            set(1, Claimant::Piece(1)),
            set(1, Claimant::Worker(0)),
            set(1, Claimant::Worker(1)),
        ]
    );
    assert_eq!(
        sched.lists,
        vec![vec![0], vec![1], vec![2, 3], vec![4, 5], vec![6], vec![7]]
    );
    assert_eq!(
        sched.steps,
        vec![
            Step {
                tasks: vec![ids(0, 0, vec![], None), ids(1, 1, vec![], None)],
                claims: vec![
                    claim(0, vec![0], 0, Claimant::Worker(0)),
                    claim(1, vec![1], 0, Claimant::Worker(1)),
                    claim(0, vec![], 0, Claimant::Nobody),
                    // What worker 1 only reads, stamped for readers.
                    claim(1, vec![2], 0, Claimant::Readers(1)),
                ],
                barrier_after: true,
                applies: true,
            },
            Step {
                tasks: vec![
                    ids(2, 2, vec![], Some(claim(0, vec![4], 1, Claimant::Piece(0)))),
                    None,
                ],
                claims: vec![
                    claim(0, vec![2], 1, Claimant::Worker(0)),
                    claim(1, vec![3], 1, Claimant::Worker(1)),
                    claim(0, vec![4, 5], 1, Claimant::Nobody),
                ],
                barrier_after: false,
                applies: false,
            },
            Step {
                tasks: vec![
                    None,
                    ids(
                        3,
                        3,
                        vec![(1, 0)],
                        Some(claim(1, vec![4, 5], 1, Claimant::Piece(1)))
                    ),
                ],
                ..Step::default()
            },
            Step {
                tasks: vec![ids(4, 4, vec![], None), ids(5, 5, vec![], None)],
                claims: vec![],
                barrier_after: true,
                applies: true,
            },
        ]
    );
    // Batches are separated by barriers; the second piece waits for the first (and
    // worker 1's groups come after its piece), while worker 0's groups may run beside the
    // second piece: their rows are disjoint.
    assert_eq!(
        sched.concurrent_pairs(),
        vec![((0, 0), (0, 1)), ((2, 1), (3, 0)), ((3, 0), (3, 1))]
    );
    // Stamps: call, batch and claimant each change them.
    let st = |call, batch, c| stamp(call, batch, c, 2);
    assert_ne!(st(1, 0, Claimant::Worker(0)), st(2, 0, Claimant::Worker(0)));
    assert_ne!(st(1, 0, Claimant::Worker(0)), st(1, 1, Claimant::Worker(0)));
    assert_ne!(st(1, 0, Claimant::Nobody), st(1, 0, Claimant::Piece(0)));
    assert_eq!(
        st(1, 0, Claimant::Worker(1)) >> WORKER_BITS,
        st(1, 0, Claimant::Piece(3)) >> WORKER_BITS
    );
}

#[test]
fn a_replay_runs_the_recorded_lists() {
    let steps = vec![vec![vec![0, 2], vec![1]], vec![vec![], vec![3]]];
    let plain = replay::schedule(&steps, &[false, false], None, false, 2);
    assert_eq!(plain.workers, 2);
    assert_eq!(plain.lists, vec![vec![0, 2], vec![1], vec![], vec![3]]);
    assert_eq!(plain.windows, vec![vec![Window::All { writable: true }; 2]]);
    assert_eq!(plain.apply, None);
    assert_eq!(
        plain.steps[1].tasks,
        vec![
            Some(Task {
                unit: Unit::Ids(2),
                windows: 0,
                after: vec![],
                claim: None
            }),
            Some(Task {
                unit: Unit::Ids(3),
                windows: 0,
                after: vec![],
                claim: None
            }),
        ]
    );
    let buffered = replay::schedule(&steps, &[true, false], Some(4), true, 2);
    assert_eq!(buffered.apply, Some(ApplyPoints::new(Some(4), 2)));
    assert_eq!(
        buffered.steps.iter().map(|s| s.applies).collect::<Vec<_>>(),
        vec![true, false]
    );
}

#[test]
fn windows_clash_only_where_one_writes() {
    let ro = |lo, hi| Window::Range {
        axis: 0,
        lo,
        hi,
        writable: false,
    };
    assert!(window::clash(&range(0, 4), &range(3, 6), None));
    assert!(!window::clash(&range(0, 3), &range(3, 6), None));
    assert!(!window::clash(&ro(0, 4), &ro(0, 4), None));
    assert!(window::clash(&range(0, 4), &ro(2, 3), None));
    assert!(!window::clash(
        &Window::All { writable: false },
        &ro(0, 9),
        None
    ));
    assert!(window::clash(
        &Window::All { writable: true },
        &ro(0, 9),
        None
    ));
    // Ownership windows are checked against claims at run time, not here.
    let owned = Window::Owned {
        base: 0,
        batch: 0,
        claimant: Claimant::Worker(0),
    };
    assert!(!window::clash(&owned, &range(0, 9), None));
    assert_eq!(owned.admits(&[0], true), None);
    assert_eq!(range(2, 4).admits(&[3], true), Some(true));
    assert_eq!(range(2, 4).admits(&[4], false), Some(false));
    assert_eq!(ro(2, 4).admits(&[3], true), Some(false));
}
