//! The directory through chains of calls: each call described from it, checked on tags
//! of last writers (`verify`) and run on the simulated network, and what it left learnt.

use super::super::sim::{Link, Sim};
use super::super::tests::sgd_2d;
use super::super::verify::verify;
use super::super::{Elem, Region};
use super::*;

const W: u64 = 1;
const H: u64 = 2;

fn meta(id: u64, version: u64, shape: &[usize], shipped: bool) -> ArrayMeta {
    ArrayMeta {
        id,
        version,
        sparse: false,
        shape: shape.to_vec(),
        entries: 0,
        keys_only: false,
        elem: Elem::F32,
        shipped,
        sent: false,
        holders: Vec::new(),
        held: Vec::new(),
        away: Vec::new(),
        made: None,
    }
}

/// SGD-MF's 2D call on 2 ranks, its arrays at `versions` after the call (each written,
/// so its version before is one less), described by `dir` as the driver does: parts left
/// away are taken from where they are unless `home_first` says the driver read them since.
/// Checked, run in the simulator, and learnt. Returns the metas and the parts left away.
fn call(
    dir: &mut Directory,
    versions: [u64; 2],
    home_first: [bool; 2],
) -> (Vec<ArrayMeta>, Vec<(usize, Parts)>) {
    let (sched, _) = sgd_2d();
    let shapes: [&[usize]; 2] = [&[4, 3], &[6, 3]];
    let metas: Vec<ArrayMeta> = [W, H]
        .iter()
        .enumerate()
        .map(|(a, &id)| {
            let now = versions[a] - 1;
            let away = if home_first[a] {
                dir.came_home(id);
                Vec::new()
            } else {
                dir.away_at(id, now).unwrap_or_default()
            };
            let mut m = meta(id, versions[a], shapes[a], true);
            let u = Use {
                read_by_parts: false,
                now,
                ranks: 2,
            };
            dir.describe(&mut m, away, u);
            m
        })
        .collect();
    let arrays = plan_arrays(&metas);
    assert_eq!(verify(&sched, &arrays, 2, false), Ok(true), "{metas:?}");
    let plan = Itinerary::new(&sched, 2, 1, &arrays, false).expect("a plan that verified");
    let link = Link {
        latency: 10,
        bandwidth: 125.0,
    };
    let mut sim = Sim::new(2, link, 1_000_000, 10_000_000);
    let report = sim.run_call(&sched, &plan, &|_, _| 100, &[4, 4], 1_000_000);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    dir.sent_whole(&metas, 2);
    let left = dir.after_call(&plan, &metas);
    for (a, parts) in &left {
        assert_eq!(*parts, plan.away(*a));
    }
    (metas, left)
}

#[test]
fn parts_stay_where_the_last_call_left_them_until_the_driver_reads_them() {
    let mut dir = Directory::default();
    // The first call starts with everything on the driver and leaves w's rows 2..4 and h's
    // partition 0 on rank 1 alone.
    let (first, left) = call(&mut dir, [1, 1], [false; 2]);
    assert!(first.iter().all(|m| m.away.is_empty() && m.held.is_empty()));
    assert_eq!(
        left,
        vec![
            (0, vec![(Region(vec![(6, 12)]), 1)]),
            (1, vec![(Region(vec![(0, 9)]), 1)]),
        ]
    );
    // Nothing on the driver touched them: the next call takes them from rank 1.
    let (second, _) = call(&mut dir, [2, 2], [false; 2]);
    assert_eq!(second[0].away, left[0].1);
    assert_eq!(second[1].away, left[1].1);
    // The driver read w between calls: it came home, and rank 1's copy is still current.
    let (third, _) = call(&mut dir, [3, 3], [true, false]);
    assert!(third[0].away.is_empty());
    assert!(third[0].held.contains(&(Region(vec![(6, 12)]), 1)));
    assert!(!third[1].away.is_empty());
    // The driver wrote w serially (its version moved on): nothing of the directory's w
    // holds for it, and the call sends it from the driver.
    let (fourth, _) = call(&mut dir, [5, 4], [true, false]);
    assert!(fourth[0].away.is_empty() && fourth[0].held.is_empty());
    assert!(!fourth[1].away.is_empty());
}

#[test]
fn arrays_only_read_travel_whole_once_or_by_regions_after_a_write() {
    let mut dir = Directory::default();
    let u = |now| Use {
        read_by_parts: false,
        now,
        ranks: 2,
    };
    // Ratings-like input: sent whole, then held by every rank at that version.
    let mut r = meta(9, 1, &[10, 2], false);
    dir.describe(&mut r, Vec::new(), u(1));
    assert_eq!((r.shipped, r.holders.clone()), (false, vec![0]));
    dir.sent_whole(std::slice::from_ref(&r), 2);
    let mut again = meta(9, 1, &[10, 2], false);
    dir.describe(&mut again, Vec::new(), u(1));
    assert_eq!(again.holders, vec![0, 1]);
    let mut changed = meta(9, 2, &[10, 2], false);
    dir.describe(&mut changed, Vec::new(), u(2));
    assert_eq!(changed.holders, vec![0]);
    // A model a written call left partly on rank 1, now only read: it travels by regions
    // (a rank gets what it lacks), starting from the copies the ranks hold.
    let (_, _) = call(&mut dir, [1, 1], [false; 2]);
    let mut w = meta(W, 1, &[4, 3], false);
    dir.describe(&mut w, dir.away_at(W, 1).unwrap_or_default(), u(1));
    assert!(w.shipped);
    assert_eq!(w.away, vec![(Region(vec![(6, 12)]), 1)]);
    assert!(!w.held.is_empty());
    // Read by parts (windows that are not the whole array): by regions too.
    let mut parts = meta(10, 1, &[8, 2], false);
    let by_parts = Use {
        read_by_parts: true,
        ..u(1)
    };
    dir.describe(&mut parts, Vec::new(), by_parts);
    assert!(parts.shipped && parts.held.is_empty());
    // What each array is and its bytes, for the memory lines (f32: 4 bytes an element).
    let sizes = dir.sizes();
    assert_eq!(
        sizes.iter().find(|s| s.0 == W),
        Some(&(W, "dense [4, 3] of F32".to_string(), 48))
    );
    assert_eq!(sizes.iter().find(|s| s.0 == 9).map(|s| s.2), Some(80));
    // Of W, elements 6..12 are on rank 1 alone: 6 elements of 4 bytes.
    assert_eq!(dir.away_bytes(W), 24);
    assert_eq!(dir.away_bytes(9), 0);
    // Dropped by the driver: forgotten.
    for id in [W, H, 9] {
        assert!(dir.knows(id));
        dir.forget(id);
        assert!(!dir.knows(id));
    }
    // Their sizes stay for the memory line at the job's end.
    assert_eq!(dir.sizes().len(), 4);
}

/// Serial code on the driver wrote part of what a call left away (`set_away`, the array at
/// its new version): the next call takes that part from the driver, the rest from the
/// rank that still holds it; the copies other ranks held are forgotten.
#[test]
fn a_window_written_on_the_driver_is_taken_from_it() {
    let mut dir = Directory::default();
    let (_, left) = call(&mut dir, [1, 1], [false; 2]);
    assert_eq!(left[0].1, vec![(Region(vec![(6, 12)]), 1)]);
    // The driver wrote w's row 2 (elements 6..9), bringing it home: w is at version 2.
    dir.set_away(W, 2, vec![(Region(vec![(9, 12)]), 1)]);
    assert_eq!(dir.away_at(W, 1), None);
    let (next, _) = call(&mut dir, [3, 2], [false; 2]);
    assert_eq!(next[0].away, vec![(Region(vec![(9, 12)]), 1)]);
    assert!(next[0].held.is_empty());
    // Everything written home: nothing is away.
    dir.set_away(W, 7, Vec::new());
    assert_eq!(dir.away_at(W, 7), None);
}

/// A data set made in place on the ranks (`made_away`): its regions are away until the
/// driver reads them; home, the ranks' copies stay current, so a call that only reads it
/// sends each rank what it lacks, not the whole array; changed on the driver, they are
/// forgotten.
#[test]
fn data_made_in_place_keeps_the_ranks_copies_once_home() {
    let mut dir = Directory::default();
    let u = |now| Use {
        read_by_parts: false,
        now,
        ranks: 2,
    };
    let labels = meta(20, 1, &[10], false);
    let rank1 = vec![(Region(vec![(4, 10)]), 1)];
    dir.made_away(&labels, rank1.clone());
    assert_eq!(dir.away_at(20, 1), Some(rank1.clone()));
    assert_eq!(dir.away_bytes(20), 24);
    // The driver gathered it: nothing away, rank 1's copy current.
    dir.came_home(20);
    let mut m = meta(20, 1, &[10], false);
    dir.describe(&mut m, Vec::new(), u(1));
    assert!(m.shipped && m.away.is_empty());
    assert_eq!(m.held, rank1);
    // Serial code wrote it: the copy is stale, the array travels from the driver.
    dir.set_away(20, 2, Vec::new());
    let mut m = meta(20, 2, &[10], false);
    dir.describe(&mut m, Vec::new(), u(2));
    assert!(!m.shipped && m.held.is_empty());
}
