//! The protocol on a 2D schedule: the exact transfers, and runs on the simulated network.

use strads_analysis::{Partition, Strategy, Subscript, analyze};

use super::sim::{Link, Sim};
use super::verify::verify;
use super::*;
use crate::plan::grid;
use crate::plan::tests::{access, aff, array, spec};

/// SGD-MF's loop: `w[u, *]` and `h[i, *]` written.
pub(super) fn sgd_spec() -> strads_analysis::LoopSpec {
    spec(
        &["u", "i"],
        vec![array("w", 2, true), array("h", 2, true)],
        vec![
            access(0, true, vec![aff(&[1, 0], 0), Subscript::Full]),
            access(1, true, vec![aff(&[0, 1], 0), Subscript::Full]),
        ],
        false,
    )
}

/// SGD-MF's schedule on 2 workers: w (4 x 3) local, h (6 x 3) rotated.
pub(super) fn sgd_2d() -> (crate::plan::Schedule, Vec<PlanArray>) {
    let s = sgd_spec();
    let an = analyze(&s);
    let c = &an.candidates[0];
    assert_eq!(c.strategy, Strategy::TwoD { space: 0, time: 1 });
    let parts = [Partition::uniform(4, 2), Partition::uniform(6, 2)];
    let shapes: [&[usize]; 2] = [&[4, 3], &[6, 3]];
    let sched = grid::schedule(&s, c, &parts, &shapes, 2);
    (sched, PlanArray::on_driver(&shapes))
}

fn tr(
    array: usize,
    region: &[(u64, u64)],
    from: usize,
    writer: Option<TaskId>,
    to: usize,
    needed_by: Vec<TaskId>,
) -> Transfer {
    Transfer {
        array,
        region: Region(region.to_vec()),
        from,
        writer,
        to,
        needed_by,
    }
}

#[test]
fn two_ranks_of_a_2d_ring_exchange_exactly_the_rotated_blocks() {
    let (sched, arrays) = sgd_2d();
    let plan = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    assert_eq!(
        plan.transfers,
        vec![
            // Worker 1's first block: its rows of w and its time partition of h.
            tr(0, &[(6, 12)], 0, None, 1, vec![(0, 1)]),
            tr(1, &[(9, 18)], 0, None, 1, vec![(0, 1)]),
            // The ring: each h partition to the other rank after step 0.
            tr(1, &[(9, 18)], 1, Some((0, 1)), 0, vec![(1, 0)]),
            tr(1, &[(0, 9)], 0, Some((0, 0)), 1, vec![(1, 1)]),
            // Home: what rank 1 wrote last.
            tr(0, &[(6, 12)], 1, Some((1, 1)), 0, vec![]),
            tr(1, &[(0, 9)], 1, Some((1, 1)), 0, vec![]),
        ]
    );
    assert_eq!(plan.sends[0], vec![vec![3], vec![2]]);
    assert_eq!(plan.sends[1], vec![vec![], vec![4, 5]]);
    // Each rank gives back the pages of the h partition it passed on (neither reads it
    // again nor holds it current at the end); nothing else is released: the initial
    // transfers leave the driver's array whole, and the homecoming ends on the driver.
    assert_eq!(plan.release, vec![false, false, true, true, false, false]);
    assert_eq!(plan.waits[1], vec![vec![2], vec![3]]);
    assert_eq!(plan.remote_after[1], vec![vec![(0, 1)], vec![(0, 0)]]);
    assert_eq!(plan.notify[0], vec![vec![1], vec![0]]);
    assert_eq!(plan.bytes_moved(&[4, 4]), (6 + 9 + 9 + 9 + 6 + 9) * 4);
    // On one rank nothing moves.
    let one = Itinerary::new(&sched, 1, 2, &arrays, true).unwrap();
    assert!(one.transfers.is_empty());
    assert!(one.remote_after.iter().flatten().all(Vec::is_empty));
}

#[test]
fn cached_arrays_are_not_sent_again() {
    let (sched, mut arrays) = sgd_2d();
    for a in &mut arrays {
        a.holders = vec![0, 1];
    }
    let plan = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    assert_eq!(plan.initial().count(), 0);
    assert_eq!(plan.transfers.len(), 4);
}

#[test]
fn the_simulated_ring_runs_the_call_with_exact_timing() {
    let (sched, arrays) = sgd_2d();
    let plan = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    let link = Link {
        latency: 10,
        bandwidth: 125.0,
    };
    let mut sim = Sim::new(2, link, 1_000_000, 10_000_000);
    let r = sim.run_call(&sched, &plan, &|_, _| 100, &[4, 4], 1_000_000);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // Worker 1 starts at 12 (its blocks arrive), each step takes 100 and the ring's
    // block arrives 11-12 after the step that sent it; the last block home at 225.
    assert_eq!(r.makespan, 225);
    assert_eq!(r.busy, 400);
    assert_eq!(r.bytes, (6 + 9 + 9 + 9 + 6 + 9) * 4);
}

#[test]
fn a_killed_rank_is_named_by_the_others_within_the_idle_time() {
    let (sched, arrays) = sgd_2d();
    let plan = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    let link = Link {
        latency: 10,
        bandwidth: 125.0,
    };
    let mut sim = Sim::new(2, link, 1_000, 5_000);
    sim.kill(1, 50);
    let r = sim.run_call(&sched, &plan, &|_, _| 100, &[4, 4], 1_000_000);
    assert_eq!(r.failures.len(), 1);
    let (who, f) = &r.failures[0];
    assert_eq!((*who, f.rank), (0, 1));
    assert_eq!(f.message, "rank 1 was silent for 0.005 s (dead or hung)");
}

#[test]
fn parts_left_in_place_are_not_sent_home_and_start_the_next_call_there() {
    let (sched, arrays) = sgd_2d();
    let first = Itinerary::new(&sched, 2, 1, &arrays, false).unwrap();
    // Nothing comes home; rank 1 keeps its rows of w and the h partition it had last.
    assert!(first.homecoming().next().is_none());
    assert_eq!(first.end[0], vec![((0, 6), 0), ((6, 12), 1)]);
    assert_eq!(first.end[1], vec![((0, 9), 1), ((9, 18), 0)]);
    // The next call starts from there: w moves no more, h partitions only rotate.
    let next: Vec<PlanArray> = arrays
        .iter()
        .zip(&first.end)
        .map(|(a, end)| PlanArray {
            away: end
                .iter()
                .filter(|(_, r)| *r != 0)
                .map(|&(range, r)| (Region(vec![range]), r))
                .collect(),
            ..a.clone()
        })
        .collect();
    let second = Itinerary::new(&sched, 2, 1, &next, false).unwrap();
    // At the start each rank sends the other the h partition it needs first (the ring
    // turned P - 1 times in the last call), then the ring turns as before.
    let initial: Vec<&Transfer> = second.initial().map(|t| &second.transfers[t]).collect();
    assert_eq!(
        initial,
        vec![
            &tr(1, &[(0, 9)], 1, None, 0, vec![(0, 0)]),
            &tr(1, &[(9, 18)], 0, None, 1, vec![(0, 1)]),
        ]
    );
    assert_eq!(second.bytes_moved(&[4, 4]), 4 * 9 * 4);
    assert_eq!(second.end, first.end);
    // A partition passed on in the ring is given back by its sender, which is not where
    // it ends: rank 0 passes partition 0 on (it ends on rank 1), rank 1 partition 1.
    let released: Vec<(usize, usize, Region)> = (0..second.transfers.len())
        .filter(|&t| second.release[t])
        .map(|t| {
            let tr = &second.transfers[t];
            (tr.from, tr.to, tr.region.clone())
        })
        .collect();
    assert_eq!(
        released,
        vec![(1, 0, Region(vec![(9, 18)])), (0, 1, Region(vec![(0, 9)]))]
    );
}

#[test]
fn every_task_starts_with_the_serial_values_of_its_window() {
    // 2D: SGD-MF's ring.
    let (sched, arrays) = sgd_2d();
    assert_eq!(verify(&sched, &arrays, 2, true), Ok(true));
    assert_eq!(verify(&sched, &arrays, 1, true), Ok(true));
    // Wavefronts: DTW's table (tiles read a halo they do not write), unskewed and on a
    // skewed nest (Gauss-Seidel reading the next row's earlier column).
    let dtw = crate::plan::tests::dtw_spec();
    let skewed = spec(
        &["i", "j"],
        vec![array("x", 2, true)],
        vec![
            access(0, false, vec![aff(&[1, 0], 0), aff(&[0, 1], 1)]),
            access(0, false, vec![aff(&[1, 0], 1), aff(&[0, 1], 0)]),
            access(0, false, vec![aff(&[1, 0], 2), aff(&[0, 1], 0)]),
            access(0, true, vec![aff(&[1, 0], 1), aff(&[0, 1], 1)]),
        ],
        true,
    );
    let mut tiled = 0;
    for s in [&dtw, &skewed] {
        let an = analyze(s);
        let c = an
            .candidates
            .iter()
            .find(|c| matches!(c.strategy, Strategy::Wavefront { .. }))
            .expect("a wavefront");
        for (n, m) in [(7, 9), (12, 5), (20, 20)] {
            let shape = [n + 2, m + 2];
            let shapes: [&[usize]; 1] = [&shape];
            for (ranks, threads) in [(2, 1), (3, 1), (2, 2), (4, 1)] {
                let t = crate::plan::wavefront::plan(s, c, &[n, m], &shapes, ranks * threads);
                if t.fallback.is_some() {
                    continue;
                }
                tiled += 1;
                assert_eq!(
                    verify(&t.schedule, &PlanArray::on_driver(&shapes), ranks, true),
                    Ok(true)
                );
            }
        }
    }
    assert!(tiled >= 12, "only {tiled} tiled plans");
}

/// A second call of the ring with the copies the first left on each rank: rank 1 keeps
/// its rows of `w` and the `h` partition it wrote last, so nothing of them is sent again,
/// and the plan still gives every task the serial values.
#[test]
fn parts_held_after_a_call_are_not_sent_again_and_stay_exact() {
    let (sched, arrays) = sgd_2d();
    let first = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    // Rank 1 wrote w rows 2..4 (elements 6..12) and h partition 0 (0..9) last.
    assert_eq!(
        first.held,
        vec![
            vec![(Region(vec![(6, 12)]), 1)],
            vec![(Region(vec![(0, 9)]), 1)]
        ]
    );
    let next = first.next_arrays(&arrays);
    let second = Itinerary::new(&sched, 2, 1, &next, true).unwrap();
    let initial: Vec<&Transfer> = second.initial().map(|t| &second.transfers[t]).collect();
    // Only the h partition rank 1 starts with but does not hold (9..18) goes out.
    assert_eq!(initial, vec![&tr(1, &[(9, 18)], 0, None, 1, vec![(0, 1)])]);
    assert!(second.bytes_moved(&[4, 4]) < first.bytes_moved(&[4, 4]));
    assert_eq!(verify(&sched, &next, 2, true), Ok(true));
    // The plan trusts what `copies` lists (the driver lists only copies of the array as
    // it is now): with all of w listed on rank 1, no part of w goes out.
    let mut wrong = next.clone();
    wrong[0].held = vec![(Region(vec![(0, 12)]), 1)];
    let lied = Itinerary::new(&sched, 2, 1, &wrong, true).unwrap();
    assert!(lied.initial().all(|t| lied.transfers[t].array != 0));
}

/// A driver's metas are another process's words: parts outside the array or the job, and
/// a worker count that is not ranks x threads, are errors (no panic, no access outside).
#[test]
fn inputs_that_do_not_fit_are_errors() {
    let (sched, arrays) = sgd_2d();
    let err = |arrays: &[PlanArray], ranks: usize, threads: usize| {
        Itinerary::new(&sched, ranks, threads, arrays, true)
            .err()
            .map(|e| e.0)
    };
    assert_eq!(
        err(&arrays, 2, 2),
        Some("2 workers are not 2 ranks of 2 threads".into())
    );
    let mut a = arrays.clone();
    a[0].held = vec![(Region(vec![(6, 13)]), 1)];
    assert_eq!(
        err(&a, 2, 1),
        Some(
            "array 0: the part [6, 13) is not a sorted, disjoint range inside its 12 elements"
                .into()
        )
    );
    a[0].held = vec![(Region(vec![(4, 6), (5, 8)]), 1)];
    assert!(err(&a, 2, 1).is_some_and(|e| e.contains("[5, 8)")));
    a[0].held = vec![(Region(vec![(0, 2)]), 2)];
    assert_eq!(
        err(&a, 2, 1),
        Some("array 0: a part on rank 2 of a job of 2".into())
    );
    let mut a = arrays.clone();
    a[1].holders = vec![0, 5];
    assert_eq!(
        err(&a, 2, 1),
        Some("array 1: held by rank 5 of a job of 2".into())
    );
}

/// Calls that leave the written parts where they were written: the next call takes them
/// from there, nothing comes home, and every task still starts with the serial values.
#[test]
fn parts_left_in_place_are_taken_from_where_they_are() {
    let (sched, arrays) = sgd_2d();
    assert_eq!(verify(&sched, &arrays, 2, false), Ok(true));
    let first = Itinerary::new(&sched, 2, 1, &arrays, false).unwrap();
    assert_eq!(first.homecoming().count(), 0);
    // Rank 1 is the only holder of its rows of w (6..12) and of h's partition 0 (0..9).
    assert_eq!(first.away(0), vec![(Region(vec![(6, 12)]), 1)]);
    assert_eq!(first.away(1), vec![(Region(vec![(0, 9)]), 1)]);
    let next = first.next_arrays(&arrays);
    assert_eq!(verify(&sched, &next, 2, false), Ok(true));
    assert_eq!(verify(&sched, &next, 2, true), Ok(true));
    let second = Itinerary::new(&sched, 2, 1, &next, false).unwrap();
    // Only h's blocks move (the ring, and the partition each rank starts with from the
    // rank that wrote it last); w's rows stay where they are, and nothing comes home: less
    // than the same call that brings its parts home, started from its copies.
    assert!(second.transfers.iter().all(|t| t.array == 1));
    assert_eq!(second.homecoming().count(), 0);
    let home = Itinerary::new(&sched, 2, 1, &arrays, true).unwrap();
    let home_next = Itinerary::new(&sched, 2, 1, &home.next_arrays(&arrays), true).unwrap();
    assert!(second.bytes_moved(&[4, 4]) < home_next.bytes_moved(&[4, 4]));
    // Wavefront tiles, chained in place over 3 calls on 2 and 3 ranks.
    let dtw = crate::plan::tests::dtw_spec();
    let an = analyze(&dtw);
    let c = an
        .candidates
        .iter()
        .find(|c| matches!(c.strategy, Strategy::Wavefront { .. }))
        .expect("a wavefront");
    let shape = [14, 11];
    let shapes: [&[usize]; 1] = [&shape];
    for ranks in [2, 3] {
        let t = crate::plan::wavefront::plan(&dtw, c, &[12, 9], &shapes, ranks);
        let mut placed = PlanArray::on_driver(&shapes);
        for _ in 0..3 {
            assert_eq!(verify(&t.schedule, &placed, ranks, false), Ok(true));
            let plan = Itinerary::new(&t.schedule, ranks, 1, &placed, false).unwrap();
            placed = plan.next_arrays(&placed);
        }
        assert!(!placed[0].away.is_empty());
        assert_eq!(verify(&t.schedule, &placed, ranks, true), Ok(true));
    }
}

/// Buffers' exchanges: each rank's `n`-th copies meet the others' `n`-th, in rank order,
/// also when they arrive before the call begins or ahead of an earlier exchange.
#[test]
fn buffer_copies_meet_by_exchange_in_rank_order() {
    // A 1D schedule on 3 workers: w's rows split three ways.
    let s = spec(
        &["u"],
        vec![array("w", 2, true)],
        vec![access(0, true, vec![aff(&[1], 0), Subscript::Full])],
        false,
    );
    let an = analyze(&s);
    let shapes: [&[usize]; 1] = [&[6, 2]];
    let sched = grid::schedule(
        &s,
        &an.candidates[0],
        &[Partition::uniform(6, 3)],
        &shapes,
        3,
    );
    let arrays = PlanArray::on_driver(&shapes);
    let plan = std::sync::Arc::new(Itinerary::new(&sched, 3, 1, &arrays, false).unwrap());
    let mut cores: Vec<Core> = (0..3).map(|r| Core::new(r, 3, 1000, 10_000, 0)).collect();
    // Rank 2 runs ahead: its exchanges 0 and 1 reach rank 0 before the call begins there.
    cores[2].begin(1, plan.clone());
    // Exchange 0 gives each rank bytes of its own (a collective's round).
    cores[2].send_merge_each(0, vec![vec![2, 0], vec![2, 0, 1], vec![9]]);
    cores[2].send_merge_each(1, vec![vec![2, 1]; 3]);
    let deliver = |cores: &mut Vec<Core>, from: usize| {
        while let Some(o) = cores[from].poll_transmit() {
            if let Outgoing::Block { to, msg, data } = o {
                cores[to].handle(1, from, msg, Some(data.into()));
            }
        }
    };
    deliver(&mut cores, 2);
    cores[0].begin(1, plan.clone());
    cores[1].begin(1, plan.clone());
    assert_eq!(cores[0].take_merges(0), None, "rank 1's copies are missing");
    cores[1].send_merge_each(0, vec![vec![1, 0]; 3]);
    deliver(&mut cores, 1);
    assert_eq!(
        cores[0].take_merges(0),
        Some(vec![(1, vec![1, 0]), (2, vec![2, 0])])
    );
    assert_eq!(cores[0].take_merges(0), None, "taken once");
    assert_eq!(cores[1].take_merges(0), None, "rank 0's are missing");
    cores[0].send_merge_each(0, vec![vec![0, 0]; 3]);
    deliver(&mut cores, 0);
    assert_eq!(
        cores[1].take_merges(0),
        Some(vec![(0, vec![0, 0]), (2, vec![2, 0, 1])])
    );
    assert_eq!(cores[0].take_merges(1), None);
    cores[1].send_merge_each(1, vec![vec![1, 1]; 3]);
    deliver(&mut cores, 1);
    assert_eq!(
        cores[0].take_merges(1),
        Some(vec![(1, vec![1, 1]), (2, vec![2, 1])])
    );
}

mod reconnaissance {
    //! Reconnaissance plans across ranks: from random recorded accesses (batches, task
    //! groups, split components with their pieces, `ordered` or not), every task starts
    //! with the serial values of the rows it owns and reads, and the driver ends with the
    //! final values (the oracle of `verify`, element by element).

    use proptest::prelude::*;
    use strads_analysis::{Accesses, Subscript, plan_groups_with};

    use super::super::verify::verify;
    use super::super::*;
    use crate::plan::recon;
    use crate::plan::tests::{access, array, spec};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn every_task_starts_from_the_serial_values(
            touches in proptest::collection::vec(
                proptest::collection::vec((0u64..12, any::<bool>()), 1..4),
                1..40,
            ),
            batch in 1usize..16,
            split in any::<bool>(),
            ordered in any::<bool>(),
            layout in prop_oneof![Just((2usize, 1usize)), Just((2, 2)), Just((3, 1)), Just((4, 1))],
            home in any::<bool>(),
        ) {
            // Two written arrays: rows 0..8 are `a`'s (8 x 2), rows 8..12 `b`'s (4).
            let s = spec(
                &["i"],
                vec![array("a", 2, true), array("b", 1, true)],
                vec![
                    access(0, true, vec![Subscript::Indirect, Subscript::Full]),
                    access(1, true, vec![Subscript::Indirect]),
                ],
                ordered,
            );
            let mut acc = Accesses::new();
            for it in &touches {
                for &(e, w) in it {
                    acc.touch(e, w);
                }
                acc.end_iteration();
            }
            let (ranks, threads) = layout;
            let p = ranks * threads;
            let groups = plan_groups_with(&acc, 12, p, batch, split, ordered);
            let sched = recon::schedule(&s, groups, &[0, 8], p);
            let shapes: [&[usize]; 2] = [&[8, 2], &[4]];
            let arrays = PlanArray::on_driver(&shapes);
            let checked = verify(&sched, &arrays, ranks, home);
            prop_assert_eq!(checked, Ok(true), "{:?}", sched);
            // And those regions cover what each task's iterations touch (so the values
            // they are given are the values they use).
            let claims = super::super::region::Claims::of(&sched);
            for (t, step) in sched.steps.iter().enumerate() {
                for (w, task) in step.tasks.iter().enumerate() {
                    let Some(task) = task else { continue };
                    let crate::plan::Unit::Ids(k) = task.unit else { continue };
                    let windows = &sched.windows[task.windows];
                    for &i in &sched.lists[k] {
                        for (e, write) in acc.of(i as usize) {
                            let (a, row) = if e < 8 { (0, e) } else { (1, e - 8) };
                            let width = if a == 0 { 2 } else { 1 };
                            let (access, written) = claims
                                .regions(&windows[a], shapes[a], w..w + 1)
                                .expect("owned windows cross");
                            let inside = |r: &Region| {
                                r.0.iter().any(|&(lo, hi)| lo <= row * width && (row + 1) * width <= hi)
                            };
                            prop_assert!(inside(&access), "task ({}, {}) touches row {} of {}", t, w, row, a);
                            prop_assert!(!write || inside(&written), "task ({}, {}) writes row {} of {}", t, w, row, a);
                        }
                    }
                }
            }
        }
    }
}

/// The simulator's model loops are the runtime's plans: dtw's fill a pipeline of 4 time
/// tiles a worker whose tiles hold every cell once, SGD-MF's epoch a 2D rotation; both
/// itineraries are made, and the wavefront's runs on the simulated network.
#[test]
fn the_simulators_model_loops_are_the_runtimes_plans() {
    let (sched, arrays, cells) = super::sim::dtw_wavefront(30, 40, 3);
    assert_eq!(sched.workers, 3);
    assert_eq!(cells.len(), 3);
    assert!(cells.iter().all(|c| c.len() == 12));
    assert_eq!(cells.iter().flatten().sum::<u64>(), 30 * 40);
    assert_eq!(sched.steps.len(), 3 + 12 - 1);
    let plan = Itinerary::new(&sched, 3, 1, &arrays, false).expect("the wavefront ships");
    let mut sim = Sim::new(
        3,
        Link {
            latency: 10,
            bandwidth: 125.0,
        },
        1 << 40,
        1 << 40,
    );
    let r = sim.run_call(&sched, &plan, &|_, _| 100, &[4, 4], 1 << 40);
    assert!(r.failures.is_empty() && r.makespan >= 14 * 100);
    let (sched, arrays) = super::sim::sgd_mf_2d(50, 30, 4, 2);
    assert_eq!(sched.workers, 2);
    Itinerary::new(&sched, 2, 1, &arrays, false).expect("the 2D ring ships");
}
