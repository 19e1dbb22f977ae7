//! The itinerary on classes of rows (`rows.rs`) against the walk row by row.

use strads_analysis::{Partition, Strategy, analyze};

use super::*;
use crate::plan::grid;
use crate::plan::tests::array;

/// Rows that every region treats alike are planned once (`rows.rs`): the plan is the one
/// made row by row, for wavefront tiles (with the cost matrix the loop iterates, read by
/// its tiles; the rows do squeeze) over chained calls whose parts stay away and over parts
/// held or away that start and end mid-row, on 2 and 3 ranks, bringing everything home or
/// not; and for the 2D ring and 1D blocks, whose one range per task is walked as it is.
#[test]
fn squeezed_rows_plan_exactly_as_every_row() {
    let same = |sched: &crate::plan::Schedule, arrays: &[PlanArray], ranks: usize, home: bool| {
        let squeezed = Itinerary::planned(sched, ranks, 1, arrays, home, true).unwrap();
        let every = Itinerary::planned(sched, ranks, 1, arrays, home, false).unwrap();
        assert_eq!(squeezed, every);
        squeezed
    };
    let squeezes = |sched: &crate::plan::Schedule, arrays: &[PlanArray], a: usize| {
        let regions = inputs::task_regions(sched, 1, arrays).unwrap();
        let of_tasks = regions
            .iter()
            .flatten()
            .flatten()
            .filter_map(|s| s[a].as_ref());
        rows::Rows::of(&arrays[a].shape, of_tasks.flat_map(|(x, w)| [x, w])).is_some()
    };
    // DTW: `d` written by tiles, `cost` iterated (a tile reads its own elements).
    let mut dtw = crate::plan::tests::dtw_spec();
    dtw.arrays = vec![array("d", 2, true), array("cost", 2, false)].into();
    dtw.space = strads_analysis::SpaceKind::Array {
        array: 1,
        sparse: false,
    };
    let an = analyze(&dtw);
    let c = &an.candidates[0];
    let (n, m) = (60, 50);
    let shapes: [&[usize]; 2] = [&[n + 1, m + 1], &[n, m]];
    let mut rng = crate::array::rng::IterRng::new(11, &[]);
    let mut next = |m: u64| rng.below(m as usize) as u64;
    for ranks in [2, 3] {
        let t = crate::plan::wavefront::plan(&dtw, c, &[n, m], &shapes, ranks);
        let mut placed = PlanArray::on_driver(&shapes);
        // `cost` is read by parts: it travels by regions from the driver.
        placed[1].shipped = true;
        assert!(squeezes(&t.schedule, &placed, 0) && squeezes(&t.schedule, &placed, 1));
        for home in [false, true] {
            let mut arrays = placed.clone();
            for _ in 0..3 {
                let plan = same(&t.schedule, &arrays, ranks, home);
                arrays = plan.next_arrays(&arrays);
            }
        }
        // Parts held and left away that start and end anywhere in a row (serial code's
        // windows, another loop's blocks, parts still to be made): cut where they are.
        for _ in 0..20 {
            let mut arrays = placed.clone();
            for arr in &mut arrays {
                let len: u64 = arr.shape.iter().map(|&d| d as u64).product();
                let (mut held, mut away) = (Region::default(), Region::default());
                let mut at = next(len / 4);
                while at < len {
                    let hi = (at + 1 + next(len / 6)).min(len);
                    if next(2) == 0 {
                        held.push(at, hi);
                    } else {
                        away.push(at, hi);
                    }
                    at = hi + next(len / 8);
                }
                let rank = 1 + next(ranks as u64 - 1) as usize;
                arr.held = vec![(held, rank)];
                arr.away = vec![(away, if next(3) == 0 { MADE } else { rank })];
            }
            for home in [false, true] {
                same(&t.schedule, &arrays, ranks, home);
            }
        }
    }
    // The 2D ring and 1D blocks of SGD-MF-like loops, their parts left away between calls.
    let s = super::tests::sgd_spec();
    let an = analyze(&s);
    let shapes: [&[usize]; 2] = [&[40, 3], &[30, 3]];
    for c in &an.candidates {
        for ranks in [2, 3] {
            let parts: Vec<Partition> = match c.strategy {
                Strategy::TwoD { .. } => {
                    vec![
                        Partition::uniform(40, ranks),
                        Partition::uniform(30, 2 * ranks),
                    ]
                }
                _ => vec![Partition::uniform(40, ranks)],
            };
            if !matches!(c.strategy, Strategy::TwoD { .. } | Strategy::OneD { .. }) {
                continue;
            }
            let sched = grid::schedule(&s, c, &parts, &shapes, ranks);
            for home in [false, true] {
                let mut arrays = PlanArray::on_driver(&shapes);
                for _ in 0..3 {
                    let plan = same(&sched, &arrays, ranks, home);
                    arrays = plan.next_arrays(&arrays);
                }
            }
        }
    }
}
