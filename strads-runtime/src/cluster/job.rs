//! The job's lifecycle on this process: the session starts on first use (a worker rank
//! then serves for ever), the driver's program end ends the job (with its explain lines),
//! and arrays the driver drops are forgotten by every rank.

use std::any::{Any, TypeId};
use std::sync::OnceLock;

use super::proto::{Elem, msg::elem_of_id};
use super::session::Session;
use super::spread;
use crate::memory::mib;

/// Joins the cluster job this process belongs to, if any (`STRADS_PROCESSES`, `strads
/// run`, Slurm, Open MPI, PMI, or `STRADS_RANK`/`STRADS_SIZE`): the driver (rank 0) starts
/// or meets its workers and returns; a worker rank serves the driver's loop calls and
/// exits when the driver's program ends, never returning. Called by `#[strads::main]`,
/// and otherwise by the first call into strads that needs the job: a loop call, a loader
/// or generator that works in place, an array of 1 MiB or more made in parts
/// (`from_fn`, `from_entries`); calling it again does nothing.
pub fn start() {
    let _ = get();
}

/// This process's rank and the job's size, once started: `(0, 1)` for a program run as
/// one process.
pub fn rank_and_size() -> (usize, usize) {
    current().map_or((0, 1), |s| (s.rank(), s.size()))
}

static SESSION: OnceLock<Option<&'static Session>> = OnceLock::new();
/// The session once made: set before a worker rank starts serving, which happens inside
/// `SESSION`'s initialisation and never returns, so that `current` finds it there too.
static MADE: OnceLock<&'static Session> = OnceLock::new();

/// The session of this process, started on first use: `None` for a program run as one
/// process. A worker rank never returns from its first call: it serves until the driver
/// ends the job, then exits.
pub fn get() -> Option<&'static Session> {
    *SESSION.get_or_init(|| match super::start::start() {
        Ok(None) => None,
        Ok(Some(s)) => {
            let s: &'static Session = Box::leak(Box::new(s));
            let _ = MADE.set(s);
            s.spawn_pump();
            if s.rank == 0 {
                // Arrays the program drops are dropped by the workers too.
                crate::array::away::on_forget(forget_on_workers);
                // Serial code's writes to arrays created in place leave the rest to make.
                crate::array::away::on_made_written(made_written_on_driver);
                // Arrays the program makes from now on are made on the ranks that hold
                // their parts (`array::made`).
                crate::array::made::set_in_place(s.size() > 1);
                // The program's end (its `main` returning or `exit`) ends the job.
                // SAFETY: `atexit` with a function that takes no arguments and does not
                // unwind (`shut_down` catches nothing and panics nowhere on its path).
                unsafe {
                    nix::libc::atexit(at_exit);
                }
            } else {
                crate::config::set_worker_rank();
                super::registry::serve_forever(s);
            }
            Some(s)
        }
        Err(e) => {
            crate::log::say!(Error, "strads: cannot start the cluster: {e}");
            std::process::exit(2);
        }
    })
}

/// The driver dropped array `id`, which workers hold copies of: they drop theirs, and the
/// session forgets where its parts were.
pub(crate) fn forget_on_workers(id: u64) {
    let Some(s) = current().filter(|s| s.rank == 0) else {
        return;
    };
    super::spread::forget(id);
    // The driver's own blocks of the array traded among the ranks, as every rank's.
    super::store::forget_blocks(id);
    if s.closed() {
        return;
    }
    s.directory().forget(id);
    s.with(|core| core.forget(id));
}

/// Serial code wrote a window of array `id`, created in place and used by no call yet (now
/// at `version`): the regions `left` are still to be made where they are needed.
fn made_written_on_driver(id: u64, version: u64, left: Option<Vec<(u64, u64)>>) {
    let Some(s) = current().filter(|s| s.rank == 0) else {
        return;
    };
    match left {
        None => s.directory().rekey(id, version),
        Some(left) if left.is_empty() => s.directory().set_away(id, version, Vec::new()),
        Some(left) => s.directory().set_away(
            id,
            version,
            vec![(super::proto::Region(left), super::proto::MADE)],
        ),
    }
}

/// Runs when the driver's program exits: tells the workers, waits for them, closes.
extern "C" fn at_exit() {
    if let Some(s) = current() {
        s.shut_down_saying(explain_end);
    }
}

/// The job's session when this process is the driver of a job of several ranks, outside
/// any loop's task and any call: where data sets are made in place (`spread`).
pub(crate) fn data_driver() -> Option<&'static Session> {
    if crate::pool::in_worker() {
        return None;
    }
    // A worker rank that serves (its serving thread, or any other) makes data whole here:
    // asking `get` again would wait for the session it serves in.
    if current().is_some_and(|s| s.rank != 0) {
        return None;
    }
    // Not while a call runs (on a thread a loop's body started, say): the workers serve
    // collective operations only between calls.
    get().filter(|s| s.rank == 0 && s.size() > 1 && !s.closed() && !s.with(|c| c.in_call()))
}

/// On a job's driver, of the checkpoint files `paths` the workers were asked to write: one
/// a worker could not write (`Some(Err)`), or whether some are still being written.
/// `None` when there is no job of several ranks, or it failed or ended: no more answers
/// come (a file this process never asked for is not waited for).
pub(crate) fn saving(paths: &[String]) -> Option<Result<bool, String>> {
    let s = current().filter(|s| s.rank == 0 && s.size() > 1 && !s.closed())?;
    s.with(|core| core.failure().is_none().then(|| core.saving(paths)))
}

/// The session if one was started (does not start one).
pub fn current() -> Option<&'static Session> {
    MADE.get().copied()
}

/// The driver's explain lines at the job's end (`STRADS_EXPLAIN`).
fn explain_end(s: &Session) {
    if !crate::config::get().explain {
        return;
    }
    for (name, calls, waited, first) in super::peers::waits() {
        crate::log::say!(
            Explain,
            "strads cluster {name}: {calls} calls across processes; the driver's workers \
             waited {:.3} s for other ranks ({:.3} s in the first call)",
            waited.as_secs_f64(),
            first.as_secs_f64()
        );
    }
    let (n, bytes, seconds) = s.fetched();
    if n > 0 {
        crate::log::say!(
            Explain,
            "strads cluster: parts left on other ranks came home {n} times ({bytes} bytes, \
             {seconds:.3} s), before serial code or a call on this process read them"
        );
    }
    let (n, bytes) = s.copied();
    if n > 0 {
        crate::log::say!(
            Explain,
            "strads cluster: serial code copied {n} windows of elements left on other ranks \
             ({bytes} bytes, at most {:.1} MiB kept at once), reading them by value",
            crate::array::away::PEEKED_BYTES as f64 / (1 << 20) as f64
        );
    }
    let (n, bytes) = s.written();
    if n > 0 {
        crate::log::say!(
            Explain,
            "strads cluster: serial code wrote elements where other ranks hold them {n} \
             times ({bytes} bytes), setting them there"
        );
    }
    let (sent, received) = s.bytes();
    crate::log::say!(
        Explain,
        "strads cluster: the driver sent {sent} and received {received} bytes in all"
    );
    let directory = s.directory();
    let sizes = directory.sizes();
    let total: u64 = sizes.iter().map(|&(_, _, b)| b).sum();
    let mut away_total = 0;
    let each: Vec<String> = sizes
        .into_iter()
        .map(|(id, what, b)| {
            let away = directory.away_bytes(id);
            away_total += away;
            if away == 0 {
                format!("array {id} {what}: {}", mib(b))
            } else {
                format!(
                    "array {id} {what}: {}, {} of it on other ranks",
                    mib(b),
                    mib(away)
                )
            }
        })
        .collect();
    drop(directory);
    crate::log::say!(
        Explain,
        "strads memory rank 0: {}; the {} arrays its calls used, {} whole, {} of it on other \
         ranks at the end{}{}",
        crate::memory::peak_phrase(),
        each.len(),
        mib(total),
        mib(away_total),
        if each.is_empty() { "" } else { ": " },
        each.join("; ")
    );
}

/// Stops the job with `message` when this process is in one (values from another rank
/// that do not decode), a worker rank while it serves included; panics with it otherwise.
pub(crate) fn fail_job(message: String) -> ! {
    match current() {
        Some(s) => s.fail(message),
        None => panic!("strads: {message}"),
    }
}

/// How a job's driver makes arrays in parts (`array::inparts`), linked in.
pub(crate) struct JobParts;

/// The one [`JobParts`], linked into `array::made::PARTS`.
#[linkme::distributed_slice(crate::array::made::PARTS)]
static JOB_PARTS: &'static dyn crate::array::made::Parts = &JobParts;

impl JobParts {
    /// The driver's session, or a stop: the job ended under a caller that began a part.
    fn session(&self) -> &'static Session {
        current()
            .filter(|s| s.rank == 0)
            .expect("arrays are made in parts on a job's driver")
    }

    fn elem(&self, t: TypeId) -> Elem {
        elem_of_id(t).expect("arrays made in parts hold numbers")
    }
}

impl crate::array::made::Parts for JobParts {
    fn ranks(&self) -> Option<usize> {
        data_driver().map(|s| s.size())
    }

    fn send_rows(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        to: usize,
        at: usize,
        end: usize,
        bytes: Vec<u8>,
    ) {
        let (s, elem) = (self.session(), self.elem(elem));
        spread::send_rows(s, id, elem, shape, to, at, end, bytes);
    }

    fn dense(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        array: Box<dyn Any>,
        starts: &[usize],
    ) -> Box<dyn Any> {
        spread::rows_made(self.session(), id, self.elem(elem), shape, array, starts)
    }

    fn send_entries(
        &self,
        id: u64,
        elem: TypeId,
        list: bool,
        shape: &[usize],
        to: usize,
        bytes: Vec<u8>,
    ) {
        let (s, elem) = (self.session(), self.elem(elem));
        spread::send_entries(s, id, elem, list, shape, to, bytes);
    }

    fn sparse(
        &self,
        id: u64,
        elem: TypeId,
        list: bool,
        shape: &[usize],
        own: Box<dyn Any>,
    ) -> Box<dyn Any> {
        spread::entries_made(self.session(), id, self.elem(elem), list, shape, own)
    }

    fn abandon(&self, id: u64) {
        spread::dense::abandon([id]);
    }

    fn restore(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        array: &mut dyn Any,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String> {
        let (s, elem) = (self.session(), self.elem(elem));
        spread::restore(s, id, elem, shape, array, home, pieces)
    }
}
