//! Checkpoints after loop calls, and fast re-execution from them (STRADS-AP, seed 000,
//! sect. 4.3; docs/design.md, "Checkpoints and recovery").
//!
//! With `STRADS_CHECKPOINT=DIR`, the program's calls are counted (calls made inside
//! another call's blocks are not its own). After a call, at most once per
//! `STRADS_CHECKPOINT_SECONDS`, the arrays the call names that changed since they were
//! last saved are copied (the call's thread) and written (a thread of their own, while the
//! program goes on): each to a file of its own, whole or not at all. When every array the
//! calls have named is saved as it was after the last call that wrote it, a manifest
//! makes the checkpoint complete: the program's build, arguments and worker count, the
//! call number, each call's loop and reduction values, and each array's file and checksum.
//! An array no call writes (the data) is not written: re-execution makes it again, and
//! its checksum is compared where the program last named it.
//!
//! With `STRADS_RESUME=1`, `main` runs again. Calls up to the newest complete checkpoint
//! are *skipped*: the loop does not run; its reduction variables get the values the
//! checkpoint logged; and at the call that last wrote an array before the checkpoint, the
//! array gets the saved contents. So when the last skipped call returns, every array and
//! every value calls made is as it was after that call in the run that wrote the
//! checkpoint, and the calls after it give the same bits. Serial code runs again
//! throughout: what it computes from values calls return is the same; what it reads of
//! an array between skipped calls is the array as re-execution left it, not yet the
//! checkpoint's (print what calls return, or what serial code reads after the last
//! skipped call).

mod kept;
mod manifest;
mod output;
mod record;
mod replay;
mod writer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::array::away::SavedAway;
pub use kept::{Coded, Kept};
use manifest::{CallEntry, Identity, Manifest, SavedOutput, SavedPart};
use writer::Writer;

use crate::exec::LoopState;
use manifest::checksum;

/// The exit status of a run that cannot resume (another run's checkpoint, one that fails
/// its checksums with none before it) or cannot write checkpoints.
pub const EXIT_REFUSED: i32 = 2;

/// How a call began: without checkpoints, run (counted), or skipped (re-executed from a
/// checkpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begun {
    /// No checkpoints (or a call inside another call, a recording or a replay).
    Off,
    /// Call number `n` (from 1), run.
    Ran(u64),
    /// Call number `n`, covered by the checkpoint resumed from: not run.
    Skipped(u64),
}

impl Begun {
    /// Whether the call is skipped: the loop must not run.
    pub fn skipped(&self) -> bool {
        matches!(self, Begun::Skipped(_))
    }
}

/// An array a call names, as the call names it.
pub enum Held<'a> {
    /// Read (`&`): never restored.
    Read(&'a dyn Kept),
    /// Lent mutably (`&mut`).
    Written(&'a mut dyn Kept),
}

impl std::fmt::Debug for Held<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (how, a) = match self {
            Held::Read(a) => ("Read", *a),
            Held::Written(a) => ("Written", &**a),
        };
        f.debug_tuple(how).field(&a.kept_kind()).finish()
    }
}

impl std::fmt::Debug for Log<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.inner {
            LogInner::Write(_) => "writing",
            LogInner::Read { .. } => "reading",
        };
        f.debug_struct("Log")
            .field("mode", &how)
            .finish_non_exhaustive()
    }
}

impl Held<'_> {
    fn kept(&self) -> &dyn Kept {
        match self {
            Held::Read(a) => *a,
            Held::Written(a) => &**a,
        }
    }
}

/// The reduction variables' values after a call: written to the checkpoint's log after a
/// call that ran, read back from it into the variables after a skipped one.
pub struct Log<'a> {
    inner: LogInner<'a>,
}

enum LogInner<'a> {
    Write(Vec<u8>),
    Read {
        bytes: &'a [u8],
        error: Option<String>,
    },
}

impl Log<'_> {
    /// Logs `v` (a call that ran) or sets it (a skipped call).
    pub fn value<T: Serialize + DeserializeOwned>(&mut self, v: &mut T) {
        match &mut self.inner {
            LogInner::Write(out) => {
                let bytes = postcard::to_allocvec(&*v).unwrap_or_default();
                out.extend_from_slice(&bytes);
            }
            LogInner::Read { bytes, error } => match postcard::take_from_bytes::<T>(bytes) {
                Ok((x, rest)) => {
                    *v = x;
                    *bytes = rest;
                }
                Err(e) => {
                    if error.is_none() {
                        *error = Some(format!(
                            "a `{}` does not read back ({e})",
                            std::any::type_name::<T>()
                        ));
                    }
                }
            },
        }
    }
}

/// An array the calls have named, as checkpoints see it.
struct Tracked {
    id: u64,
    kind: String,
    /// Where and at which version the program last named it.
    seen: (u64, usize, u64),
    /// Where the last call that lent it mutably named it, and its version after that call.
    written: Option<(u64, usize, u64)>,
    saved: Option<Saved>,
}

impl Tracked {
    /// Whether the saved contents are those re-execution needs: after the last call that
    /// wrote it (an array written by calls), or as last named (one no call writes).
    fn clean(&self) -> bool {
        let want = self.written.map_or(self.seen.2, |w| w.2);
        self.saved
            .as_ref()
            .is_some_and(|s| s.version == want && (s.file.is_some() || self.written.is_none()))
    }
}

struct Saved {
    version: u64,
    file: Option<String>,
    checksum: Option<u64>,
    bytes: u64,
    /// Saved in pieces: the elements `file` holds, and the pieces other ranks wrote.
    region: Option<Vec<(u64, u64)>>,
    parts: Vec<SavedPart>,
}

/// The checkpoint being resumed from, while its calls are skipped.
struct Resuming {
    path: PathBuf,
    manifest: Manifest,
    /// `(call, param)` → index in the manifest's arrays.
    at: HashMap<(u64, usize), usize>,
    restored: usize,
    bytes: u64,
    /// Of those bytes, the ones the ranks that wrote them read back (they stay there).
    in_parts: u64,
}

/// Checkpoints of this process (the driver's, or a program run as one process).
struct Recovery {
    dir: PathBuf,
    every: Duration,
    last: Instant,
    identity: Identity,
    /// Calls begun.
    count: u64,
    calls: Vec<CallEntry>,
    tracked: HashMap<u64, Tracked>,
    resume: Option<Resuming>,
    writer: Writer,
    /// A checkpoint is under way: some arrays are saved, others wait for the next call
    /// that names them.
    under_way: bool,
    /// What the program printed up to the last complete checkpoint, in files.
    output: Vec<SavedOutput>,
    /// Calls since the checkpoint under way began.
    under_way_calls: u64,
    /// Whether giving up on a checkpoint was said already.
    gave_up: bool,
}

/// Calls a checkpoint may stay under way before it is given up (and said why).
const GIVE_UP: u64 = 64;

static STATE: OnceLock<Option<Mutex<Recovery>>> = OnceLock::new();

/// How far the writing thread is, reachable without `STATE`'s lock.
static PROGRESS: OnceLock<writer::Progress> = OnceLock::new();

fn lock(m: &Mutex<Recovery>) -> MutexGuard<'_, Recovery> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Says `message` and ends the process: a checkpoint that cannot be resumed or written
/// never gives other results.
fn fatal(message: String) -> ! {
    crate::log::say!(Error, "strads: {message}");
    std::process::exit(EXIT_REFUSED)
}

/// A tracked array was dropped: checkpoints stop waiting for it.
fn untrack(id: u64) {
    if let Some(Some(m)) = STATE.get() {
        lock(m).tracked.remove(&id);
    }
}

/// Whether checkpoints are on for this process (started on first use).
fn recovery() -> Option<&'static Mutex<Recovery>> {
    STATE
        .get_or_init(|| Recovery::start().map(Mutex::new))
        .as_ref()
}

impl Recovery {
    fn start() -> Option<Recovery> {
        let config = crate::config::get();
        let dir = config.checkpoint.clone()?;
        // A worker rank serves here for ever; the driver meets its workers first.
        let (workers, processes) = match crate::cluster::job::get() {
            Some(s) => (s.workers(), s.size()),
            None => (crate::pool::current_threads(), 1),
        };
        if let Err(e) = std::fs::create_dir_all(&dir) {
            fatal(format!(
                "STRADS_CHECKPOINT: cannot make the directory {}: {e}",
                dir.display()
            ));
        }
        let identity = Identity::here(workers, processes);
        let resume = if config.resume {
            match manifest::newest(&dir, &identity) {
                Ok(Some((path, manifest))) => {
                    let at = manifest
                        .arrays
                        .iter()
                        .enumerate()
                        .map(|(i, a)| ((a.call, a.param), i))
                        .collect();
                    Some(Resuming {
                        path,
                        manifest,
                        at,
                        restored: 0,
                        bytes: 0,
                        in_parts: 0,
                    })
                }
                Ok(None) => {
                    crate::log::say!(
                        Info,
                        "strads: STRADS_RESUME: no checkpoint in {} yet: running every call",
                        dir.display()
                    );
                    None
                }
                Err(e) => fatal(e),
            }
        } else {
            let removed = writer::clear(&dir);
            if removed > 0 {
                crate::log::say!(
                    Info,
                    "strads: STRADS_CHECKPOINT: starting over (STRADS_RESUME is not set): removed \
                     {removed} files of an earlier run's checkpoints from {}",
                    dir.display()
                );
            }
            None
        };
        // Files a killed run was writing.
        writer::clear_unfinished(&dir);
        // What the program prints from now on is logged; a resumed run prints the log of
        // its checkpoint instead of what its skipped part prints again.
        let logging = output::start(resume.is_some());
        let mut printed = Vec::new();
        if let Some(res) = &resume {
            for o in &res.manifest.output {
                let path = dir.join(&o.file);
                match std::fs::read(&path) {
                    Ok(b) if Some(checksum(&b)) == o.checksum => printed.extend_from_slice(&b),
                    Ok(_) => fatal(format!(
                        "cannot resume: {} fails its checksum (it changed since the run began)",
                        path.display()
                    )),
                    Err(e) => fatal(format!(
                        "cannot resume: {} cannot be read ({e})",
                        path.display()
                    )),
                }
            }
            if logging {
                output::print_logged(&printed);
            }
        }
        let output_files = resume
            .as_ref()
            .map(|r| r.manifest.output.clone())
            .unwrap_or_default();
        crate::array::away::on_untrack(untrack);
        crate::cluster::restart::on_restart(stop);
        let writer = Writer::start(dir.clone());
        let _ = PROGRESS.set(writer.progress());
        Some(Recovery {
            writer,
            dir,
            every: config.checkpoint_every,
            last: Instant::now(),
            identity,
            count: 0,
            calls: Vec::new(),
            tracked: HashMap::new(),
            resume,
            under_way: false,
            output: output_files,
            under_way_calls: 0,
            gave_up: false,
        })
    }
}

/// Before a call of `state`'s loop: whether checkpoints count it, and whether it is
/// skipped (see the [module](self)).
pub fn begin(_state: &'static LoopState) -> Begun {
    if crate::config::get().checkpoint.is_none()
        || crate::pool::in_worker()
        || crate::trace::recording()
        || crate::trace::replaying()
    {
        return Begun::Off;
    }
    let Some(m) = recovery() else {
        return Begun::Off;
    };
    let mut r = lock(m);
    r.count += 1;
    let k = r.count;
    match &r.resume {
        Some(res) if k <= res.manifest.call => Begun::Skipped(k),
        _ => Begun::Ran(k),
    }
}

/// After a call that [`begin`] counted: `arrays` are the arrays the loop names, in its
/// function's order, and `values` hands its reduction variables to the [`Log`].
pub fn end(
    state: &'static LoopState,
    begun: Begun,
    arrays: &mut [Held<'_>],
    values: impl FnOnce(&mut Log<'_>),
) {
    let (Begun::Ran(k) | Begun::Skipped(k)) = begun else {
        return;
    };
    let Some(m) = recovery() else { return };
    let name = state.spec().name.to_string();
    let mut r = lock(m);
    if begun.skipped() {
        r.replay(k, &name, arrays, values);
    } else {
        let mut log = Log {
            inner: LogInner::Write(Vec::new()),
        };
        values(&mut log);
        let LogInner::Write(bytes) = log.inner else {
            unreachable!("written")
        };
        r.record(k, &name, arrays, bytes);
    }
}

/// Writes no more checkpoints, once the one being written is (a driver about to restart
/// its job: the restarted driver writes them).
pub fn stop() {
    // Not under the lock: the thread that holds it may wait for the job that stops.
    if let Some(p) = PROGRESS.get() {
        p.stop();
    }
    output::finish();
}

/// Waits until the checkpoints sent are written (tests, and a driver about to restart).
pub fn flush() {
    if let Some(p) = PROGRESS.get() {
        p.flush();
    }
}
