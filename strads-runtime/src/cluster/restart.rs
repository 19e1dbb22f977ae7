//! Automatic recovery (issue 26, item 3): with `STRADS_CHECKPOINT` set, a job this process
//! started as `STRADS_PROCESSES` that loses a rank restarts every rank in fast
//! re-execution mode (`STRADS_RESUME=1`), up to `STRADS_RESTARTS` times, and ends with the
//! uninterrupted run's output and status; a driver started by a launcher or scheduler
//! exits with [`EXIT_RESUMABLE`] instead, for the launcher (`strads run` restarts the
//! job itself) or the job script to run again with `STRADS_RESUME=1`.
//!
//! The restarted driver is a new process running `main` from the start; this one stays
//! to pass its output on without the lines this one printed already
//! (`launch::output`): from the job's start, this process's standard output goes through
//! a pipe whose lines are counted, and the restarted driver marks where its job starts.

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use super::launch::output::{MARK, forward_after, forward_counting};

/// The exit status of a driver that lost a rank while checkpoints were on, so that a job
/// script or `srun --requeue` can run the job again with `STRADS_RESUME=1` (`EX_TEMPFAIL`
/// of `sysexits.h`).
pub const EXIT_RESUMABLE: i32 = 75;

/// Set in a restarted driver's environment: how many restarts came before it.
const RESTARTS: &str = "_STRADS_RESTART";
/// Set in a restarted driver's environment: write [`MARK`] where the job starts.
const MARKED: &str = "_STRADS_MARK";

/// Lines this process printed since its job started.
static LINES: AtomicU64 = AtomicU64::new(0);

/// The standard output this process had (the pipe's reader writes there), and the thread
/// that copies the pipe to it.
struct Watched {
    original: OwnedFd,
    copier: Mutex<Option<JoinHandle<()>>>,
}

static WATCHED: OnceLock<Watched> = OnceLock::new();

/// What stops this process's checkpoints (module `resume` sets it when they start).
static STOP: OnceLock<fn()> = OnceLock::new();

/// Sets what stops this process's checkpoints before its job restarts.
pub(crate) fn on_restart(stop: fn()) {
    let _ = STOP.set(stop);
}

/// Restarts before this process (0 for the first run).
fn restarts_before() -> usize {
    std::env::var(RESTARTS)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// At the start of a job this process spawns, with checkpoints on: marks the start for a
/// restarting parent, then counts the lines printed from now on. Does nothing when
/// standard output cannot be redirected (it then says so: a restart is not possible).
pub(crate) fn watch_output() {
    let mut out = std::io::stdout().lock();
    let _ = out.flush();
    if std::env::var_os(MARKED).is_some() {
        let _ = out.write_all(MARK);
        let _ = out.flush();
    }
    let watched = (|| -> std::io::Result<Watched> {
        let original = out.as_fd().try_clone_to_owned()?;
        let (reader, writer) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
        let reader = std::fs::File::from(reader);
        // SAFETY: `dup2` replaces descriptor 1 atomically with a copy of the pipe's
        // writer; both descriptors are open (owned here), and every handle to standard
        // output writes through descriptor 1 by number, under the lock held here.
        if unsafe { nix::libc::dup2(writer.as_raw_fd(), 1) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        drop(writer);
        let to = std::fs::File::from(original.try_clone()?);
        let copier = std::thread::Builder::new()
            .name("strads-stdout".into())
            .spawn(move || forward_counting(reader, to, &LINES))?;
        Ok(Watched {
            original,
            copier: Mutex::new(Some(copier)),
        })
    })();
    match watched {
        Ok(w) => {
            let _ = WATCHED.set(w);
        }
        Err(e) => crate::log::say!(
            Warn,
            "strads: STRADS_CHECKPOINT: standard output cannot be watched ({e}): a lost rank \
             will stop the job instead of restarting it"
        ),
    }
}

/// The driver lost a rank (said already; its other ranks are stopped): restarts the job
/// when this process spawned it and restarts are left (never returning), or exits with
/// [`EXIT_RESUMABLE`] when checkpoints are on; returns otherwise.
pub(crate) fn after_loss(spawned: bool) {
    let config = crate::config::get();
    let Some(dir) = config.checkpoint.as_ref() else {
        return;
    };
    let before = restarts_before();
    let watched = WATCHED.get();
    if !spawned || before >= config.restarts || watched.is_none() {
        if before >= config.restarts && spawned {
            crate::log::say!(
                Error,
                "strads: {before} restarts already (STRADS_RESTARTS={}): the job stops",
                config.restarts
            );
        }
        crate::log::say!(
            Info,
            "strads: run the same command with STRADS_RESUME=1 to resume from the newest \
             checkpoint in {}",
            dir.display()
        );
        std::process::exit(EXIT_RESUMABLE);
    }
    let watched = watched.expect("watched");
    crate::log::say!(
        Warn,
        "strads: restarting every rank from the newest checkpoint in {} (restart {} of {})",
        dir.display(),
        before + 1,
        config.restarts
    );
    // No checkpoint is written from now on: the restarted driver writes them.
    if let Some(stop) = STOP.get() {
        stop();
    }
    // Standard output back to what it was: the pipe closes, and its copier counts the last
    // lines and ends.
    {
        let mut out = std::io::stdout().lock();
        let _ = out.flush();
        // SAFETY: as in `watch_output`: descriptor 1 becomes a copy of the original,
        // which stays open in `WATCHED`, under the lock of standard output.
        unsafe { nix::libc::dup2(watched.original.as_raw_fd(), 1) };
    }
    if let Some(copier) = watched
        .copier
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        let _ = copier.join();
    }
    let printed = LINES.load(Ordering::Relaxed);
    let code = match rerun(before + 1, printed) {
        Ok(code) => code,
        Err(e) => {
            crate::log::say!(Error, "strads: the job cannot restart: {e}");
            EXIT_RESUMABLE
        }
    };
    std::process::exit(code);
}

/// Runs this program again with `STRADS_RESUME=1`, passing its output on without the
/// first `printed` lines after its mark; its exit status.
fn rerun(restart: usize, printed: u64) -> Result<i32, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no program file: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .env("STRADS_RESUME", "1")
        .env(RESTARTS, restart.to_string())
        .env(MARKED, "1")
        .stdout(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // `prctl(PR_SET_PDEATHSIG)`, which is async-signal-safe; it allocates nothing.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = super::launch::spawn::spawn_kept(cmd).map_err(|e| e.to_string())?;
    let from = child.stdout.take().ok_or("no standard output")?;
    let counted = AtomicU64::new(0);
    forward_after(from, std::io::stdout(), true, printed, &counted);
    let status = child.wait().map_err(|e| e.to_string())?;
    Ok(super::launch::spawn::exit_code(status))
}
