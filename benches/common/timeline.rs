//! A probe, not a loop anyone writes: the expansion of `sgd_epoch` (the `sgd_mf` snapshot of
//! `strads-macros`, written out by hand as in `examples/sgd_mf-expanded.rs`) with a
//! timestamp at the start and end of every block, so a bench can see where the time of one
//! parallel call goes: waking the pool, each block, the ring hand-offs, the return.
//!
//! The arithmetic is `sgd_epoch`'s, so a call updates the factors exactly like it.

use std::sync::Mutex;
use std::time::Instant;

use strads::__private::{
    Access, AccessKind, ArraySpec, Call, Cow, LoopSpec, LoopState, SharedMut, SpaceKind, Subscript,
};
use strads::prelude::*;

/// `sgd_epoch`'s spec, as the macro emits it.
const SPEC: LoopSpec = {
    const DIMS: &[Cow<'static, str>] = &[Cow::Borrowed("u"), Cow::Borrowed("i")];
    const ARRAYS: &[ArraySpec] = &[
        ArraySpec::new("ratings", 2, false),
        ArraySpec::new("w", 2, true),
        ArraySpec::new("h", 2, true),
    ];
    const SUB_W: &[Subscript] = &[Subscript::affine(&[1, 0], 0), Subscript::Full];
    const SUB_H: &[Subscript] = &[Subscript::affine(&[0, 1], 0), Subscript::Full];
    const ACCESSES: &[Access] = &[
        Access::new(1, AccessKind::Write, SUB_W, 1),
        Access::new(2, AccessKind::Write, SUB_H, 1),
    ];
    LoopSpec::new(
        "sgd_epoch_timeline",
        DIMS,
        SpaceKind::Array {
            array: 0,
            sparse: true,
        },
        ARRAYS,
        ACCESSES,
        false,
    )
};

static STATE: LoopState = LoopState::new(SPEC);

/// One block of one call: where it ran and when, in ns since the call started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub(crate) step: usize,
    pub(crate) worker: usize,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) ratings: usize,
}

/// One call of the timed expansion: the blocks' spans (sorted by step, then worker) and the
/// call's own duration, in ns.
pub(crate) fn timed_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
) -> (Vec<Span>, u64) {
    let spans = Mutex::new(Vec::new());
    let shapes: [&[usize]; 3] = [&ratings.shape(), &w.shape(), &h.shape()];
    let t0 = Instant::now();
    {
        let (sw, sh) = (SharedMut::new(&mut *w), SharedMut::new(&mut *h));
        // A 2D plan on two workers or more always runs (the cost model hands back only
        // one worker's calls, or plans with the serial loop's bits).
        let ran = Call::new(&STATE, &shapes).run(ratings, |blk| {
            let start = t0.elapsed().as_nanos() as u64;
            let mut w = blk.view_mut(&sw, 1);
            let mut h = blk.view_mut(&sh, 2);
            let mut n = 0usize;
            blk.for_each(|([u, i], &r)| {
                n += 1;
                let (wu, hi) = (w.row_mut(u), h.row_mut(i));
                let err = r - dot(wu, hi);
                super::sgd::update(wu, hi, err, lr, reg);
            });
            let end = t0.elapsed().as_nanos() as u64;
            let (step, worker) = blk.seq();
            spans.lock().unwrap_or_else(|e| e.into_inner()).push(Span {
                step,
                worker,
                start,
                end,
                ratings: n,
            });
        });
        assert!(ran.serial().is_none(), "the timed call runs its plan");
    }
    let total = t0.elapsed().as_nanos() as u64;
    let mut spans = spans.into_inner().unwrap_or_else(|e| e.into_inner());
    spans.sort_by_key(|s| (s.step, s.worker));
    (spans, total)
}
