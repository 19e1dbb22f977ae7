//! A simulated network: many ranks' [`Core`]s in one process, in virtual time, with
//! per-link latency and bandwidth, killed ranks, and tasks that take the time a cost
//! function gives. It runs the same protocol as the real cluster, so tests of the protocol
//! run here, and with compute costs measured on this machine it predicts how a schedule
//! scales to many workers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::core::{Core, Micros, Outgoing};
use super::itinerary::{Itinerary, PlanArray};
use super::msg::Msg;
use crate::plan::Schedule;

/// The link of every rank to a switch: what a rank sends shares its uplink, what it
/// receives its downlink.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// One-way latency.
    pub latency: Micros,
    /// Bytes per microsecond (1 Gb/s = 125).
    pub bandwidth: f64,
}

/// What a simulated call did.
#[derive(Clone, Debug, Default)]
pub struct SimReport {
    /// From the call's start to the driver's end of it.
    pub makespan: Micros,
    /// Sum over workers of the time spent computing.
    pub busy: Micros,
    /// Sum over workers of the time a task was ready locally but waited for another rank.
    pub waiting: Micros,
    /// Element bytes sent between ranks.
    pub bytes: u64,
    /// The failure every live rank saw, if any: `(rank that saw it, failure)`.
    pub failures: Vec<(usize, super::core::Failure)>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A frame arrives: `(to, from, index into the in-flight store)`.
    Deliver(usize, usize, usize),
    /// A task ends: `(step, worker)`.
    TaskEnd(usize, usize),
    /// A rank's timer.
    Timer(usize),
}

/// The simulated cluster.
#[derive(Debug)]
pub struct Sim {
    pub cores: Vec<Core>,
    link: Link,
    /// When each rank's uplink and downlink are free again: a rank's frames share its
    /// link's bandwidth, in the order sent (and received).
    out_free: Vec<Micros>,
    in_free: Vec<Micros>,
    killed: Vec<Option<Micros>>,
    now: Micros,
    queue: BinaryHeap<Reverse<(Micros, u64, Event)>>,
    tick: u64,
    flight: Vec<Option<(Msg, Option<Vec<u8>>)>>,
    /// Each rank's pending timer.
    timer_at: Vec<Option<Micros>>,
}

impl Sim {
    /// `ranks` ranks joined by identical links; keep-alive and idle times for the cores.
    pub fn new(ranks: usize, link: Link, keep_alive: Micros, idle: Micros) -> Sim {
        Sim {
            cores: (0..ranks)
                .map(|r| Core::new(r, ranks, keep_alive, idle, 0))
                .collect(),
            link,
            out_free: vec![0; ranks],
            in_free: vec![0; ranks],
            killed: vec![None; ranks],
            now: 0,
            queue: BinaryHeap::new(),
            tick: 0,
            flight: Vec::new(),
            timer_at: vec![None; ranks],
        }
    }

    /// Rank `r` dies at `at`: it sends and answers nothing after it.
    pub fn kill(&mut self, r: usize, at: Micros) {
        self.killed[r] = Some(at);
    }

    fn dead(&self, r: usize) -> bool {
        self.killed[r].is_some_and(|t| self.now >= t)
    }

    fn push(&mut self, at: Micros, e: Event) {
        self.tick += 1;
        self.queue.push(Reverse((at, self.tick, e)));
    }

    /// Moves every frame rank `r` wants to send onto the links.
    fn flush(&mut self, r: usize, sizes: &dyn Fn(&Msg) -> u64) {
        while let Some(o) = self.cores[r].poll_transmit() {
            if self.dead(r) {
                continue;
            }
            let (to, msg, data) = match o {
                Outgoing::Control { to, msg } => (to, msg, None),
                Outgoing::Block { to, msg, data } => (to, msg, Some(Vec::from(data))),
            };
            let bytes = 64 + sizes(&msg).max(data.as_ref().map_or(0, |d| d.len() as u64));
            let start = self.now.max(self.out_free[r]).max(self.in_free[to]);
            let wire = (bytes as f64 / self.link.bandwidth).ceil() as Micros;
            self.out_free[r] = start + wire;
            self.in_free[to] = start + wire;
            self.flight.push(Some((msg, data)));
            let k = self.flight.len() - 1;
            self.push(start + wire + self.link.latency, Event::Deliver(to, r, k));
        }
        if let Some(t) = self.cores[r].poll_timeout()
            && self.timer_at[r].is_none_or(|at| t < at || at < self.now)
        {
            self.timer_at[r] = Some(t);
            self.push(t, Event::Timer(r));
        }
    }

    /// Runs one call of `schedule` (workers `ranks x threads`) with `plan`; task `(t, w)`
    /// computes for `cost(t, w)`; `elem[a]` bytes per element of array `a`. Stops when the
    /// driver ends the call, every live rank failed, or after `limit` of virtual time.
    pub fn run_call(
        &mut self,
        schedule: &Schedule,
        plan: &Itinerary,
        cost: &dyn Fn(usize, usize) -> Micros,
        elem: &[usize],
        limit: Micros,
    ) -> SimReport {
        let ranks = self.cores.len();
        let p = schedule.workers;
        let threads = plan.threads;
        let steps = schedule.steps.len();
        let plan_arc = Arc::new(plan.clone());
        let start = self.now;
        let transfer_bytes: Vec<u64> = plan
            .transfers
            .iter()
            .map(|t| t.region.len() * elem[t.array] as u64)
            .collect();
        let sizes = move |m: &Msg| match m {
            Msg::Transfer { tid, .. } => transfer_bytes.get(*tid).copied().unwrap_or(0),
            _ => 0,
        };
        for r in 0..ranks {
            self.cores[r].begin(1, plan_arc.clone());
        }
        // Initial transfers leave their holders at once.
        for tid in plan.initial() {
            let from = plan.transfers[tid].from;
            self.cores[from].send_transfer(tid, Vec::new());
        }
        for r in 0..ranks {
            self.flush(r, &sizes);
        }
        // Per worker: the next step it looks at, whether it is computing, when it became
        // free; per rank: the step each worker passed the barrier of.
        let mut next = vec![0usize; p];
        let mut running = vec![false; p];
        let mut free_since = vec![start; p];
        let mut done = vec![false; steps * p];
        let mut report = SimReport::default();
        let mut finished = vec![false; ranks];
        let mut barrier_sent = vec![vec![false; steps]; ranks];
        for _ in 0..50_000_000u64 {
            // Start whatever can start.
            let mut progress = true;
            while progress {
                progress = false;
                for w in 0..p {
                    let r = w / threads;
                    if running[w] || self.dead(r) || self.cores[r].failure().is_some() {
                        continue;
                    }
                    while next[w] < steps {
                        let t = next[w];
                        // The barrier before step t (after t - 1).
                        if t > 0 && schedule.barrier_between(t - 1) {
                            let local_done = (r * threads..(r + 1) * threads)
                                .all(|v| next[v] >= t && !running[v]);
                            if !local_done {
                                break;
                            }
                            if plan.barrier[t - 1] {
                                if !barrier_sent[r][t - 1] {
                                    barrier_sent[r][t - 1] = true;
                                    self.cores[r].barrier(t - 1);
                                    self.flush(r, &sizes);
                                }
                                if !self.cores[r].barrier_passed(t - 1) {
                                    break;
                                }
                            }
                        }
                        let Some(task) = schedule.task(t, w) else {
                            next[w] += 1;
                            continue;
                        };
                        let local_ok = task
                            .after
                            .iter()
                            .all(|&(u, v)| v / threads != r || done[u * p + v]);
                        if !local_ok {
                            break;
                        }
                        if !self.cores[r].ready(t, w) {
                            break;
                        }
                        for &tid in &plan.waits[t][w] {
                            if self.cores[r].take_part(tid).is_some() {
                                self.cores[r].applied(tid);
                            }
                        }
                        report.waiting += self.now - free_since[w].min(self.now);
                        running[w] = true;
                        let c = cost(t, w);
                        report.busy += c;
                        self.push(self.now + c, Event::TaskEnd(t, w));
                        progress = true;
                        break;
                    }
                }
                // Ranks whose workers are all past the last step finish.
                for (r, fin) in finished.iter_mut().enumerate().skip(1) {
                    if !*fin
                        && !self.dead(r)
                        && (r * threads..(r + 1) * threads).all(|v| next[v] >= steps)
                    {
                        *fin = true;
                        self.cores[r].finish(Vec::new());
                        self.flush(r, &sizes);
                    }
                }
            }
            if (0..threads).all(|v| next[v] >= steps)
                && self.cores[0].failure().is_none()
                && self.cores[0].all_finished()
            {
                report.makespan = self.now - start;
                break;
            }
            let live_failed = (0..ranks)
                .filter(|&r| !self.dead(r))
                .all(|r| self.cores[r].failure().is_some());
            if live_failed {
                break;
            }
            let Some(Reverse((at, _, e))) = self.queue.pop() else {
                break;
            };
            if at > start + limit {
                break;
            }
            self.now = self.now.max(at);
            match e {
                Event::Deliver(to, from, k) => {
                    let (msg, data) = self.flight[k].take().expect("delivered once");
                    if !self.dead(to) {
                        if let Some(d) = &data
                            && d.is_empty()
                            && let Msg::Transfer { tid, .. } = &msg
                        {
                            report.bytes += plan.transfers[*tid].region.len()
                                * elem[plan.transfers[*tid].array] as u64;
                        }
                        self.cores[to].handle(self.now, from, msg, data);
                        self.flush(to, &sizes);
                    }
                }
                Event::TaskEnd(t, w) => {
                    let r = w / threads;
                    if self.dead(r) {
                        continue;
                    }
                    running[w] = false;
                    done[t * p + w] = true;
                    next[w] = t + 1;
                    free_since[w] = self.now;
                    for &tid in &plan.sends[t][w] {
                        self.cores[r].send_transfer(tid, Vec::new());
                    }
                    self.cores[r].task_done(t, w);
                    self.flush(r, &sizes);
                }
                Event::Timer(r) => {
                    if self.timer_at[r] == Some(self.now) {
                        self.timer_at[r] = None;
                    }
                    if !self.dead(r) {
                        self.cores[r].handle_timeout(self.now);
                        self.flush(r, &sizes);
                    }
                }
            }
        }
        for r in 0..ranks {
            if !self.dead(r)
                && let Some(f) = self.cores[r].failure()
            {
                report.failures.push((r, f.clone()));
            }
            self.cores[r].end();
        }
        report
    }
}

/// A 2-D array of a modelled loop's spec.
fn array_spec(name: &'static str, mutable: bool) -> strads_analysis::ArraySpec {
    strads_analysis::ArraySpec {
        name: std::borrow::Cow::Borrowed(name),
        rank: 2,
        mutable,
        additive: false,
        steers: false,
    }
}

/// The 2D schedule of SGD-MF (`w[u, *]` and `h[i, *]` written) on `workers` workers, for
/// `users x items` factors of rank `k`, with uniform partitions; and its arrays, all on the
/// driver. For scaling studies on the simulated network.
pub fn sgd_mf_2d(
    users: usize,
    items: usize,
    k: usize,
    workers: usize,
) -> (Schedule, Vec<PlanArray>) {
    use std::borrow::Cow;
    use strads_analysis::{
        Access, AccessKind, Affine, LoopSpec, Name, Partition, SpaceKind, Subscript, analyze,
    };
    let row = |array: usize, coeffs: [i64; 2]| Access {
        array,
        kind: AccessKind::Write,
        subscripts: vec![
            Subscript::Affine(Affine {
                coeffs: coeffs.to_vec().into(),
                constant: 0,
            }),
            Subscript::Full,
        ]
        .into(),
        line: 0,
    };
    let spec = LoopSpec {
        name: Cow::Borrowed("sgd_epoch"),
        dims: vec![Name::Borrowed("u"), Name::Borrowed("i")].into(),
        space: SpaceKind::Range,
        arrays: vec![array_spec("w", true), array_spec("h", true)].into(),
        accesses: vec![row(0, [1, 0]), row(1, [0, 1])].into(),
        ordered: false,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    };
    let an = analyze(&spec);
    let c = an
        .candidates
        .iter()
        .find(|c| matches!(c.strategy, strads_analysis::Strategy::TwoD { space: 0, .. }))
        .expect("SGD-MF has a 2D plan");
    // The time partitions the runtime cuts (`plan::grid::time_split`).
    let times = workers * crate::plan::grid::time_split(&spec, workers);
    let parts = [
        Partition::uniform(users, workers),
        Partition::uniform(items, times),
    ];
    let shapes: [&[usize]; 2] = [&[users, k], &[items, k]];
    let schedule = crate::plan::grid::schedule(&spec, c, &parts, &shapes, workers);
    (schedule, PlanArray::on_driver(&shapes))
}

/// The wavefront schedule of dynamic time warping's fill (`examples/dtw.rs`: `d[i + 1,
/// j + 1] = cost[i, j] + min(d[i, j + 1], d[i + 1, j], d[i, j])`, `ordered`) over an
/// `n x m` table on `workers` workers, as the runtime plans it (the unimodular candidate,
/// `plan::wavefront`: worker `s` runs tile `(s, t)` at step `s + t`); the written table `d`
/// (`[n + 1, m + 1]`, 4-byte elements) as the one array that travels, all on the driver;
/// and the cells of each tile, by worker and time tile. One worker a rank (the costs' holders
/// are the ranks).
pub fn dtw_wavefront(
    n: usize,
    m: usize,
    workers: usize,
) -> (Schedule, Vec<PlanArray>, Vec<Vec<u64>>) {
    use std::borrow::Cow;
    use strads_analysis::{
        Access, AccessKind, Affine, LoopSpec, Name, SpaceKind, Subscript, analyze,
    };
    let at = |array: usize, kind: AccessKind, di: i64, dj: i64| Access {
        array,
        kind,
        subscripts: vec![
            Subscript::Affine(Affine {
                coeffs: vec![1, 0].into(),
                constant: di,
            }),
            Subscript::Affine(Affine {
                coeffs: vec![0, 1].into(),
                constant: dj,
            }),
        ]
        .into(),
        line: 0,
    };
    let spec = LoopSpec {
        name: Cow::Borrowed("dtw_fill"),
        dims: vec![Name::Borrowed("i"), Name::Borrowed("j")].into(),
        space: SpaceKind::Range,
        arrays: vec![array_spec("d", true), array_spec("cost", false)].into(),
        accesses: vec![
            at(0, AccessKind::Read, 0, 1),
            at(0, AccessKind::Read, 1, 0),
            at(0, AccessKind::Read, 0, 0),
            at(0, AccessKind::Write, 1, 1),
            at(1, AccessKind::Read, 0, 0),
        ]
        .into(),
        ordered: true,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    };
    let an = analyze(&spec);
    let c = an
        .candidates
        .iter()
        .find(|c| matches!(c.strategy, strads_analysis::Strategy::Wavefront { .. }))
        .expect("the DTW fill is a wavefront");
    let shapes: [&[usize]; 2] = [&[n + 1, m + 1], &[n, m]];
    let tiles = crate::plan::wavefront::plan(&spec, c, &[n, m], &shapes, workers);
    let (parts, time_tiles) = (&tiles.tiling.parts, tiles.time_tiles);
    let cells = (0..tiles.schedule.workers)
        .map(|s| {
            (0..time_tiles)
                .map(|t| {
                    (parts[0].range(s).1 - parts[0].range(s).0) as u64 * {
                        let (lo, hi) = parts[1].range(t);
                        (hi - lo) as u64
                    }
                })
                .collect()
        })
        .collect();
    let mut arrays = PlanArray::on_driver(&shapes[..1]);
    // The costs are read whole by every rank: not an array the itinerary moves here.
    arrays.push(PlanArray {
        shape: shapes[1].to_vec(),
        shipped: false,
        holders: (0..workers).collect(),
        away: Vec::new(),
        held: Vec::new(),
    });
    (tiles.schedule, arrays, cells)
}
