//! The protocol core of one rank, sans I/O (the `quinn-proto` shape): fed the frames that
//! arrive and the time, it keeps what a call still waits for and returns the frames to
//! send and its next timeout. No sockets, threads or clocks inside: the real runtime
//! drives it from the network thread and the workers, the simulated network
//! ([`super::sim`]) from virtual time.

use std::collections::VecDeque;
use std::sync::Arc;

use super::itinerary::Itinerary;
use super::msg::{CallMsg, Msg};
pub use super::outputs::{Arrival, Failure, Outgoing, Part};

mod between;
pub use between::Want;
mod percall;
use super::region::Region;

/// Time in microseconds since an origin the driver of the core chooses.
pub type Micros = u64;

/// A call in progress on this rank.
#[derive(Debug)]
struct CallState {
    seq: u64,
    plan: Arc<Itinerary>,
    /// `done[t * p + w]`: remote task done.
    done: Vec<bool>,
    arrivals: Vec<Arrival>,
    /// Ranks that passed each step's barrier.
    barriers: Vec<Vec<bool>>,
    /// Driver: each worker rank's `Finished` parts.
    finished: Vec<Option<Vec<u8>>>,
    /// Buffers' copies from other ranks, `(exchange, rank, bytes)`, until taken.
    merges: Vec<(u64, usize, Vec<u8>)>,
}

/// The protocol state of one rank.
#[derive(Debug)]
pub struct Core {
    rank: usize,
    size: usize,
    keep_alive: Micros,
    idle: Micros,
    last_heard: Vec<Micros>,
    last_sent: Vec<Micros>,
    now: Micros,
    call: Option<CallState>,
    /// Frames of calls that have not begun here yet.
    early: Vec<(usize, Msg, Option<Vec<u8>>)>,
    /// Worker: calls the driver asked for, and whole arrays that came with them.
    calls: VecDeque<CallMsg>,
    arrays: Vec<(u64, usize, Vec<u8>)>,
    /// `iter_mut()` calls' values that arrived, `(call, from, bytes)`.
    values: Vec<(u64, usize, Vec<u8>)>,
    /// The blocks of a call's space the driver sent this rank, by call.
    blocks: Vec<(u64, Vec<u8>)>,
    /// Worker: the driver's fetches of parts left here, `(req, array id, region)`, and
    /// what it wants of them.
    fetches: VecDeque<(u64, u64, Region, Want)>,
    /// Worker: arrays the driver dropped.
    forgets: VecDeque<u64>,
    /// Driver: fetched elements that arrived, by request; the next request's number.
    fetched: Vec<(u64, Vec<u8>)>,
    /// Driver: the checkpoint files workers were asked to write and have not answered
    /// for, and those they could not write.
    saving: std::collections::HashSet<String>,
    unsaved: std::collections::HashSet<String>,
    /// Driver: the traces of recorded calls, `(call, rank, bytes)`, until taken.
    traces: Vec<(u64, usize, Vec<u8>)>,
    next_req: u64,
    out: VecDeque<Outgoing>,
    failure: Option<Failure>,
    shutdown: bool,
    /// Bytes of elements sent and received.
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// Collective data operations between calls.
    pub(super) data: super::collected::Collectives,
}

impl Core {
    /// Rank `rank` of `size`; a peer silent for `idle` is lost; pings every `keep_alive`.
    pub fn new(rank: usize, size: usize, keep_alive: Micros, idle: Micros, now: Micros) -> Core {
        Core {
            rank,
            size,
            keep_alive,
            idle,
            last_heard: vec![now; size],
            last_sent: vec![now; size],
            now,
            call: None,
            early: Vec::new(),
            calls: VecDeque::new(),
            arrays: Vec::new(),
            values: Vec::new(),
            blocks: Vec::new(),
            fetches: VecDeque::new(),
            forgets: VecDeque::new(),
            fetched: Vec::new(),
            saving: Default::default(),
            unsaved: Default::default(),
            traces: Vec::new(),
            next_req: 1,
            out: VecDeque::new(),
            failure: None,
            shutdown: false,
            sent_bytes: 0,
            received_bytes: 0,
            data: Default::default(),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Queues a frame (the collective operations' requests, rounds and answers).
    pub(super) fn send_frame(&mut self, o: Outgoing) {
        self.send(o)
    }

    fn send(&mut self, o: Outgoing) {
        let to = match &o {
            Outgoing::Control { to, .. } | Outgoing::Block { to, .. } => *to,
        };
        if let Outgoing::Block { data, .. } = &o {
            self.sent_bytes += data.len() as u64;
        }
        self.last_sent[to] = self.now;
        self.out.push_back(o);
    }

    /// The next frame to send.
    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.out.pop_front()
    }

    /// When [`handle_timeout`](Core::handle_timeout) wants to run next.
    pub fn poll_timeout(&self) -> Option<Micros> {
        if self.failure.is_some() || self.shutdown || self.size == 1 {
            return None;
        }
        let peers = (0..self.size).filter(|&r| r != self.rank);
        peers
            .map(|r| (self.last_sent[r] + self.keep_alive).min(self.last_heard[r] + self.idle))
            .min()
    }

    /// Time passed: pings peers due one; a peer silent for the idle time is lost.
    pub fn handle_timeout(&mut self, now: Micros) {
        self.now = self.now.max(now);
        if self.failure.is_some() || self.shutdown {
            return;
        }
        let me = self.rank;
        for r in (0..self.size).filter(|&r| r != me) {
            if self.now >= self.last_heard[r] + self.idle {
                let secs = self.idle as f64 / 1e6;
                self.lost(
                    r,
                    format!("rank {r} was silent for {secs} s (dead or hung)"),
                );
                return;
            }
            if self.now >= self.last_sent[r] + self.keep_alive {
                self.send(Outgoing::Control {
                    to: r,
                    msg: Msg::Ping,
                });
            }
        }
    }

    /// The transport lost rank `rank`: the job fails naming it.
    pub fn lost(&mut self, rank: usize, message: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure { rank, message });
        }
    }

    /// This rank fails the job: every other rank is told.
    pub fn fail(&mut self, message: String) {
        if self.failure.is_some() {
            return;
        }
        let seq = self.call.as_ref().map_or(0, |c| c.seq);
        let me = self.rank;
        for r in (0..self.size).filter(|&r| r != me) {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Failed {
                    seq,
                    message: message.clone(),
                },
            });
        }
        self.failure = Some(Failure {
            rank: self.rank,
            message,
        });
    }

    /// Why the job stops, once it does.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// Whether the driver said the program is over.
    pub fn is_shut_down(&self) -> bool {
        self.shutdown
    }

    /// Driver: tells every worker the program is over.
    pub fn shut_down(&mut self) {
        for r in 1..self.size {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Shutdown,
            });
        }
        self.shutdown = true;
    }

    /// A frame arrived from `from` at `now`.
    pub fn handle(&mut self, now: Micros, from: usize, msg: Msg, data: Option<Vec<u8>>) {
        self.now = self.now.max(now);
        if from >= self.size || from == self.rank {
            return;
        }
        self.last_heard[from] = self.now;
        if let Some(d) = &data {
            self.received_bytes += d.len() as u64;
        }
        let seq_of = |m: &Msg| match m {
            Msg::Array { seq, .. }
            | Msg::Transfer { seq, .. }
            | Msg::Merge { seq, .. }
            | Msg::Done { seq, .. }
            | Msg::Barrier { seq, .. }
            | Msg::Finished { seq, .. } => Some(*seq),
            _ => None,
        };
        if matches!(
            msg,
            Msg::Data { .. } | Msg::DataReply { .. } | Msg::Exchange { .. }
        ) {
            self.data.handle(from, &msg, data);
            return;
        }
        match msg {
            Msg::Ping => {}
            Msg::Shutdown => self.shutdown = true,
            Msg::Failed { message, .. } => self.lost(from, message),
            Msg::Call(c) => self.calls.push_back(*c),
            Msg::Array { seq, array } => {
                self.arrays.push((seq, array, data.unwrap_or_default()));
            }
            Msg::Values { seq } => self.values.push((seq, from, data.unwrap_or_default())),
            Msg::Blocks { seq } => self.blocks.push((seq, data.unwrap_or_default())),
            Msg::Fetch { req, id, region } => {
                self.fetches.push_back((req, id, region, Want::Bytes))
            }
            Msg::Save {
                req,
                id,
                region,
                path,
            } => {
                self.fetches.push_back((req, id, region, Want::Save(path)));
            }
            Msg::Digest { req, id, region } => {
                self.fetches.push_back((req, id, region, Want::Digest));
            }
            Msg::Write {
                req,
                id,
                region,
                data,
            } => {
                self.fetches.push_back((req, id, region, Want::Write(data)));
            }
            Msg::Fetched { req } => self.fetched.push((req, data.unwrap_or_default())),
            Msg::Saved { path, ok } => {
                self.saving.remove(&path);
                if !ok {
                    self.unsaved.insert(path);
                }
            }
            Msg::Trace { seq } => self.traces.push((seq, from, data.unwrap_or_default())),
            Msg::Forget { id } => self.forgets.push_back(id),
            m => {
                let seq = seq_of(&m).expect("call messages carry their call");
                match &mut self.call {
                    Some(c) if c.seq == seq => Self::apply(c, from, m, data),
                    Some(c) if c.seq > seq => {}
                    _ => self.early.push((from, m, data)),
                }
            }
        }
    }

    fn apply(c: &mut CallState, from: usize, msg: Msg, data: Option<Vec<u8>>) {
        let p = c.plan.ranks * c.plan.threads;
        match msg {
            Msg::Transfer { tid, .. } => {
                if let Some(a) = c.arrivals.get_mut(tid)
                    && *a == Arrival::Pending
                {
                    *a = Arrival::Received(data.unwrap_or_default());
                }
            }
            Msg::Merge { key, .. } if !c.merges.iter().any(|(k, r, _)| *k == key && *r == from) => {
                c.merges.push((key, from, data.unwrap_or_default()));
            }
            Msg::Done { step, worker, .. } => {
                if let Some(d) = c.done.get_mut(step * p + worker) {
                    *d = true;
                }
            }
            Msg::Barrier { step, .. } => {
                if let Some(b) = c.barriers.get_mut(step).and_then(|b| b.get_mut(from)) {
                    *b = true;
                }
            }
            Msg::Finished { parts, .. } => {
                if let Some(f) = c.finished.get_mut(from) {
                    *f = Some(parts);
                }
            }
            _ => {}
        }
    }

    /// Worker: the next call the driver asked for.
    pub fn next_call(&mut self) -> Option<CallMsg> {
        self.calls.pop_front()
    }

    /// Driver: sends call `c` to every worker, with the whole arrays `whole(rank)` lists.
    pub fn send_call(
        &mut self,
        c: &CallMsg,
        mut whole: impl FnMut(usize) -> Vec<(usize, bytes::Bytes)>,
    ) {
        for r in 1..self.size {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Call(Box::new(c.clone())),
            });
            for (array, data) in whole(r) {
                self.send(Outgoing::Block {
                    to: r,
                    msg: Msg::Array { seq: c.seq, array },
                    data,
                });
            }
        }
    }

    /// Begins call `seq` with its plan; frames that came early are taken in. Beginning the
    /// call that has begun already changes nothing (a worker begins it early to apply the
    /// transfers of arrays it lends read-only).
    pub fn begin(&mut self, seq: u64, plan: Arc<Itinerary>) {
        if self.call.as_ref().is_some_and(|c| c.seq == seq) {
            return;
        }
        let p = plan.ranks * plan.threads;
        let steps = plan.barrier.len();
        let mut state = CallState {
            seq,
            done: vec![false; steps * p],
            arrivals: vec![Arrival::Pending; plan.transfers.len()],
            barriers: vec![vec![false; self.size]; steps],
            finished: vec![None; self.size],
            merges: Vec::new(),
            plan,
        };
        for (tid, tr) in state.plan.transfers.iter().enumerate() {
            if tr.from == super::itinerary::MADE && tr.to == self.rank {
                state.arrivals[tid] = Arrival::Made;
            }
        }
        let early = std::mem::take(&mut self.early);
        for (from, m, data) in early {
            let seq_m = match &m {
                Msg::Transfer { seq, .. }
                | Msg::Merge { seq, .. }
                | Msg::Done { seq, .. }
                | Msg::Barrier { seq, .. }
                | Msg::Finished { seq, .. } => *seq,
                _ => 0,
            };
            if seq_m == seq {
                Self::apply(&mut state, from, m, data);
            } else if seq_m > seq {
                self.early.push((from, m, data));
            }
        }
        self.call = Some(state);
    }

    /// Whether a call has begun and not ended on this rank.
    pub fn in_call(&self) -> bool {
        self.call.is_some()
    }

    /// Ends the call.
    pub fn end(&mut self) {
        self.call = None;
    }

    fn state(&self) -> &CallState {
        self.call.as_ref().expect("a call has begun")
    }

    /// Whether the remote tasks `(t, w)` waits for are done and its transfers are here.
    pub fn ready(&self, t: usize, w: usize) -> bool {
        let c = self.state();
        let p = c.plan.ranks * c.plan.threads;
        c.plan.remote_after[t][w]
            .iter()
            .all(|&(u, v)| c.done[u * p + v])
            && c.plan.waits[t][w]
                .iter()
                .all(|&tid| c.arrivals[tid] != Arrival::Pending)
    }

    /// Where transfer `tid` is.
    pub fn arrival(&self, tid: usize) -> &Arrival {
        &self.state().arrivals[tid]
    }

    /// Takes a transfer that is here (received, or to make on this rank) to apply it
    /// (then [`applied`](Core::applied)); `None` while it is pending, or once another
    /// worker took it.
    pub fn take_part(&mut self, tid: usize) -> Option<Part> {
        let a = &mut self.call.as_mut().expect("a call has begun").arrivals[tid];
        match std::mem::replace(a, Arrival::Applying) {
            Arrival::Received(d) => Some(Part::Sent(d)),
            Arrival::Made => Some(Part::Made),
            other => {
                *a = other;
                None
            }
        }
    }

    /// Transfer `tid` is in the arrays.
    pub fn applied(&mut self, tid: usize) {
        self.call.as_mut().expect("a call has begun").arrivals[tid] = Arrival::Applied;
    }

    /// Sends transfer `tid`'s elements (`data`) to its rank.
    pub fn send_transfer(&mut self, tid: usize, data: Vec<u8>) {
        let c = self.state();
        let (to, seq) = (c.plan.transfers[tid].to, c.seq);
        self.send(Outgoing::Block {
            to,
            msg: Msg::Transfer { seq, tid },
            data: data.into(),
        });
    }

    /// Task `(t, w)` of this rank is done: the ranks waiting for it are told.
    pub fn task_done(&mut self, t: usize, w: usize) {
        let c = self.state();
        let (seq, ranks) = (c.seq, c.plan.notify[t][w].clone());
        for r in ranks {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Done {
                    seq,
                    step: t,
                    worker: w,
                },
            });
        }
    }

    /// Sends `to[r]` to every other rank `r` at exchange `key` (a collective's round, where
    /// each rank gets its own bytes); `to[self.rank]` is dropped.
    pub fn send_merge_each(&mut self, key: u64, to: Vec<Vec<u8>>) {
        debug_assert_eq!(to.len(), self.size, "one entry per rank");
        let seq = self.state().seq;
        let me = self.rank;
        for (r, data) in to.into_iter().enumerate().filter(|&(r, _)| r != me) {
            if r < self.size {
                self.send(Outgoing::Block {
                    to: r,
                    msg: Msg::Merge { seq, key },
                    data: data.into(),
                });
            }
        }
    }

    /// Every other rank's copies at exchange `key`, in rank order, once all arrived.
    pub fn take_merges(&mut self, key: u64) -> Option<Vec<(usize, Vec<u8>)>> {
        let c = self.call.as_mut().expect("a call has begun");
        let here = c.merges.iter().filter(|(k, ..)| *k == key).count();
        if here + 1 < self.size {
            return None;
        }
        let mut got = Vec::with_capacity(here);
        c.merges.retain_mut(|(k, r, d)| {
            if *k == key {
                got.push((*r, std::mem::take(d)));
                false
            } else {
                true
            }
        });
        got.sort_by_key(|(r, _)| *r);
        Some(got)
    }

    /// This rank passed the barrier after step `t`.
    pub fn barrier(&mut self, t: usize) {
        let seq = self.state().seq;
        self.call.as_mut().expect("begun").barriers[t][self.rank] = true;
        let me = self.rank;
        for r in (0..self.size).filter(|&r| r != me) {
            self.send(Outgoing::Control {
                to: r,
                msg: Msg::Barrier { seq, step: t },
            });
        }
    }

    /// Whether every rank passed the barrier after step `t`.
    pub fn barrier_passed(&self, t: usize) -> bool {
        self.state().barriers[t].iter().all(|&b| b)
    }

    /// Worker: all its tasks ran and its transfers are queued.
    pub fn finish(&mut self, parts: Vec<u8>) {
        let seq = self.state().seq;
        self.send(Outgoing::Control {
            to: 0,
            msg: Msg::Finished { seq, parts },
        });
    }

    /// Driver: whether every worker finished and every transfer home arrived.
    pub fn all_finished(&self) -> bool {
        let c = self.state();
        c.finished.iter().skip(1).all(Option::is_some)
            && c.plan
                .homecoming()
                .all(|tid| c.arrivals[tid] != Arrival::Pending)
    }

    /// Driver: the workers' reduction parts, by rank.
    pub fn take_parts(&mut self) -> Vec<Vec<u8>> {
        let c = self.call.as_mut().expect("begun");
        c.finished
            .iter_mut()
            .skip(1)
            .map(|f| f.take().unwrap_or_default())
            .collect()
    }
}
