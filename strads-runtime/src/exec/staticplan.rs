//! A loop's static plan (1D, 2D or a wavefront) for one space, shapes and worker count.

use std::sync::Arc;

use strads_analysis::{LoopSpec, Partition, Strategy, choose_for};

use super::{LoopState, apply_points};
use crate::plan::{self, Schedule};
use crate::space::Space;

/// A static plan: the schedule, the blocks its tasks name, and its plan line.
pub(crate) struct StaticPlan<B> {
    pub(crate) schedule: Schedule,
    pub(crate) blocks: Arc<B>,
    pub(crate) summary: String,
    /// A timing may choose between it and the serial loop (see `cost`): running it gives
    /// the original loop's bits, or results that depend on the threads' timing anyway.
    pub(crate) timed: bool,
    /// Why the plan runs every iteration on one worker, when it does for a reason of the
    /// data: the cost model then hands the call to the serial loop, which is the same.
    pub(crate) alone: Option<&'static str>,
}

/// Whether a plan that keeps the order of every two iterations touching the same element
/// gives the original loop's bits: only when no write-back buffer takes part, and every
/// reduction is exact (integers; an `ordered` loop's float terms, added in the serial
/// order) or a `max`/`min` (a float `+=` folded per block would round otherwise).
/// `sync = "hybrid"`: results depend on the threads' timing, so a timing may also choose
/// the serial loop.
pub(crate) fn timing_dependent(spec: &LoopSpec) -> bool {
    spec.buffers.iter().any(|b| b.shared)
}

/// Whether a timing may choose between a plan and the serial loop (`StaticPlan::timed`):
/// the plan keeps the order of conflicting iterations (`keeps_order`) and merges exactly,
/// or its results depend on timing anyway.
pub(crate) fn timed(spec: &LoopSpec, keeps_order: bool) -> bool {
    keeps_order && merges_exactly(spec) || timing_dependent(spec)
}

pub(crate) fn merges_exactly(spec: &LoopSpec) -> bool {
    use strads_analysis::ReduceOp;
    spec.buffers.is_empty()
        && spec
            .reductions
            .iter()
            .all(|r| r.exact || matches!(r.op, ReduceOp::Max | ReduceOp::Min))
}

impl<B: Send + Sync + 'static> StaticPlan<B> {
    /// The space's iterations in their own order, one block on worker 0 (the other
    /// workers idle): the serial loop's order whatever the indices.
    fn in_entry_order<S: Space<Blocks = B>>(
        spec: &LoopSpec,
        space: &S,
        candidate: &strads_analysis::Candidate,
        p: usize,
    ) -> Self {
        // One part of dim 0: one block, its entries in their stored order (stable buckets).
        let extent = space.extents().first().copied().unwrap_or(0);
        let blocks = space.blocks(&[0], &[Partition::uniform(extent, 1)]);
        let mut schedule = plan::grid::one_block(spec, p);
        schedule.apply = apply_points(spec, p);
        let why = "ordered over entries not in index order: the serial order is the \
                   entries' own, which tiles by index would not keep (`SparseArray::sorted` \
                   puts them in index order, when that is the order meant)";
        StaticPlan {
            schedule,
            blocks,
            summary: format!(
                "{} (one worker: {why})",
                plan::summary::summary(spec, candidate, 1, 1)
            ),
            timed: timed(spec, true),
            alone: Some(why),
        }
    }

    pub(crate) fn new<S: Space<Blocks = B>>(
        state: &LoopState,
        space: &S,
        shapes: &[&[usize]],
        p: usize,
    ) -> Self {
        let spec: &LoopSpec = state.spec();
        let analysis = state.analysis();
        let sizes: Vec<usize> = shapes.iter().map(|s| s.iter().product()).collect();
        let candidate = choose_for(spec, analysis, &sizes, p).unwrap_or_else(|| {
            panic!(
                "strads: loop `{}` has no parallel strategy at run time ({}); the macro should \
                 have refused it (please report it)",
                spec.name,
                analysis.reason.as_deref().unwrap_or("?")
            )
        });
        // An ordered loop keeps the order of every two iterations that touch a common
        // element. A 1D plan keeps each such pair in one block, in the entries' order; tiles
        // and wavefronts order them by index, which is not the serial order of entries
        // stored out of index order: those run in the entries' order on one worker.
        // An exact `+=`/`*=` reduction keys its terms by index order in blocks, so
        // it needs one block too.
        let summed = spec.reductions.iter().any(|r| {
            matches!(
                r.op,
                strads_analysis::ReduceOp::Add | strads_analysis::ReduceOp::Mul
            )
        });
        if spec.ordered
            && !space.in_index_order()
            && (summed || !matches!(candidate.strategy, Strategy::OneD { .. }))
        {
            return Self::in_entry_order(spec, space, candidate, p);
        }
        match candidate.strategy {
            Strategy::OneD { dim } | Strategy::TwoD { space: dim, .. } => {
                let mut parts = vec![space.partition(dim, p)];
                let mut dims = vec![dim];
                if let Strategy::TwoD { time, .. } = candidate.strategy {
                    dims.push(time);
                    parts.push(space.partition(time, p * plan::grid::time_split(spec, p)));
                }
                let blocks = space.blocks(&dims, &parts);
                let mut schedule = plan::grid::schedule(spec, candidate, &parts, shapes, p);
                schedule.apply = apply_points(spec, p);
                let times = parts.get(1).map_or(1, Partition::len);
                // 1D keeps every conflict inside a block; 2D reorders them unless ordered.
                let in_order = dims.len() == 1 || spec.ordered;
                StaticPlan {
                    schedule,
                    blocks,
                    summary: plan::summary::summary(spec, candidate, p, times),
                    timed: timed(spec, in_order),
                    alone: None,
                }
            }
            Strategy::Wavefront { .. } => {
                let mut t = plan::wavefront::plan(spec, candidate, &space.extents(), shapes, p);
                let tiling = &t.tiling;
                let blocks = match &tiling.skewed {
                    None => space.blocks(&tiling.dims, &tiling.parts),
                    Some(sk) => {
                        space.blocks_by(&sk.key, t.schedule.workers * tiling.time_tiles, &|idx| {
                            tiling.block_of(idx)
                        })
                    }
                };
                let workers = t.schedule.workers;
                t.schedule.apply = apply_points(spec, workers);
                let mut summary = plan::summary::summary(spec, candidate, workers, workers);
                summary.push_str(&format!(" tiles={workers}x{}", t.time_tiles));
                if let Some(why) = &t.fallback {
                    summary.push_str(&format!(" (one worker: {why})"));
                }
                StaticPlan {
                    schedule: t.schedule,
                    blocks,
                    summary,
                    // A wavefront keeps every dependence's order.
                    timed: timed(spec, true),
                    alone: None,
                }
            }
            Strategy::Reconnaissance => panic!(
                "strads: loop `{}` needs reconnaissance, but was called without a survey pass \
                 (please report it)",
                spec.name
            ),
        }
    }
}
