//! The executor on random loops: every parallel run equals the serial replay of the order
//! its workers recorded, bit for bit, for 1 to 4 workers, over ranges, dense and sparse
//! spaces. The loop body interprets a random spec's accesses, so what runs is exactly what
//! the analysis saw.

use proptest::prelude::*;
use strads_analysis::{AccessKind, LoopSpec, SpaceKind, Subscript};
use strads_runtime::cluster::proto::region;
use strads_runtime::cluster::proto::verify::verify;
use strads_runtime::cluster::proto::{Itinerary, PlanArray};
use strads_runtime::testing::{record, replay};
use strads_runtime::{
    Call, DistArray, GridSpace, LoopState, Parts, RangeSpace, SharedMut, Space, SparseArray, Terms,
    with_threads,
};

#[path = "common/random.rs"]
mod random;
use random::{
    RawAccess, SIDE, body, build, coords, fresh, space_kind, sparse_points, spec_strategy,
    static_plan, stencil_strategy, stepped, structured_strategy, wavefront,
};

/// The parallel run's arrays, the replay's, the plain serial order's, and how many
/// iterations ran.
type Outcome = (
    Vec<DistArray<f64, 2>>,
    Vec<DistArray<f64, 2>>,
    Vec<DistArray<f64, 2>>,
    usize,
);

/// Runs the loop in parallel (recording) and in replay; returns both results.
fn run_both<S: Space>(
    state: &'static LoopState,
    space: &S,
    to_point: impl Fn(&S::Item<'_>) -> Vec<usize> + Sync,
    threads: usize,
) -> Outcome {
    let spec = state.spec();
    let mut par = fresh();
    let shapes: Vec<Vec<usize>> = spec
        .arrays
        .iter()
        .map(|a| {
            if a.name == "space" {
                space.extents()
            } else {
                vec![SIDE, SIDE]
            }
        })
        .collect();
    let shape_refs: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
    let ((), trace) = with_threads(threads, || {
        record(|| {
            let shared: Vec<SharedMut<'_, f64, 2>> = par.iter_mut().map(SharedMut::new).collect();
            let _ = Call::new(state, &shape_refs).run(space, |blk| {
                let mut views: Vec<_> = (0..3).map(|a| blk.view_mut(&shared[a], a)).collect();
                blk.for_each(|it| body(spec, &to_point(&it), &mut views));
            });
        })
    });
    let mut rep = fresh();
    // The replay: the recorded order, serially, through the same entry point.
    replay(&trace, || {
        let shared: Vec<SharedMut<'_, f64, 2>> = rep.iter_mut().map(SharedMut::new).collect();
        let _ = Call::new(state, &shape_refs).run(space, |blk| {
            let mut views: Vec<_> = (0..3).map(|a| blk.view_mut(&shared[a], a)).collect();
            blk.for_each(|it| body(spec, &to_point(&it), &mut views));
        });
    });
    check_schedule(state, space, &to_point, &shape_refs, threads);
    if spec.ordered && space.in_index_order() {
        check_positions(state, space, &to_point, &shape_refs, threads);
    }
    let ran = trace.runs[0].order().len();
    // The plain serial order, for plans that keep every dependence's order.
    let mut nat = fresh();
    for id in 0..space.len() {
        body(spec, &to_point(&space.item(id)), &mut nat);
    }
    (par, rep, nat, ran)
}

/// The places `Block::for_each_at` gives an ordered loop's iterations (what its exact
/// reductions are folded by): every block's run of terms, merged by place, must be the
/// serial order itself, iteration ids `0..n`.
fn check_positions<S: Space>(
    state: &'static LoopState,
    space: &S,
    to_point: &(impl Fn(&S::Item<'_>) -> Vec<usize> + Sync),
    shapes: &[&[usize]],
    threads: usize,
) {
    let ids: std::collections::HashMap<Vec<usize>, usize> = (0..space.len())
        .map(|id| (to_point(&space.item(id)), id))
        .collect();
    let parts = Parts::new();
    strads_runtime::testing::plan_always(|| {
        with_threads(threads, || {
            let _ = Call::new(state, shapes).run(space, |blk| {
                let mut terms = Terms::<f64>::new();
                blk.for_each_at(|at, it| {
                    terms.at(at);
                    terms += ids[&to_point(&it)] as f64;
                });
                parts.push(blk.seq(), terms);
            });
        })
    });
    let all = parts.fold_owned(Terms::new(), |a, b| a.absorb(b));
    let order: Vec<usize> = all
        .into_serial_order()
        .iter()
        .map(|&x| x as usize)
        .collect();
    assert_eq!(
        order,
        (0..space.len()).collect::<Vec<_>>(),
        "the places of an ordered loop's iterations are not the serial order"
    );
}

/// Every element iteration `p` touches: `(array, [i, j], writes)`.
fn touches(spec: &LoopSpec, p: &[usize]) -> Vec<(usize, [usize; 2], bool)> {
    let pv: Vec<i64> = p.iter().map(|&x| x as i64).collect();
    let mut out = Vec::new();
    for a in spec.accesses.iter() {
        let axes: Vec<Vec<usize>> = a
            .subscripts
            .iter()
            .map(|s| match s {
                Subscript::Affine(f) => vec![f.eval(&pv) as usize],
                _ => (0..SIDE).collect(),
            })
            .collect();
        for &i in &axes[0] {
            for &j in &axes[1] {
                out.push((a.array, [i, j], a.kind == AccessKind::Write));
            }
        }
    }
    out
}

/// The loop's static schedule for `threads` workers, checked by brute force: every
/// iteration is in exactly one task; iterations that conflict are in one task or in tasks
/// the schedule orders (in the serial order, for ordered loops and wavefronts over a space
/// in index order); tasks that may run at once have windows that overlap no write; and
/// every element an iteration touches is in its task's window; and the cluster's call plan
/// of the schedule gives every task the serial values of its window (`proto::verify`).
fn check_schedule<S: Space>(
    state: &'static LoopState,
    space: &S,
    to_point: &(impl Fn(&S::Item<'_>) -> Vec<usize> + Sync),
    shapes: &[&[usize]],
    threads: usize,
) {
    let spec = state.spec();
    let planned = state.planned(space, shapes, threads);
    let sched = &planned.schedule;
    // (a) Each iteration in exactly one task; where it is, and its place in the task.
    let n = space.len();
    let mut slot: Vec<Option<((usize, usize), usize)>> = vec![None; n];
    for (t, step) in planned.iterations.iter().enumerate() {
        for (w, ids) in step.iter().enumerate() {
            for (k, &id) in ids.iter().enumerate() {
                assert!(slot[id].is_none(), "iteration {id} is in two tasks");
                slot[id] = Some(((t, w), k));
            }
        }
    }
    let slot: Vec<((usize, usize), usize)> = slot
        .into_iter()
        .enumerate()
        .map(|(id, s)| s.unwrap_or_else(|| panic!("iteration {id} is in no task")))
        .collect();
    let touched: Vec<Vec<(usize, [usize; 2], bool)>> = (0..n)
        .map(|id| touches(spec, &to_point(&space.item(id))))
        .collect();
    // (d) Every element in the task's window.
    for id in 0..n {
        let (t, w) = slot[id].0;
        let task = sched.task(t, w).expect("a task holds it");
        for &(a, idx, write) in &touched[id] {
            let win = &sched.windows[task.windows][a];
            assert_eq!(
                win.admits(&idx, write),
                Some(true),
                "iteration {id} (task {:?}) touches {idx:?} of array {a} (write {write}) \
                 outside its window {win:?}; plan {}",
                (t, w),
                planned.summary
            );
        }
    }
    // (d') Across processes the same: every element an iteration touches is in the region
    // its task receives, and every element it writes in the region it sends back.
    for id in 0..n {
        let (t, w) = slot[id].0;
        let task = sched.task(t, w).expect("a task holds it");
        for &(a, idx, write) in &touched[id] {
            let win = &sched.windows[task.windows][a];
            let Some((access, written)) = region::task_regions(win, shapes[a]) else {
                continue; // reconnaissance: the claims decide
            };
            let e = (idx[0] * shapes[a][1] + idx[1]) as u64;
            let holds = |r: &region::Region| r.0.iter().any(|&(lo, hi)| lo <= e && e < hi);
            assert!(
                holds(&access) && (!write || holds(&written)),
                "iteration {id} touches {idx:?} of array {a} (write {write}) outside its \
                 task's regions across processes {access:?} / {written:?} (window {win:?}); \
                 plan {}",
                planned.summary
            );
        }
    }
    // (b) Conflicting iterations never in tasks that may run at once.
    let clocks = sched.clocks();
    let before = |(t1, w1): (usize, usize), (t2, w2): (usize, usize)| {
        clocks[t2][w2][w1].is_some_and(|c| c >= t1)
    };
    // Ids are positions in the serial order: an ordered loop keeps it whatever the
    // indices; an unordered wavefront keeps index order.
    let keeps_order = spec.ordered || (wavefront(spec) && space.in_index_order());
    // Pairs of iterations that touch a common element, one of them writing it.
    type Users = Vec<(usize, bool)>;
    let mut by_element: std::collections::HashMap<(usize, [usize; 2]), Users> =
        std::collections::HashMap::new();
    for (id, t) in touched.iter().enumerate() {
        for &(a, idx, write) in t {
            by_element.entry((a, idx)).or_default().push((id, write));
        }
    }
    let mut pairs = std::collections::HashSet::new();
    for users in by_element.values() {
        if !users.iter().any(|u| u.1) {
            continue;
        }
        for (k, &(x, wx)) in users.iter().enumerate() {
            for &(y, wy) in &users[k + 1..] {
                if x != y && (wx || wy) {
                    pairs.insert((x.min(y), x.max(y)));
                }
            }
        }
    }
    for (x, y) in pairs {
        let ((sx, kx), (sy, ky)) = (slot[x], slot[y]);
        let ordered_fwd = if sx == sy { kx < ky } else { before(sx, sy) };
        let ordered_back = if sx == sy { ky < kx } else { before(sy, sx) };
        assert!(
            ordered_fwd || ordered_back,
            "iterations {x} (task {sx:?}) and {y} (task {sy:?}) conflict and may run at \
             once; plan {}",
            planned.summary
        );
        if keeps_order {
            assert!(
                ordered_fwd,
                "iterations {x} and {y} conflict and run out of serial order; plan {}",
                planned.summary
            );
        }
    }
    // (c) The schedule's own check agrees.
    if sched.workers > 1 {
        assert_eq!(sched.overlap(shapes), None, "plan {}", planned.summary);
    }
    // (e) Across processes (2 ranks, and a rank per worker): the call plan gives each task
    // the serial values of its window and brings every final value to the driver.
    let arrays = PlanArray::on_driver(shapes);
    for ranks in [2, sched.workers] {
        if ranks > 1 && sched.workers % ranks == 0 {
            verify(sched, &arrays, ranks, true)
                .unwrap_or_else(|e| panic!("plan {} on {ranks} ranks: {e}", planned.summary));
            // The next call of the same loop, starting from the copies this one left; and
            // a chain of calls that leave the written parts where they were written, each
            // starting from where the last left them.
            let threads = sched.workers / ranks;
            if let Ok(plan) = Itinerary::new(sched, ranks, threads, &arrays, true) {
                verify(sched, &plan.next_arrays(&arrays), ranks, true).unwrap_or_else(|e| {
                    panic!("plan {} on {ranks} ranks, again: {e}", planned.summary)
                });
                let mut placed = arrays.clone();
                for call in 0..2 {
                    verify(sched, &placed, ranks, false).unwrap_or_else(|e| {
                        panic!(
                            "plan {} on {ranks} ranks, in place {call}: {e}",
                            planned.summary
                        )
                    });
                    let plan = Itinerary::new(sched, ranks, threads, &placed, false)
                        .expect("a plan that verified");
                    placed = plan.next_arrays(&placed);
                }
                // The last call's parts come home: the driver ends with every value.
                verify(sched, &placed, ranks, true).unwrap_or_else(|e| {
                    panic!(
                        "plan {} on {ranks} ranks, home after in place: {e}",
                        planned.summary
                    )
                });
            }
        }
    }
}

/// The checker rejects a wrong schedule: the 2D rotation without the hand-off wait lets
/// two blocks that share a time partition run at once.
#[test]
fn the_schedule_checks_catch_a_missing_wait() {
    let raw: Vec<RawAccess> = vec![
        (0, true, vec![(0, 1, 0, false), (0, 1, 0, true)]),
        (1, true, vec![(1, 1, 0, false), (0, 1, 0, true)]),
    ];
    let spec = build(
        2,
        &raw,
        SpaceKind::Array {
            array: 3,
            sparse: false,
        },
        false,
    );
    let state: &'static LoopState = Box::leak(Box::new(LoopState::new(spec)));
    let space = DistArray::<u8, 2>::zeros([4, 4]);
    let shapes: [&[usize]; 4] = [&[SIDE, SIDE], &[SIDE, SIDE], &[SIDE, SIDE], &[4, 4]];
    let planned = state.planned(&space, &shapes, 2);
    assert!(planned.summary.starts_with("2d"), "{}", planned.summary);
    assert_eq!(planned.schedule.overlap(&shapes), None);
    let mut wrong = planned.schedule.clone();
    for step in &mut wrong.steps {
        for task in step.tasks.iter_mut().flatten() {
            task.after.clear();
        }
    }
    assert!(wrong.overlap(&shapes).is_some());
    // 2 workers x 4 steps (two time partitions each): without the waits every pair of
    // tasks on different workers may run at once, all 28 pairs but the 12 on one worker.
    assert_eq!(wrong.concurrent_pairs().len(), 28 - 12);
}

fn bits(v: &[DistArray<f64, 2>]) -> Vec<u64> {
    v.iter().flat_map(strads_runtime::testing::bits).collect()
}

fn check(
    ordered: bool,
    n_dims: usize,
    raw: &[RawAccess],
    extent: usize,
    threads: usize,
    sparse_seed: u64,
    kind: u8,
) -> Result<(), TestCaseError> {
    let space_kind = space_kind(kind, n_dims);
    let spec = build(n_dims, raw, space_kind, ordered);
    prop_assume!(static_plan(&spec));
    let state: &'static LoopState = Box::leak(Box::new(LoopState::new(spec)));
    let mut in_index_order = true;
    let (par, rep, nat, ran) = match space_kind {
        // A nest of stepped ranges: the body sees each dim's coordinate.
        SpaceKind::Range if kind == 3 => {
            let dim = |d: usize| stepped(d, extent);
            let n = (extent + 1).pow(n_dims as u32);
            let out = match n_dims {
                1 => run_both(state, &GridSpace::new([dim(0)]), |p| coords(p), threads),
                2 => run_both(
                    state,
                    &GridSpace::new([dim(0), dim(1)]),
                    |p| coords(p),
                    threads,
                ),
                _ => run_both(
                    state,
                    &GridSpace::new([dim(0), dim(1), dim(2)]),
                    |p| coords(p),
                    threads,
                ),
            };
            prop_assert_eq!(out.3, n);
            out
        }
        SpaceKind::Range => {
            let r = RangeSpace::new(0, extent + 1);
            let out = run_both(state, &r, |&i| vec![i], threads);
            prop_assert_eq!(out.3, extent + 1);
            out
        }
        SpaceKind::Array { sparse: true, .. } => {
            // Random entries of an extent^n box, half the time in index order; else in
            // the generator's order, which an ordered loop keeps too.
            let pts = sparse_points(extent, n_dims, sparse_seed);
            in_index_order = pts.is_sorted();
            match n_dims {
                1 => {
                    let s = SparseArray::from_entries(
                        [extent],
                        pts.iter().map(|p| ([p[0]], 0u8)).collect(),
                    )
                    .unwrap();
                    let n = s.nnz();
                    let o = run_both(state, &s, |(k, _)| k.to_vec(), threads);
                    prop_assert_eq!(o.3, n);
                    o
                }
                2 => {
                    let s = SparseArray::from_entries(
                        [extent, extent],
                        pts.iter().map(|p| ([p[0], p[1]], 0u8)).collect(),
                    )
                    .unwrap();
                    let n = s.nnz();
                    let o = run_both(state, &s, |(k, _)| k.to_vec(), threads);
                    prop_assert_eq!(o.3, n);
                    o
                }
                _ => {
                    let s = SparseArray::from_entries(
                        [extent, extent, extent],
                        pts.iter().map(|p| ([p[0], p[1], p[2]], 0u8)).collect(),
                    )
                    .unwrap();
                    let n = s.nnz();
                    let o = run_both(state, &s, |(k, _)| k.to_vec(), threads);
                    prop_assert_eq!(o.3, n);
                    o
                }
            }
        }
        SpaceKind::Array { .. } => match n_dims {
            1 => {
                let d = DistArray::<u8, 1>::zeros([extent]);
                run_both(state, &d, |(k, _)| k.to_vec(), threads)
            }
            2 => {
                let d = DistArray::<u8, 2>::zeros([extent, extent]);
                run_both(state, &d, |(k, _)| k.to_vec(), threads)
            }
            _ => {
                let d = DistArray::<u8, 3>::zeros([extent, extent, extent]);
                run_both(state, &d, |(k, _)| k.to_vec(), threads)
            }
        },
    };
    let _ = ran;
    prop_assert_eq!(bits(&par), bits(&rep));
    // Unordered wavefronts keep every dependence's order by index: when the space is in
    // index order, the plain serial order gives the same result.
    // Ordered loops keep the space's own order, in index order or not.
    if ordered || (wavefront(state.spec()) && in_index_order) {
        prop_assert_eq!(bits(&par), bits(&nat));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn parallel_equals_replay((n_dims, raw) in spec_strategy(), ordered in any::<bool>(), extent in 1usize..6, threads in 1usize..=4, sparse_seed in any::<u64>(), kind in 0u8..4) {
        check(ordered, n_dims, &raw, extent, threads, sparse_seed, kind)?;
    }

    #[test]
    fn factor_shaped_parallel_equals_replay((n_dims, raw) in structured_strategy(), ordered in any::<bool>(), extent in 1usize..7, threads in 1usize..=4, sparse_seed in any::<u64>(), kind in 1u8..4) {
        check(ordered, n_dims, &raw, extent, threads, sparse_seed, kind)?;
    }

    #[test]
    fn stencils_equal_replay_and_keep_order((n_dims, raw) in stencil_strategy(), ordered in any::<bool>(), extent in 2usize..7, threads in 1usize..=4, sparse_seed in any::<u64>(), kind in 1u8..4) {
        check(ordered, n_dims, &raw, extent, threads, sparse_seed, kind)?;
    }
}
