//! The process's place in a cluster job: its rank, the transport, the protocol core that
//! the network thread and the workers share, the driver's directory of parts, and
//! fail-stop. How a session starts and ends is `job`'s.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::launch::Children;
use super::net::{Frame, Link, LinkEvent};
use super::proto::directory::Directory;
use super::proto::{Core, Failure, Outgoing, Region, Want, msg};
use crate::checkpoint::Poly;

/// One process of a cluster job.
pub struct Session {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Worker threads per rank.
    pub(crate) threads: usize,
    link: Box<dyn Link>,
    core: Mutex<Core>,
    cv: Condvar,
    origin: Instant,
    children: Mutex<Option<Box<dyn Children>>>,
    /// Driver: calls are numbered from 1.
    pub(crate) next_seq: std::sync::atomic::AtomicU64,
    /// Driver: where the parts of the arrays it sent are.
    pub(crate) directory: Mutex<Directory>,
    /// Driver: per loop, the hashes of the schedules its last calls sent, least recently
    /// used first (the workers keep the same ones, so these are not sent again).
    pub(crate) schedules: Mutex<std::collections::HashMap<String, Vec<u64>>>,
    /// Driver: per loop and space array, the key of the blocks its last call sent (the
    /// workers keep theirs).
    pub(crate) blocks: Mutex<std::collections::HashMap<(String, u64), u64>>,
    /// Driver: fetches of parts left on other ranks, their bytes and the nanoseconds they
    /// took.
    fetches: std::sync::atomic::AtomicU64,
    fetched_bytes: std::sync::atomic::AtomicU64,
    fetch_nanos: std::sync::atomic::AtomicU64,
    /// Driver: copies of elements left on other ranks that serial code read by value
    /// (`DistArray::value`), and their bytes.
    copies: std::sync::atomic::AtomicU64,
    copied_bytes: std::sync::atomic::AtomicU64,
    /// Driver: elements serial code wrote where other ranks hold them (`DistArray::set`):
    /// the times, and their bytes.
    writes: std::sync::atomic::AtomicU64,
    written_bytes: std::sync::atomic::AtomicU64,
    /// Whether `shut_down` ran.
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// Keep-alive and idle time of the protocol (the transport has its own as well).
const KEEP_ALIVE: Duration = Duration::from_secs(1);
pub(crate) const IDLE: Duration = Duration::from_secs(10);

impl Session {
    /// A session over `link`.
    pub(crate) fn new(
        rank: usize,
        size: usize,
        threads: usize,
        link: Box<dyn Link>,
        children: Option<Box<dyn Children>>,
    ) -> Session {
        let keep = KEEP_ALIVE.as_micros() as u64;
        let idle = IDLE.as_micros() as u64;
        Session {
            rank,
            size,
            threads,
            link,
            core: Mutex::new(Core::new(rank, size, keep, idle, 0)),
            cv: Condvar::new(),
            origin: Instant::now(),
            children: Mutex::new(children),
            next_seq: std::sync::atomic::AtomicU64::new(1),
            directory: Mutex::new(Directory::default()),
            schedules: Mutex::new(Default::default()),
            blocks: Mutex::new(Default::default()),
            fetches: Default::default(),
            fetched_bytes: Default::default(),
            fetch_nanos: Default::default(),
            copies: Default::default(),
            copied_bytes: Default::default(),
            writes: Default::default(),
            written_bytes: Default::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether every rank of the job is on this machine (see `Link::one_host`).
    pub(crate) fn one_host(&self) -> bool {
        self.link.one_host()
    }

    /// This process's rank (0: the driver).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Workers of the whole job: ranks x threads.
    pub fn workers(&self) -> usize {
        self.size * self.threads
    }

    fn now(&self) -> u64 {
        self.origin.elapsed().as_micros() as u64
    }

    /// Driver: the directory of parts.
    pub(crate) fn directory(&self) -> MutexGuard<'_, Directory> {
        self.directory.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends what the core queued.
    fn flush(&self, core: &mut Core) {
        while let Some(o) = core.poll_transmit() {
            match o {
                Outgoing::Control { to, msg } => {
                    self.link.send(to, Frame::Control(msg::encode(&msg)))
                }
                Outgoing::Block { to, msg, data } => self.link.send(
                    to,
                    Frame::Block {
                        header: msg::encode(&msg),
                        data,
                    },
                ),
            }
        }
    }

    /// Runs `f` on the core, sends what it queued and wakes the waiters.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        let mut core = self.lock();
        let r = f(&mut core);
        self.flush(&mut core);
        drop(core);
        self.cv.notify_all();
        r
    }

    /// Waits until `ready` holds of the core; fail-stop when the job fails meanwhile.
    pub(crate) fn wait<R>(&self, mut ready: impl FnMut(&mut Core) -> Option<R>) -> R {
        let mut core = self.lock();
        loop {
            if let Some(f) = core.failure().cloned() {
                drop(core);
                self.die(&f);
            }
            if let Some(r) = ready(&mut core) {
                self.flush(&mut core);
                return r;
            }
            core = self
                .cv
                .wait_timeout(core, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The network thread: frames and time into the core.
    pub(crate) fn spawn_pump(&'static self) {
        std::thread::Builder::new()
            .name("strads-cluster".into())
            .spawn(move || self.pump())
            .unwrap_or_else(|e| {
                crate::log::say!(Error, "strads: cannot start the cluster thread: {e}");
                std::process::exit(2);
            });
    }

    fn pump(&self) {
        loop {
            let ev = self.link.recv_timeout(Duration::from_millis(50));
            let now = self.now();
            // A worker this process started that ended: lost now, not after the silence
            // that tells a remote rank's death.
            let ended = self
                .children
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .and_then(|c| c.failed());
            let failure = {
                let mut core = self.lock();
                if let Some((rank, how)) = ended
                    && !core.is_shut_down()
                {
                    core.lost(rank, how);
                }
                match ev {
                    Some(LinkEvent::Frame { from, frame }) => {
                        let (bytes, data) = match frame {
                            Frame::Control(b) => (b, None),
                            Frame::Block { header, data } => (header, Some(Vec::from(data))),
                        };
                        match msg::decode(&bytes) {
                            Ok(m) => core.handle(now, from, m, data),
                            Err(e) => core.fail(format!("rank {from} sent {e}")),
                        }
                    }
                    Some(LinkEvent::Lost { rank, reason }) if !core.is_shut_down() => {
                        core.lost(rank, reason);
                    }
                    Some(LinkEvent::Lost { .. }) => {}
                    None => {}
                }
                core.handle_timeout(now);
                self.flush(&mut core);
                core.failure().cloned()
            };
            self.cv.notify_all();
            if let Some(f) = failure {
                self.die(&f);
            }
        }
    }

    /// Fail-stop: says what failed, stops the processes this one started, and exits
    /// non-zero.
    pub(crate) fn die(&self, f: &Failure) -> ! {
        static DYING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if DYING.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // Another thread is stopping the process.
            loop {
                std::thread::park();
            }
        }
        let who = if f.rank == self.rank {
            "this rank".to_string()
        } else {
            format!("rank {}", f.rank)
        };
        crate::log::say!(Error, "strads: the job stops: {who} failed: {}", f.message);
        {
            let mut core = self.lock();
            self.flush(&mut core);
        }
        self.link.close();
        let spawned = {
            let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = children.as_mut() {
                c.kill_all();
            }
            children.is_some()
        };
        if self.rank == 0 {
            // With checkpoints: the job restarts, or says how to resume it. (Not under the
            // children's lock: the exit's handler ends the job, which takes it.)
            super::restart::after_loss(spawned);
        }
        std::process::exit(1);
    }

    /// This rank fails the job with `message`.
    pub(crate) fn fail(&self, message: String) -> ! {
        let f = self.with(|core| {
            core.fail(message.clone());
            core.failure().cloned()
        });
        self.die(&f.unwrap_or(Failure {
            rank: self.rank,
            message,
        }))
    }

    /// Driver: the program is over: tells the workers, waits for them (bounded), closes.
    /// A worker: closes its connections. Once.
    pub fn shut_down(&self) {
        self.shut_down_saying(|_| {});
    }

    /// As [`shut_down`](Self::shut_down); the driver calls `said` once the workers were
    /// told, before it closes (the exit's explain lines).
    pub(crate) fn shut_down_saying(&self, said: impl FnOnce(&Session)) {
        if self.closed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if self.rank != 0 {
            self.link.close();
            return;
        }
        self.with(|core| core.shut_down());
        said(self);
        self.link.close();
        if let Some(c) = self
            .children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            && !c.wait_all(Duration::from_secs(10))
        {
            c.kill_all();
        }
    }

    /// Driver, between calls: has the ranks holding `parts` of array `id` write them to
    /// `paths` (one each, a checkpoint's files), and runs `meanwhile`. The call does not
    /// wait for them: a rank takes the elements before the driver's next call (one ordered
    /// stream) and answers once the file is written (`Msg::Saved`), which only the
    /// checkpoint's writer waits for (`job::saving`).
    pub(crate) fn save(
        &self,
        id: u64,
        parts: &[(Region, usize)],
        paths: &[String],
        meanwhile: &mut dyn FnMut(),
    ) {
        if self.closed.load(std::sync::atomic::Ordering::Relaxed)
            || self.with(|core| core.in_call())
        {
            self.fail(format!(
                "array {id} was saved inside a call or after the job ended"
            ));
        }
        self.with(|core| {
            for ((region, r), p) in parts.iter().zip(paths) {
                core.request_fetch(*r, id, region.clone(), Want::Save(p.clone()));
            }
        });
        meanwhile();
    }

    /// Driver: fetches from other ranks the parts of array `id` that calls left there
    /// (`(region, rank)`, in that order); the elements of each, little-endian. The array
    /// is home afterwards: its directory entry goes (the ranks keep their copies).
    pub(crate) fn fetch(&self, id: u64, parts: &[(Region, usize)], whole: bool) -> Vec<Vec<u8>> {
        use std::sync::atomic::Ordering::Relaxed;
        let start = std::time::Instant::now();
        let data = self.ask_parts(id, parts, Want::Bytes);
        if whole {
            self.directory().came_home(id);
        }
        self.fetches.fetch_add(1, Relaxed);
        self.fetched_bytes
            .fetch_add(data.iter().map(|d| d.len() as u64).sum(), Relaxed);
        self.fetch_nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        data
    }

    /// Driver: copies of `parts` of array `id` (`(region, rank)`), the elements of each,
    /// little-endian; the parts stay where they are, and nothing is written here.
    pub(crate) fn copy(&self, id: u64, parts: &[(Region, usize)]) -> Vec<Vec<u8>> {
        use std::sync::atomic::Ordering::Relaxed;
        let data = self.ask_parts(id, parts, Want::Bytes);
        self.copies.fetch_add(1, Relaxed);
        self.copied_bytes
            .fetch_add(data.iter().map(|d| d.len() as u64).sum(), Relaxed);
        data
    }

    /// Driver: sets the elements of `parts` of array `id` (`(region, rank)`) on the ranks
    /// that hold them to `data` (each part's elements, little-endian: serial code wrote
    /// them), and waits until every rank has.
    pub(crate) fn write(&self, id: u64, parts: &[(Region, usize)], data: Vec<Vec<u8>>) {
        use std::sync::atomic::Ordering::Relaxed;
        let bytes: u64 = data.iter().map(|d| d.len() as u64).sum();
        let wants: Vec<Want> = data.into_iter().map(Want::Write).collect();
        self.ask_each(id, parts, wants);
        self.writes.fetch_add(1, Relaxed);
        self.written_bytes.fetch_add(bytes, Relaxed);
    }

    /// Driver: [`write`](Session::write)'s count and bytes.
    pub(crate) fn written(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.writes.load(Relaxed), self.written_bytes.load(Relaxed))
    }

    /// Driver: [`copy`](Session::copy)'s count and bytes.
    pub(crate) fn copied(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.copies.load(Relaxed), self.copied_bytes.load(Relaxed))
    }

    /// Driver: the checksums of `parts` of array `id` (`(region, rank)`) taken by the ranks
    /// that hold them, one a range of each region, in order; nothing comes home.
    pub(crate) fn digest(&self, id: u64, parts: &[(Region, usize)]) -> Vec<Vec<Poly>> {
        let answers = self.ask_parts(id, parts, Want::Digest);
        answers
            .iter()
            .zip(parts)
            .map(|(bytes, (region, r))| {
                postcard::from_bytes::<Vec<Poly>>(bytes)
                    .ok()
                    .filter(|p| p.len() == region.0.len())
                    .unwrap_or_else(|| {
                        self.fail(format!(
                            "rank {r} answered the checksums of array {id}'s parts with \
                             {} bytes that are not one checksum a range",
                            bytes.len()
                        ))
                    })
            })
            .collect()
    }

    /// Driver: asks each rank of `parts` for `want` of its region of array `id`, and
    /// waits for every answer.
    fn ask_parts(&self, id: u64, parts: &[(Region, usize)], want: Want) -> Vec<Vec<u8>> {
        self.ask_each(id, parts, vec![want; parts.len()])
    }

    /// [`ask_parts`](Session::ask_parts) with what is wanted of each part.
    fn ask_each(&self, id: u64, parts: &[(Region, usize)], wants: Vec<Want>) -> Vec<Vec<u8>> {
        use std::sync::atomic::Ordering::Relaxed;
        // Workers answer between calls only: a fetch from inside a call (a loop body on
        // the driver reaching an array an earlier call left away) or after the job ended
        // could never be answered, so it stops the job instead of waiting for ever.
        let when = if self.closed.load(Relaxed) {
            Some("after the job ended")
        } else if self.with(|core| core.in_call()) {
            Some("inside a loop call that runs across processes")
        } else {
            None
        };
        if let Some(when) = when {
            self.fail(format!(
                "parts of a driver's array (id {id}) that other ranks hold were read {when}; \
                 read it before the call, or pass it to the loop"
            ));
        }
        let reqs: Vec<u64> = self.with(|core| {
            parts
                .iter()
                .zip(wants)
                .map(|((region, r), want)| core.request_fetch(*r, id, region.clone(), want))
                .collect()
        });
        reqs.iter()
            .map(|&req| self.wait(|core| core.take_fetched(req)))
            .collect()
    }

    /// Driver: how many times parts left on other ranks came home, their bytes, and the
    /// seconds serial code waited for them.
    pub(crate) fn fetched(&self) -> (u64, u64, f64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.fetches.load(Relaxed),
            self.fetched_bytes.load(Relaxed),
            self.fetch_nanos.load(Relaxed) as f64 * 1e-9,
        )
    }

    /// Whether the job ended here (`shut_down` ran).
    pub(crate) fn closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes of frames sent and received by this process.
    pub fn bytes(&self) -> (u64, u64) {
        self.link.bytes()
    }
}
