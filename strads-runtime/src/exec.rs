//! The local executor: plans a loop call, then runs its blocks on an owned rayon pool.
//!
//! 1D plans run P blocks side by side. 2D plans run Orion's unordered schedule: worker `w`
//! runs block `(w, (w + t) mod P)` at step `t`; when it is done with a time partition it hands
//! it to worker `w - 1`, which needs it next. There is no barrier between steps: a worker
//! waits only for the one partition it needs, so blocks of the rotated array travel around
//! the ring by a pointer hand-off and nothing is copied.

use std::any::Any;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use strads_analysis::{
    Analysis, Candidate, LoopSpec, Partition, Placement, Strategy, Unordered2d, analyze, choose,
};

use crate::array::view::{SharedMut, ViewMut, WORKER_BITS, Window};
use crate::pool::{as_worker, broadcast, current_threads, in_worker, prefetch};
use crate::space::Space;
use crate::testing::{self, LoopRun};

/// Plans kept per loop, at most; the oldest goes first.
const MAX_PLANS: usize = 32;

/// Everything strads keeps about one `#[parallel_for]` loop: its spec, its analysis and its
/// plans. The macro puts one in a `static` inside the generated function.
pub struct LoopState {
    spec: LoopSpec,
    /// Arrays in write-back buffers (`buffer(..)`), for plan lines.
    buffers: &'static [&'static str],
    /// `buffer(.., max_delay = n)`: buffers are applied at least every `n` iterations of
    /// each worker.
    max_delay: Option<usize>,
    /// Per array, the iteration dim whose index picks the row the body touches, if one
    /// does (`w.row_mut(u)`, `ndk[[d, k]]`): what blocks prefetch.
    row_dims: OnceLock<Vec<Option<usize>>>,
    analysis: OnceLock<Analysis>,
    pub(crate) plans: Mutex<Vec<(String, Arc<dyn Any + Send + Sync>)>>,
    explained: AtomicBool,
}

impl std::fmt::Debug for LoopState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopState")
            .field("loop", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl LoopState {
    /// State for the loop `spec`, for a `static`.
    pub const fn new(spec: LoopSpec) -> Self {
        Self::with_buffers(spec, &[])
    }

    /// State for the loop `spec` whose arrays `buffers` are write-back buffers.
    pub const fn with_buffers(spec: LoopSpec, buffers: &'static [&'static str]) -> Self {
        LoopState {
            spec,
            buffers,
            max_delay: None,
            row_dims: OnceLock::new(),
            analysis: OnceLock::new(),
            plans: Mutex::new(Vec::new()),
            explained: AtomicBool::new(false),
        }
    }

    /// The same state, its buffers applied at least every `n` iterations of each worker.
    pub const fn with_max_delay(mut self, n: usize) -> Self {
        self.max_delay = Some(if n == 0 { 1 } else { n });
        self
    }

    /// A plan line with the write-back buffers named.
    fn with_buffer_note(&self, summary: &str) -> String {
        match (self.buffers.is_empty(), self.max_delay) {
            (true, _) => summary.to_string(),
            (false, None) => format!("{summary} buffered={}", self.buffers.join(",")),
            (false, Some(n)) => format!(
                "{summary} buffered={} max_delay={n}",
                self.buffers.join(",")
            ),
        }
    }

    /// The loop's spec.
    pub fn spec(&self) -> &LoopSpec {
        &self.spec
    }

    /// Under `STRADS_EXPLAIN=1`, says once that this loop runs its original serial loop.
    pub fn explain_serial(&self) {
        if explain_requested() && !self.explained.swap(true, Ordering::Relaxed) {
            eprintln!(
                "strads plan {}: serial (the original loop: STRADS_SERIAL=1 or the `serial` \
                 feature)",
                self.spec.name
            );
        }
    }

    /// Per array, the dim whose index is the first subscript of one of its accesses
    /// (coefficient 1, no constant): the row an iteration reaches by its key.
    fn row_dims(&self) -> &[Option<usize>] {
        self.row_dims.get_or_init(|| {
            (0..self.spec.arrays.len())
                .map(|a| {
                    self.spec
                        .accesses
                        .iter()
                        .filter(|acc| acc.array == a)
                        .find_map(|acc| match acc.subscripts.first() {
                            Some(strads_analysis::Subscript::Affine(f)) if f.constant == 0 => {
                                let mut dims = f.dims();
                                let d = dims.next()?;
                                (dims.next().is_none() && f.coeffs[d] == 1).then_some(d)
                            }
                            _ => None,
                        })
                })
                .collect()
        })
    }

    /// The loop's analysis, computed on first use.
    pub fn analysis(&self) -> &Analysis {
        self.analysis.get_or_init(|| analyze(&self.spec))
    }

    pub(crate) fn plan<S: Space>(
        &'static self,
        space: &S,
        shapes: &[&[usize]],
        p: usize,
    ) -> Arc<Plan<S::Blocks>> {
        let key = format!("{}:{p}:{shapes:?}", space.identity());
        {
            let plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, plan)) = plans.iter().find(|(k, _)| *k == key) {
                if let Ok(plan) = Arc::clone(plan).downcast::<Plan<S::Blocks>>() {
                    return plan;
                }
            }
        }
        let plan = Arc::new(Plan::new(self, space, shapes, p));
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if plans.len() >= MAX_PLANS {
            plans.remove(0);
        }
        plans.push((key, plan.clone()));
        plan
    }
}

/// How the blocks of a plan are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sched {
    /// P blocks side by side.
    OneD,
    /// Orion's unordered 2D rotation over P x P blocks.
    Rotation,
    /// A wavefront pipeline over P x `time_tiles` tiles.
    Pipeline { time_tiles: usize },
}

/// How one call of a loop runs: the schedule, the blocks and every block's windows.
pub(crate) struct Plan<B> {
    sched: Sched,
    p: usize,
    pub(crate) blocks: Arc<B>,
    /// `windows[block][array]`.
    windows: Vec<Vec<Window>>,
    summary: String,
}

impl<B: Send + Sync + 'static> Plan<B> {
    fn new<S: Space<Blocks = B>>(
        state: &'static LoopState,
        space: &S,
        shapes: &[&[usize]],
        p: usize,
    ) -> Self {
        let spec = &state.spec;
        let analysis = state.analysis();
        if spec.ordered && !space.in_index_order() {
            panic!(
                "strads: `{}` is an ordered loop, which keeps the order of its indices, but it \
                 iterates a SparseArray whose entries are not in index order; sort it first \
                 (`SparseArray::sorted`)",
                spec.name
            );
        }
        let sizes: Vec<usize> = shapes.iter().map(|s| s.iter().product()).collect();
        let candidate = choose(analysis, &sizes, p).unwrap_or_else(|| {
            panic!(
                "strads: loop `{}` has no parallel strategy at run time ({}); the macro should \
                 have refused it (please report it)",
                spec.name,
                analysis.reason.as_deref().unwrap_or("?")
            )
        });
        let (dims, sched) = match candidate.strategy {
            Strategy::OneD { dim } => (vec![dim], Sched::OneD),
            Strategy::TwoD { space, time } => (vec![space, time], Sched::Rotation),
            Strategy::Reconnaissance => panic!(
                "strads: loop `{}` needs reconnaissance, but was called without a recording \
                 pass (please report it)",
                spec.name
            ),
            Strategy::Wavefront { .. } => {
                let t = crate::wavefront::plan(spec, candidate, space, p);
                let mut summary = summary(spec, candidate, t.p);
                summary.push_str(&format!(" tiles={}x{}", t.p, t.time_tiles));
                if let Some(why) = &t.fallback {
                    summary.push_str(&format!(" (one worker: {why})"));
                }
                return Plan {
                    sched: Sched::Pipeline {
                        time_tiles: t.time_tiles,
                    },
                    p: t.p,
                    blocks: t.blocks,
                    windows: t.windows,
                    summary,
                };
            }
        };
        let parts: Vec<Partition> = dims.iter().map(|&d| space.partition(d, p)).collect();
        let blocks = space.blocks(&dims, &parts);
        let n_blocks = p.pow(dims.len() as u32);
        let windows = (0..n_blocks)
            .map(|b| {
                let (s, t) = if dims.len() == 2 {
                    (b / p, b % p)
                } else {
                    (b, 0)
                };
                (0..spec.arrays.len())
                    .map(|a| window(spec, candidate, &parts, shapes, a, s, t))
                    .collect()
            })
            .collect();
        Plan {
            sched,
            p,
            blocks,
            windows,
            summary: summary(spec, candidate, p),
        }
    }
}

fn window(
    spec: &LoopSpec,
    c: &Candidate,
    parts: &[Partition],
    shapes: &[&[usize]],
    array: usize,
    s: usize,
    t: usize,
) -> Window {
    let writable = spec.arrays[array].mutable;
    let (align, part) = match c.placements[array] {
        Placement::Local(al) => (al, parts[0].range(s)),
        Placement::Rotated(al) => (al, parts[1].range(t)),
        Placement::Shared
        | Placement::Iterated
        | Placement::Unused
        | Placement::Tiled
        | Placement::Recorded => {
            return Window::All { writable: false };
        }
    };
    if !align.is_uniform() {
        // Strided accesses with different constants: the indices themselves.
        return Window::Lattice {
            align,
            lo: part.0,
            hi: part.1,
            writable,
        };
    }
    let extent = shapes[array][align.axis];
    let (lo, hi) = align.image(part.0, part.1, extent);
    Window::Range {
        axis: align.axis,
        lo,
        hi,
        writable,
    }
}

fn summary(spec: &LoopSpec, c: &Candidate, p: usize) -> String {
    let mut s = String::new();
    let _ = match c.strategy {
        Strategy::OneD { dim } => write!(s, "1d dim={} workers={p} blocks={p}", spec.dims[dim]),
        Strategy::Reconnaissance => write!(s, "reconnaissance workers={p}"),
        Strategy::Wavefront { space, time, .. } => {
            let skew = if strads_analysis::is_identity(&c.skew) {
                String::new()
            } else {
                format!(" skew={:?}", c.skew)
                    .replace(' ', "")
                    .replacen("skew=", " skew=", 1)
            };
            write!(
                s,
                "{}{skew} space={} time={} workers={p}",
                c.strategy.kind(),
                spec.dims[space],
                spec.dims[time]
            )
        }
        Strategy::TwoD { space, time } => write!(
            s,
            "2d space={} time={} workers={p} blocks={p}x{p}",
            spec.dims[space], spec.dims[time]
        ),
    };
    // ` label=a,b` for the arrays whose placement `is` picks.
    let mut list = |label: &str, is: fn(&Placement) -> bool| {
        let names: Vec<&str> = c
            .placements
            .iter()
            .zip(spec.arrays.iter())
            .filter(|(pl, _)| is(pl))
            .map(|(_, a)| a.name.as_ref())
            .collect();
        if !names.is_empty() {
            let _ = write!(s, " {label}={}", names.join(","));
        }
    };
    list("tiled", |pl| matches!(pl, Placement::Tiled));
    list("local", |pl| matches!(pl, Placement::Local(_)));
    list("rotated", |pl| matches!(pl, Placement::Rotated(_)));
    list("shared", |pl| matches!(pl, Placement::Shared));
    s
}

/// Whether `STRADS_EXPLAIN` asks for plan lines.
fn explain_requested() -> bool {
    crate::config::get().explain
}

/// Whether reconnaissance may split components too large for one worker
/// (`STRADS_SPLIT=0` turns it off, to compare).
fn split_allowed() -> bool {
    crate::config::get().split
}

/// Whether the original serial loops should run: `STRADS_SERIAL=1`, or inside
/// [`testing::serial`].
pub fn serial_env() -> bool {
    crate::config::get().serial || testing::forced_serial()
}

/// One block of one loop call, as the generated code sees it.
pub struct Block<'a, S: Space> {
    state: &'static LoopState,
    space: &'a S,
    pub(crate) blocks: Option<&'a S::Blocks>,
    /// Reconnaissance blocks are lists of iteration ids instead of `blocks[id]`.
    list: Option<&'a [u32]>,
    pub(crate) id: usize,
    seq: (usize, usize),
    windows: &'a [Window],
    pub(crate) trace: Option<Vec<usize>>,
    /// Loops with write-back buffers: where they are applied.
    pub(crate) rounds: Option<&'a Rounds<'a>>,
    /// Whether the block ends its worker's part of a step (buffers are applied after it).
    pub(crate) step_end: bool,
    /// Arrays whose rows the iterations reach by key, registered as their views are made.
    pub(crate) streams: std::cell::RefCell<Vec<prefetch::RowStream>>,
    /// The loop call the block belongs to (unique per call, never 0).
    call: u64,
    /// Arrays (indices into the spec) the block has a view of: one each.
    viewed: std::cell::RefCell<Vec<usize>>,
}

/// A number for a new loop call: never 0, never repeated.
fn next_call() -> u64 {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    CALLS.fetch_add(1, Ordering::Relaxed)
}

impl<S: Space> std::fmt::Debug for Block<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("loop", &self.state.spec.name)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<'a, S: Space> Block<'a, S> {
    /// This worker's view of array `array` (an index into the loop's spec) for the block.
    ///
    /// # Panics
    /// When the block already has a view of `array` (two would alias), or `shared` was
    /// lent as another array or to another call: the windows the plan gives array `array`
    /// in this call are what keep workers apart, so a `SharedMut` serves one array of one
    /// call, and each block views it once.
    pub fn view_mut<'s, T, const N: usize>(
        &self,
        shared: &'s SharedMut<'_, T, N>,
        array: usize,
    ) -> ViewMut<'s, T, N>
    where
        'a: 's,
    {
        let name: &'static str = self.state.spec.arrays[array].name.as_ref();
        if !shared.lend_to(self.call, array) {
            panic!(
                "strads: a SharedMut lent to another array or another call was given as `{name}` \
                 of loop `{}`: each is lent to one array of one call (please report it)",
                self.state.spec.name
            );
        }
        {
            let mut viewed = self.viewed.borrow_mut();
            if viewed.contains(&array) {
                panic!(
                    "strads: a second view of `{name}` in one block of loop `{}` would alias the \
                     first (please report it)",
                    self.state.spec.name
                );
            }
            viewed.push(array);
        }
        if let Some(Some(dim)) = self.state.row_dims().get(array) {
            let shape = shared.shape();
            self.streams.borrow_mut().push(prefetch::RowStream {
                base: shared.ptr() as usize,
                row_bytes: shape[1..].iter().product::<usize>() * std::mem::size_of::<T>(),
                array_bytes: shape.iter().product::<usize>() * std::mem::size_of::<T>(),
                dim: *dim,
            });
        }
        shared.view(name, &self.windows[array])
    }

    /// Where the block runs in the schedule: `(step, worker)`. Blocks of one step touch
    /// disjoint data; folding per-block results in `seq` order is deterministic for a
    /// worker count, and the serial replay folds in the same order.
    pub fn seq(&self) -> (usize, usize) {
        self.seq
    }

    /// Runs `f` over the block's iterations in order.
    #[inline]
    pub fn for_each<F: FnMut(S::Item<'a>)>(&mut self, mut f: F) {
        if let Some(rounds) = self.rounds {
            // Buffers are applied between iterations: count them.
            let mut i = 0usize;
            let mut go = true;
            self.for_each_plain(|item| {
                if go && rounds.before(i) {
                    i += 1;
                    f(item);
                } else {
                    go = false;
                }
            });
            if go && self.step_end {
                rounds.end_step();
            }
            return;
        }
        self.for_each_plain(f)
    }

    #[inline]
    fn for_each_plain<F: FnMut(S::Item<'a>)>(&mut self, mut f: F) {
        // Iterations reaching rows by their keys: request the rows `AHEAD` entries early.
        let streams = prefetch::worth_it(std::mem::take(&mut *self.streams.borrow_mut()));
        if !streams.is_empty()
            && self.list.is_none()
            && let Some(blocks) = self.blocks
            && let Some((keys, stride)) = self.space.block_keys(blocks, self.id)
            && stride > 0
        {
            let ahead = prefetch::AHEAD * stride;
            for k in keys.chunks_exact(stride).take(prefetch::AHEAD) {
                streams.iter().for_each(|s| s.fetch(k));
            }
            let mut next = ahead;
            self.space
                .for_each_in(blocks, self.id, self.trace.as_mut(), |item| {
                    if let Some(k) = keys.get(next..next + stride) {
                        streams.iter().for_each(|s| s.fetch(k));
                    }
                    next += stride;
                    f(item)
                });
            return;
        }
        if let Some(ids) = self.list {
            if let Some(t) = self.trace.as_mut() {
                t.extend(ids.iter().map(|&i| i as usize));
            }
            for &id in ids {
                f(self.space.item(id as usize));
            }
            return;
        }
        let blocks = self
            .blocks
            .expect("a block is a list or one of the plan's blocks");
        self.space
            .for_each_in(blocks, self.id, self.trace.as_mut(), f);
    }
}

/// Runs one call of a loop: plan (cached), then the blocks on the pool. `f` runs one block.
pub fn run<S, F>(state: &'static LoopState, space: &S, shapes: &[&[usize]], f: F)
where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    run_inner(state, space, shapes, f, None)
}

/// [`run`] for a loop with write-back buffers: `apply` applies them (every worker parked)
/// at the end of every step and every `max_delay` iterations of each worker.
pub fn run_buffered<S, F>(
    state: &'static LoopState,
    space: &S,
    shapes: &[&[usize]],
    f: F,
    apply: &(dyn Fn(&Parked) + Sync),
) where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    run_inner(state, space, shapes, f, Some(apply))
}

fn run_inner<S, F>(
    state: &'static LoopState,
    space: &S,
    shapes: &[&[usize]],
    f: F,
    apply: Option<&(dyn Fn(&Parked) + Sync)>,
) where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    let p = if in_worker() { 1 } else { current_threads() };
    let plan = state.plan(space, shapes, p);
    if explain_requested() && !state.explained.swap(true, Ordering::Relaxed) {
        eprintln!(
            "strads plan {}: {}",
            state.spec.name,
            state.with_buffer_note(&plan.summary)
        );
    }
    let tracing = testing::recording();
    let call = next_call();
    let barrier = PhaseBarrier::new(plan.p);
    let rounds = apply.map(|apply| Rounds {
        call,
        every: state.max_delay,
        barrier: (plan.p > 1).then_some(&barrier),
        apply,
        count: std::sync::atomic::AtomicUsize::new(0),
    });
    let run_block = |id: usize, seq: (usize, usize)| -> Vec<usize> {
        let _guard = rounds.as_ref().map(|_| BreakOnPanic(&barrier));
        let mut blk = Block {
            state,
            space,
            blocks: Some(&plan.blocks),
            list: None,
            id,
            seq,
            windows: &plan.windows[id],
            trace: tracing.then(Vec::new),
            rounds: rounds.as_ref(),
            step_end: true,
            streams: Default::default(),
            call,
            viewed: Default::default(),
        };
        f(&mut blk);
        blk.trace.unwrap_or_default()
    };
    // A worker with nothing to run in a step still takes part in its rounds.
    let idle = || {
        let _guard = BreakOnPanic(&barrier);
        if let Some(r) = &rounds {
            r.end_step();
        }
    };
    let steps: Vec<Vec<Vec<usize>>> = match plan.sched {
        Sched::Pipeline { time_tiles } => pipeline(
            plan.p,
            time_tiles,
            &run_block,
            rounds
                .as_ref()
                .filter(|_| plan.p > 1)
                .map(|_| &idle as &(dyn Fn() + Sync)),
        ),
        _ if plan.p == 1 => vec![vec![as_worker(|| run_block(0, (0, 0)))]],
        Sched::OneD => {
            let per_worker = broadcast(plan.p, |w| as_worker(|| run_block(w, (0, w))));
            vec![per_worker]
        }
        Sched::Rotation => ring(&plan, &run_block),
    };
    if tracing {
        testing::push_run(LoopRun {
            loop_name: state.spec.name.to_string(),
            plan: state.with_buffer_note(&plan.summary),
            applied: vec![apply.is_some(); steps.len()],
            max_delay: state.max_delay.filter(|_| apply.is_some()),
            steps,
        });
    }
}

type Link = (Sender<()>, Receiver<()>);

/// A pipeline worker's links: from the worker before, to the worker after.
type PipeEnds = (Option<Receiver<()>>, Option<Sender<()>>);

/// Orion's unordered 2D schedule on `p` workers with a token ring instead of barriers.
fn ring<B>(
    plan: &Plan<B>,
    run_block: &(dyn Fn(usize, (usize, usize)) -> Vec<usize> + Sync),
) -> Vec<Vec<Vec<usize>>> {
    let p = plan.p;
    let sched = Unordered2d { p };
    // Worker w receives from w + 1 and sends to w - 1 (`next_holder`).
    let (txs, rxs): (Vec<Sender<()>>, Vec<Receiver<()>>) = (0..p).map(|_| channel()).unzip();
    let mut links: Vec<Option<Link>> = Vec::with_capacity(p);
    let mut txs: Vec<Option<Sender<()>>> = txs.into_iter().map(Some).collect();
    for (w, rx) in rxs.into_iter().enumerate() {
        let tx = txs[sched.next_holder(w)].take();
        links.push(tx.map(|tx| (tx, rx)));
    }
    let links = Mutex::new(links);
    let per_worker: Vec<Vec<Vec<usize>>> = broadcast(p, |w| {
        let (to_next, from_prev) = links.lock().unwrap_or_else(|e| e.into_inner())[w]
            .take()
            .expect("each worker takes its link once");
        let mut mine = Vec::with_capacity(p);
        as_worker(|| {
            for t in 0..p {
                // The time partition arrives from the worker that ran it at step t - 1; if
                // that worker died, stop: its panic is reported by the pool.
                if t > 0 && from_prev.recv().is_err() {
                    return;
                }
                let (s, tp) = sched.block(w, t);
                mine.push(run_block(s * p + tp, (t, w)));
                if t + 1 < p {
                    let _ = to_next.send(());
                }
            }
        });
        mine
    });
    (0..p)
        .map(|t| {
            (0..p)
                .map(|w| per_worker[w].get(t).cloned().unwrap_or_default())
                .collect()
        })
        .collect()
}

/// A wavefront on `p` workers: worker `s` runs tiles `(s, 0), (s, 1), ..`, each after
/// worker `s - 1` has finished the same time tile. The equivalent serial order is by
/// anti-diagonal `s + t` (the step), worker by worker.
/// With write-back buffers, `idle` runs in the steps where a worker has no tile, so that
/// every worker takes part in every step's application points.
fn pipeline(
    p: usize,
    time_tiles: usize,
    run_block: &(dyn Fn(usize, (usize, usize)) -> Vec<usize> + Sync),
    idle: Option<&(dyn Fn() + Sync)>,
) -> Vec<Vec<Vec<usize>>> {
    let per_worker: Vec<Vec<Vec<usize>>> = if p == 1 {
        vec![as_worker(|| {
            (0..time_tiles).map(|t| run_block(t, (t, 0))).collect()
        })]
    } else {
        // Link w carries "time tile t is done" from worker w to worker w + 1.
        let (txs, rxs): (Vec<Sender<()>>, Vec<Receiver<()>>) =
            (0..p - 1).map(|_| channel()).unzip();
        let mut rxs: Vec<Option<Receiver<()>>> = rxs.into_iter().map(Some).collect();
        let mut txs: Vec<Option<Sender<()>>> = txs.into_iter().map(Some).collect();
        let ends: Vec<Option<PipeEnds>> = (0..p)
            .map(|w| {
                let rx = if w > 0 { rxs[w - 1].take() } else { None };
                let tx = if w + 1 < p { txs[w].take() } else { None };
                Some((rx, tx))
            })
            .collect();
        let ends = Mutex::new(ends);
        broadcast(p, |w| {
            let (from_prev, to_next) = ends.lock().unwrap_or_else(|e| e.into_inner())[w]
                .take()
                .expect("each worker takes its links once");
            let mut mine = Vec::with_capacity(time_tiles);
            as_worker(|| {
                // Steps before this worker's first tile.
                for _ in 0..w {
                    if let Some(idle) = idle {
                        idle();
                    }
                }
                for t in 0..time_tiles {
                    // If the worker before died, stop: the pool reports its panic.
                    if let Some(rx) = &from_prev {
                        if rx.recv().is_err() {
                            return;
                        }
                    }
                    mine.push(run_block(w * time_tiles + t, (w + t, w)));
                    if let Some(tx) = &to_next {
                        let _ = tx.send(());
                    }
                }
                // Steps after its last tile.
                for _ in w + 1..p {
                    if let Some(idle) = idle {
                        idle();
                    }
                }
            });
            mine
        })
    };
    let steps = p + time_tiles - 1;
    (0..steps)
        .map(|k| {
            (0..p)
                .map(|w| {
                    k.checked_sub(w)
                        .and_then(|t| per_worker[w].get(t).cloned())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect()
}

/// One block of a recorded run, to replay serially.
#[derive(Debug)]
pub struct ReplayBlock<'s, S: Space> {
    space: &'s S,
    seq: (usize, usize),
    ids: Vec<usize>,
    /// The replay's call, and: the block stays on the replaying thread.
    call: u64,
    _here: std::marker::PhantomData<*const ()>,
}

impl<'s, S: Space> ReplayBlock<'s, S> {
    /// Where the block ran: `(step, worker)`, as [`Block::seq`].
    pub fn seq(&self) -> (usize, usize) {
        self.seq
    }

    /// The block's iterations in the order the worker ran them.
    pub fn items(&self) -> impl Iterator<Item = S::Item<'s>> + '_ {
        self.ids.iter().map(|&id| self.space.item(id))
    }

    /// The iterations at positions `range` of the block (see [`ReplayRound`]).
    pub fn items_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = S::Item<'s>> + '_ {
        self.ids[range].iter().map(|&id| self.space.item(id))
    }
}

/// Part of a replayed block between two points where the buffers were applied: the
/// replay of a loop with write-back buffers runs these in order, applying the buffers
/// after each round that has a [`Parked`].
#[derive(Debug)]
pub struct ReplayRound {
    block: usize,
    range: std::ops::Range<usize>,
    apply: Option<Parked>,
}

impl ReplayRound {
    /// The block (an index into the replay's blocks).
    pub fn block(&self) -> usize {
        self.block
    }

    /// Positions in the block.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.range.clone()
    }

    /// `Some` when the buffers are applied after this round.
    pub fn parked(&self) -> Option<&Parked> {
        self.apply.as_ref()
    }
}

/// The rounds of a recorded call of a loop with buffers: with one worker, its iterations
/// cut every `max_delay` of the call; with several, each step's blocks cut into rounds of
/// `max_delay` iterations (a step lasts as many rounds as its longest block needs, at
/// least one), round by round, worker by worker, the buffers applied after every round
/// but a step's last, and after that one when the step's `applied` says so.
fn rounds_of(run: &LoopRun, call: u64) -> Vec<ReplayRound> {
    let p = run.steps.first().map_or(1, Vec::len);
    let mut out = Vec::new();
    let round = |block, range, apply: bool| ReplayRound {
        block,
        range,
        apply: apply.then(|| Parked::next(call)),
    };
    if p == 1 {
        let mut count = 0usize;
        for (t, step) in run.steps.iter().enumerate() {
            let len = step[0].len();
            let mut start = 0;
            if let Some(n) = run.max_delay {
                for j in 0..len {
                    let c = count + j;
                    if c > 0 && c % n == 0 {
                        out.push(round(t, start..j, true));
                        start = j;
                    }
                }
            }
            out.push(round(t, start..len, false));
            count += len;
        }
        return out;
    }
    let n = run.max_delay.unwrap_or(usize::MAX);
    for (t, step) in run.steps.iter().enumerate() {
        let rounds = step
            .iter()
            .map(|ids| ids.len().div_ceil(n))
            .max()
            .unwrap_or(0)
            .max(1);
        for r in 0..rounds {
            for (w, ids) in step.iter().enumerate() {
                let lo = r.saturating_mul(n).min(ids.len());
                let hi = (r + 1).saturating_mul(n).min(ids.len());
                let apply = w + 1 == p && (r + 1 < rounds || run.applied[t]);
                out.push(round(t * p + w, lo..hi, apply));
            }
        }
    }
    out
}

/// [`replay_blocks`] for a loop with write-back buffers: the blocks, and the rounds to run
/// them in.
#[allow(clippy::type_complexity)]
pub fn replay_blocks_buffered<'s, S: Space>(
    state: &'static LoopState,
    space: &'s S,
) -> Option<(Vec<ReplayBlock<'s, S>>, Vec<ReplayRound>)> {
    let run = testing::next_replay(&state.spec.name)?;
    let call = next_call();
    let rounds = rounds_of(&run, call);
    Some((blocks_of(run, space, call), rounds))
}

/// [`replay_ids`] for a loop with write-back buffers: the blocks, and the rounds to run
/// them in.
pub fn replay_ids_buffered(
    state: &'static LoopState,
) -> Option<(Vec<ReplayIds>, Vec<ReplayRound>)> {
    let run = testing::next_replay(&state.spec.name)?;
    let call = next_call();
    let rounds = rounds_of(&run, call);
    Some((ids_of(run, call), rounds))
}

/// One block of a recorded run: where it ran and its iteration ids in order.
#[derive(Debug)]
pub struct ReplayIds {
    seq: (usize, usize),
    ids: Vec<usize>,
    /// The replay's call, and: the block stays on the replaying thread.
    call: u64,
    _here: std::marker::PhantomData<*const ()>,
}

impl ReplayIds {
    /// Where the block ran: `(step, worker)`.
    pub fn seq(&self) -> (usize, usize) {
        self.seq
    }

    /// The block's iteration ids (positions in the serial order), in the order run.
    pub fn ids(&self) -> &[usize] {
        &self.ids
    }

    /// The ids at positions `range` of the block (see [`ReplayRound`]).
    pub fn ids_in(&self, range: std::ops::Range<usize>) -> &[usize] {
        &self.ids[range]
    }
}

/// In replay mode, the blocks of this loop's next recorded call as iteration ids (for
/// loops whose items the replay reaches itself, as `iter_mut()` loops do).
pub fn replay_ids(state: &'static LoopState) -> Option<Vec<ReplayIds>> {
    Some(ids_of(testing::next_replay(&state.spec.name)?, next_call()))
}

fn ids_of(run: LoopRun, call: u64) -> Vec<ReplayIds> {
    let mut out = Vec::new();
    for (t, step) in run.steps.into_iter().enumerate() {
        for (w, ids) in step.into_iter().enumerate() {
            out.push(ReplayIds {
                seq: (t, w),
                ids,
                call,
                _here: std::marker::PhantomData,
            });
        }
    }
    out
}

/// The number of workers a recorded call ran on (its blocks' highest worker index + 1).
pub fn replay_workers(seqs: impl IntoIterator<Item = (usize, usize)>) -> usize {
    seqs.into_iter().map(|s| s.1 + 1).max().unwrap_or(1)
}

/// In replay mode, the blocks of this loop's next recorded call, in the serial order that
/// is equivalent to the parallel run (step by step, worker by worker).
pub fn replay_blocks<'s, S: Space>(
    state: &'static LoopState,
    space: &'s S,
) -> Option<Vec<ReplayBlock<'s, S>>> {
    Some(blocks_of(
        testing::next_replay(&state.spec.name)?,
        space,
        next_call(),
    ))
}

fn blocks_of<S: Space>(run: LoopRun, space: &S, call: u64) -> Vec<ReplayBlock<'_, S>> {
    let mut out = Vec::new();
    for (t, step) in run.steps.into_iter().enumerate() {
        for (w, ids) in step.into_iter().enumerate() {
            out.push(ReplayBlock {
                space,
                seq: (t, w),
                ids,
                call,
                _here: std::marker::PhantomData,
            });
        }
    }
    out
}

/// Proof that no worker of a loop call is touching its write-back buffers or the arrays
/// their apply functions update: every worker waits at an application point (or, in one
/// worker's run and in a serial replay, the one thread is between two iterations). Only
/// the runtime makes one; [`Buffered::apply`](crate::Buffered::apply) and
/// [`SharedMut::exclusive`] need it.
///
/// Each token is a new *application point*: an array lends itself exclusively
/// ([`SharedMut::exclusive`]) at most once per token.
///
/// A token belongs to one loop call (the buffers and arrays it may apply are those the
/// call's blocks use, see [`Lender`]) and stays on the thread that made it (it is neither
/// `Send` nor `Sync`).
#[derive(Debug)]
pub struct Parked {
    point: u64,
    call: u64,
    _here: std::marker::PhantomData<*const ()>,
}

impl Parked {
    /// A token for a new application point of loop call `call`.
    fn next(call: u64) -> Parked {
        static POINTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Parked {
            point: POINTS.fetch_add(1, Ordering::Relaxed),
            call,
            _here: std::marker::PhantomData,
        }
    }

    /// The proof from exclusive access to whatever the application touches (a call of its
    /// own).
    #[cfg(test)]
    pub(crate) fn exclusive<X: ?Sized>(_: &mut X) -> Parked {
        Parked::next(next_call())
    }

    /// A new application point of the same call as `self`.
    #[cfg(test)]
    pub(crate) fn again(&self) -> Parked {
        Parked::next(self.call)
    }

    /// This application point's number (never 0).
    pub(crate) fn point(&self) -> u64 {
        self.point
    }

    /// The loop call whose workers are parked.
    pub(crate) fn call(&self) -> u64 {
        self.call
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What a block shows the buffers it views: its worker and its loop call. Implemented
/// only by the runtime's blocks ([`Block`], [`ReplayBlock`], [`ReplayIds`]), which exist
/// only while their call runs (or is replayed, on one thread).
pub trait Lender: sealed::Sealed {
    /// `(worker, call)`.
    fn lender(&self) -> (usize, u64);
}

impl<S: Space> sealed::Sealed for Block<'_, S> {}
impl<S: Space> Lender for Block<'_, S> {
    fn lender(&self) -> (usize, u64) {
        (self.seq.1, self.call)
    }
}
impl<S: Space> sealed::Sealed for ReplayBlock<'_, S> {}
impl<S: Space> Lender for ReplayBlock<'_, S> {
    fn lender(&self) -> (usize, u64) {
        (self.seq.1, self.call)
    }
}
impl sealed::Sealed for ReplayIds {}
impl Lender for ReplayIds {
    fn lender(&self) -> (usize, u64) {
        (self.seq.1, self.call)
    }
}

/// Where the write-back buffers of one call are applied: at the end of every step (all
/// workers), every `every` iterations of each worker, and (by the caller) after the call.
/// With one worker only every `every` iterations of the whole call: the serial loop's
/// points.
pub(crate) struct Rounds<'r> {
    /// The loop call (its tokens' call).
    call: u64,
    every: Option<usize>,
    /// The workers' barrier; `None` with one worker.
    barrier: Option<&'r PhaseBarrier>,
    apply: &'r (dyn Fn(&Parked) + Sync),
    /// One worker: iterations so far in the call.
    count: std::sync::atomic::AtomicUsize,
}

impl Rounds<'_> {
    /// Before a block's iteration `i`: applies the buffers if a round ends here. `false`
    /// when the call is being abandoned (another worker panicked).
    #[inline]
    pub(crate) fn before(&self, i: usize) -> bool {
        match (self.barrier, self.every) {
            // One worker, applying only at the end: nothing to count.
            (None, None) => true,
            (None, Some(n)) => {
                // One thread: a plain load and store, no read-modify-write.
                let c = self.count.load(Ordering::Relaxed);
                self.count.store(c + 1, Ordering::Relaxed);
                if c > 0 && c % n == 0 {
                    (self.apply)(&Parked::next(self.call));
                }
                true
            }
            (Some(b), every) => {
                if b.broken.load(Ordering::Relaxed) {
                    return false;
                }
                match every {
                    Some(n) if i > 0 && i % n == 0 => self.sync(b, true).is_some(),
                    _ => true,
                }
            }
        }
    }

    /// Every worker waits for all; the last to arrive applies the buffers. `Some(any)`:
    /// whether any worker has iterations left in the step.
    fn sync(&self, b: &PhaseBarrier, more: bool) -> Option<bool> {
        b.wait_and(more, || (self.apply)(&Parked::next(self.call)))
    }

    /// After a worker's block of a step: the round ends here, and the worker keeps taking
    /// part in the others' rounds until every worker is done with the step.
    pub(crate) fn end_step(&self) {
        if let Some(b) = self.barrier {
            while let Some(true) = self.sync(b, false) {}
        }
    }
}

/// A barrier whose wait fails once a participant gave up (its worker panicked), so the
/// others return instead of waiting forever.
pub(crate) struct PhaseBarrier {
    state: Mutex<(usize, usize, bool)>, // (arrived, generation, broken)
    /// `wait_and`: the flags of this phase so far, and the last phase's result.
    any: Mutex<(bool, bool)>,
    cv: std::sync::Condvar,
    n: usize,
    /// `state.2`, readable without the lock by workers spinning on a piece.
    broken: std::sync::atomic::AtomicBool,
}

impl PhaseBarrier {
    fn new(n: usize) -> Self {
        PhaseBarrier {
            state: Mutex::new((0, 0, false)),
            cv: std::sync::Condvar::new(),
            n,
            broken: std::sync::atomic::AtomicBool::new(false),
            any: Mutex::new((false, false)),
        }
    }

    /// Waits for all `n`, the last to arrive running `action` first; returns whether any
    /// participant passed `flag = true`. `None` when the barrier is broken.
    fn wait_and(&self, flag: bool, action: impl FnOnce()) -> Option<bool> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.2 {
            return None;
        }
        {
            let mut any = self.any.lock().unwrap_or_else(|e| e.into_inner());
            any.0 |= flag;
        }
        g.0 += 1;
        if g.0 == self.n {
            action();
            let mut any = self.any.lock().unwrap_or_else(|e| e.into_inner());
            *any = (false, any.0);
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return Some(any.1);
        }
        let generation = g.1;
        while g.1 == generation && !g.2 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if g.2 {
            return None;
        }
        // The next phase cannot end before this participant arrives again: the result
        // stays for it to read.
        Some(self.any.lock().unwrap_or_else(|e| e.into_inner()).1)
    }

    /// Waits until `flag` holds `want` (a piece is done); `false` when the barrier broke
    /// meanwhile (a worker panicked, so the piece may never be done).
    fn wait_for(&self, flag: &std::sync::atomic::AtomicU64, want: u64) -> bool {
        let mut spins = 0u32;
        while flag.load(Ordering::Acquire) != want {
            if self.broken.load(Ordering::Relaxed) {
                return false;
            }
            if spins < 256 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// Waits for all `n`; `false` when the barrier is broken.
    fn wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.2 {
            return false;
        }
        g.0 += 1;
        if g.0 == self.n {
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return true;
        }
        let generation = g.1;
        while g.1 == generation && !g.2 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        !g.2
    }

    fn break_all(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.2 = true;
        self.broken.store(true, Ordering::Relaxed);
        self.cv.notify_all();
    }
}

/// Breaks the barrier if dropped during a panic.
pub(crate) struct BreakOnPanic<'a>(pub(crate) &'a PhaseBarrier);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.break_all();
        }
    }
}

/// A reconnaissance plan: task groups per batch and the ownership table their runs claim.
struct ReconPlan {
    groups: strads_analysis::GroupPlan,
    /// Element id of element 0 of each array (arrays the loop may write).
    bases: Vec<u64>,
    owners: Arc<[std::sync::atomic::AtomicU64]>,
    /// Per piece of a batch, the stamp of the piece when it is done.
    done: Vec<std::sync::atomic::AtomicU64>,
    /// Per batch, its first step in the trace (a batch takes `levels() + 1` steps).
    first_step: Vec<usize>,
    /// Held while a call runs: two calls of the loop on the same data (from two threads)
    /// share the ownership table, so they take turns.
    running: Mutex<()>,
    /// Calls so far: part of every stamp, so a stale claim never looks current.
    calls: std::sync::atomic::AtomicU64,
    /// Workers the plan runs on: the call's, or one when the recording cannot be trusted.
    workers: usize,
    summary: String,
    /// The key bytes of the captured values the plan was recorded with.
    captured: Box<[u8]>,
}

/// Iterations per batch: small batches cut conflict components (Cyclades), large ones
/// cost fewer barriers.
fn batch_size(n: usize, p: usize) -> usize {
    (n / 32).max(512 * p).max(1)
}

/// Runs one call of a loop planned by reconnaissance: on the first call with these
/// contents, `record` runs the body over every iteration through recording views; the
/// recorded touches make task groups, cached for later calls while `keys` (the ids and
/// versions of the arrays the loop reads), `captured` (the key bytes of the captured values
/// that may steer the accesses, see [`capture_key`](crate::capture_key)) and the shapes are
/// the same. `f` runs one block.
#[allow(clippy::too_many_arguments)]
pub fn run_recorded<S, R, F>(
    state: &'static LoopState,
    space: &S,
    shapes: &[&[usize]],
    keys: &[(u64, u64)],
    captured: &[u8],
    record: R,
    f: F,
) where
    S: Space,
    R: Fn(&crate::record::Recording<'_, S>),
    F: Fn(&mut Block<'_, S>) + Sync,
{
    run_recorded_inner(state, space, shapes, (keys, captured), record, f, None)
}

/// [`run_recorded`] for a loop with write-back buffers: `apply` applies them (every
/// worker parked) at the end of every batch and every `max_delay` iterations of each
/// worker. With `max_delay`, no component is split (a piece waiting for another would
/// wait across an application point).
#[allow(clippy::too_many_arguments)]
pub fn run_recorded_buffered<S, R, F>(
    state: &'static LoopState,
    space: &S,
    shapes: &[&[usize]],
    keys: &[(u64, u64)],
    captured: &[u8],
    record: R,
    f: F,
    apply: &(dyn Fn(&Parked) + Sync),
) where
    S: Space,
    R: Fn(&crate::record::Recording<'_, S>),
    F: Fn(&mut Block<'_, S>) + Sync,
{
    run_recorded_inner(
        state,
        space,
        shapes,
        (keys, captured),
        record,
        f,
        Some(apply),
    )
}

#[allow(clippy::too_many_arguments)]
fn run_recorded_inner<S, R, F>(
    state: &'static LoopState,
    space: &S,
    shapes: &[&[usize]],
    (keys, captured): (&[(u64, u64)], &[u8]),
    record: R,
    f: F,
    apply: Option<&(dyn Fn(&Parked) + Sync)>,
) where
    S: Space,
    R: Fn(&crate::record::Recording<'_, S>),
    F: Fn(&mut Block<'_, S>) + Sync,
{
    let spec = &state.spec;
    let p = if in_worker() { 1 } else { current_threads() };
    // The contents of arrays the loop writes do not change the plan (they read as
    // stand-ins), unless their values steer what the body touches; everything else does.
    let read_keys: Vec<(u64, u64)> = keys
        .iter()
        .enumerate()
        .filter(|(a, _)| !spec.writes(*a) || spec.arrays[*a].steers)
        .map(|(_, k)| *k)
        .collect();
    // The captured values by a hash in the key, and compared whole before a plan is used.
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        captured.hash(&mut h);
        h.finish()
    };
    let key = format!(
        "recon:{}:{p}:{shapes:?}:{read_keys:?}:{hash:x}",
        space.identity()
    );
    let cached = {
        let plans = state.plans.lock().unwrap_or_else(|e| e.into_inner());
        plans
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| Arc::clone(v).downcast::<ReconPlan>().ok())
            .filter(|plan| *plan.captured == *captured)
    };
    let plan = cached.unwrap_or_else(|| {
        let t = std::time::Instant::now();
        let mut bases = Vec::with_capacity(shapes.len());
        let mut n_elems = 0u64;
        for (a, shape) in shapes.iter().enumerate() {
            bases.push(n_elems);
            // Ownership is per row (first index): one entry per row.
            if spec.arrays[a].mutable && spec.space_array() != Some(a) {
                n_elems += shape.first().copied().unwrap_or(0) as u64;
            }
        }
        let rec = crate::record::Recording {
            state,
            space,
            acc: std::cell::RefCell::new(strads_analysis::Accesses::new()),
            bases: bases.clone(),
            stale: std::cell::Cell::new(None),
        };
        record(&rec);
        // An iteration read, to decide what it touches, a value an earlier iteration
        // writes: no plan recorded before the run can know the value, so the iterations
        // run on one worker, in their order.
        let stale = rec.stale.get();
        let acc = rec.acc.into_inner();
        let recorded = t.elapsed();
        let p = if stale.is_some() { 1 } else { p };
        let groups = strads_analysis::plan_groups_with(
            &acc,
            n_elems,
            p,
            batch_size(acc.len(), p),
            split_allowed() && state.max_delay.is_none(),
            spec.ordered,
        );
        let (max, mean) = groups.load_balance(&acc);
        let mut why = strads_analysis::fallback_note(spec, state.analysis())
            .map(|note| format!(" ({note})"))
            .unwrap_or_default();
        if let Some((array, row)) = stale {
            why.push_str(&format!(
                " (one worker: an iteration decides what it touches from row {row} of `{}`, \
                 which an earlier iteration writes; compute such subscripts in a loop of \
                 their own before this one to run in parallel)",
                spec.arrays[array].name
            ));
        }
        let summary = format!(
            "reconnaissance workers={p} batches={} groups={} largest_group={} split={} \
             load_max/mean={:.2} recorded={} touches={} record_ms={:.1} plan_ms={:.1}{why}",
            groups.batches.len(),
            groups.batches.iter().map(|b| b.groups).sum::<usize>(),
            groups.batches.iter().map(|b| b.largest).max().unwrap_or(0),
            groups.batches.iter().map(|b| b.split).sum::<usize>(),
            if mean > 0.0 { max as f64 / mean } else { 1.0 },
            acc.len(),
            (0..acc.len()).map(|i| acc.weight(i)).sum::<usize>(),
            recorded.as_secs_f64() * 1e3,
            (t.elapsed() - recorded).as_secs_f64() * 1e3,
        );
        let owners: Arc<[std::sync::atomic::AtomicU64]> = (0..n_elems)
            .map(|_| std::sync::atomic::AtomicU64::new(0))
            .collect();
        let max_pieces = groups
            .batches
            .iter()
            .map(|b| b.pieces.len())
            .max()
            .unwrap_or(0);
        let first_step = groups
            .batches
            .iter()
            .scan(0, |t, b| {
                let first = *t;
                *t += b.levels() + 1;
                Some(first)
            })
            .collect();
        let plan = Arc::new(ReconPlan {
            done: (0..max_pieces)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
            first_step,
            groups,
            bases,
            owners,
            running: Mutex::new(()),
            calls: std::sync::atomic::AtomicU64::new(0),
            workers: p,
            summary,
            captured: captured.into(),
        });
        let mut plans = state.plans.lock().unwrap_or_else(|e| e.into_inner());
        plans.retain(|(k, _)| *k != key);
        if plans.len() >= MAX_PLANS {
            plans.remove(0);
        }
        plans.push((key, plan.clone() as Arc<dyn Any + Send + Sync>));
        plan
    });
    if explain_requested() && !state.explained.swap(true, Ordering::Relaxed) {
        eprintln!(
            "strads plan {}: {}",
            spec.name,
            state.with_buffer_note(&plan.summary)
        );
    }
    let p = plan.workers;
    let tracing = testing::recording();
    let _turn = plan.running.lock().unwrap_or_else(|e| e.into_inner());
    // This call's number among the plan's calls (the stamps' part; the loop call of
    // `next_call`, below, is another number).
    let plan_call = plan.calls.fetch_add(1, Ordering::Relaxed) + 1;
    let n_batches = plan.groups.batches.len();
    // Stamp: call, batch, claimant; every claim of an earlier batch or call looks foreign
    // to the batch part and so reads as unclaimed. Claimants: worker `w` is `w + 1`, the
    // split components' marker `p + 1` (nobody may touch their elements until a piece
    // claims them), piece `k` is `p + 2 + k`.
    debug_assert!(p + 2 + strads_analysis::MAX_PIECES < 1 << WORKER_BITS);
    let stamp = |b: usize, claimant: usize| -> u64 {
        ((plan_call << 24 | (b as u64 + 1)) << WORKER_BITS) | (claimant as u64 + 1)
    };
    let piece_stamp = |b: usize, k: usize| stamp(b, p + 1 + k);
    let windows = |stamp: u64| -> Vec<Window> {
        (0..spec.arrays.len())
            .map(|a| {
                if spec.writes(a) && p > 1 {
                    Window::Owned {
                        table: plan.owners.clone(),
                        base: plan.bases[a] as usize,
                        stamp,
                    }
                } else {
                    // One worker owns everything; arrays nobody writes are read-only.
                    Window::All {
                        writable: spec.writes(a),
                    }
                }
            })
            .collect()
    };
    let call = next_call();
    let barrier = PhaseBarrier::new(p);
    let rounds = apply.map(|apply| Rounds {
        call,
        every: state.max_delay,
        barrier: (p > 1).then_some(&barrier),
        apply,
        count: std::sync::atomic::AtomicUsize::new(0),
    });
    let run_list = |list: &[u32], stamp: u64, seq: (usize, usize), step_end: bool| {
        let win = windows(stamp);
        let mut blk = Block {
            state,
            space,
            blocks: None,
            list: Some(list),
            id: 0,
            seq,
            windows: &win,
            trace: tracing.then(Vec::new),
            rounds: rounds.as_ref(),
            step_end,
            streams: Default::default(),
            call,
            viewed: Default::default(),
        };
        f(&mut blk);
        (seq.0, blk.trace.unwrap_or_default())
    };
    // Worker `w`'s part of batch `b`: its pieces of split components, each after the
    // pieces it depends on, then its task groups. `None` when another worker panicked.
    let run_batch = |b: usize, w: usize, barrier: Option<&PhaseBarrier>| {
        let batch = &plan.groups.batches[b];
        let first = plan.first_step[b];
        let mut out = Vec::with_capacity(1);
        for (k, pc) in batch.pieces.iter().enumerate() {
            if pc.worker != w {
                continue;
            }
            let barrier = barrier.expect("pieces only with several workers");
            for &a in &pc.after {
                if !barrier.wait_for(&plan.done[a as usize], piece_stamp(b, a as usize)) {
                    return None;
                }
            }
            let mine = piece_stamp(b, k);
            for &e in &pc.elems {
                plan.owners[e as usize].store(mine, Ordering::Relaxed);
            }
            out.push(run_list(&pc.iters, mine, (first + pc.level, w), false));
            plan.done[k].store(mine, Ordering::Release);
        }
        out.push(run_list(
            &batch.runs[w],
            stamp(b, w),
            (first + batch.levels(), w),
            true,
        ));
        Some(out)
    };
    let per_worker: Vec<Vec<(usize, Vec<usize>)>> = if p == 1 {
        vec![as_worker(|| {
            (0..n_batches)
                .flat_map(|b| run_batch(b, 0, None).expect("one worker never waits"))
                .collect()
        })]
    } else {
        broadcast(p, |w| {
            let _guard = BreakOnPanic(&barrier);
            let mut mine = Vec::with_capacity(n_batches);
            as_worker(|| {
                for b in 0..n_batches {
                    // Claim this batch's elements, wait until everyone has, run, and wait
                    // until everyone is done before the next batch's claims.
                    let batch = &plan.groups.batches[b];
                    for &e in &batch.owned[w] {
                        plan.owners[e as usize].store(stamp(b, w), Ordering::Relaxed);
                    }
                    if w == 0 {
                        for &e in &batch.shared {
                            plan.owners[e as usize].store(stamp(b, p), Ordering::Relaxed);
                        }
                    }
                    if !barrier.wait() {
                        return;
                    }
                    let Some(blocks) = run_batch(b, w, Some(&barrier)) else {
                        return;
                    };
                    mine.extend(blocks);
                    if !barrier.wait() {
                        return;
                    }
                }
            });
            mine
        })
    };
    let n_steps = plan
        .groups
        .batches
        .last()
        .map_or(0, |b| plan.first_step[n_batches - 1] + b.levels() + 1);
    let mut steps: Vec<Vec<Vec<usize>>> = vec![vec![Vec::new(); p]; n_steps];
    for (w, blocks) in per_worker.into_iter().enumerate() {
        for (t, ids) in blocks {
            steps[t][w] = ids;
        }
    }
    if tracing {
        // Buffers are applied after each batch's last step (its task groups).
        let mut applied = vec![false; steps.len()];
        for (b, batch) in plan.groups.batches.iter().enumerate() {
            applied[plan.first_step[b] + batch.levels()] = apply.is_some();
        }
        testing::push_run(LoopRun {
            loop_name: spec.name.to_string(),
            plan: state.with_buffer_note(&plan.summary),
            applied,
            max_delay: state.max_delay.filter(|_| apply.is_some()),
            steps,
        });
    }
}
