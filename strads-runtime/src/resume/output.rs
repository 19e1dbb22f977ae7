//! The program's standard output while checkpoints are on. From the first call on it goes
//! through a pipe and a thread of ours that passes it on and logs it, so that a
//! checkpoint holds what the program printed up to it; fast re-execution prints that log
//! and drops what the skipped part of the run prints again (serial code between skipped
//! calls may read arrays the checkpoint restores only later). The resumed output is then
//! the lost run's, byte for byte, timings included.

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Output {
    /// The pipe's reading end (what is still in the pipe is counted through it).
    reader: RawFd,
    /// Standard output as it was (until `finish` puts it back).
    original: Mutex<Option<OwnedFd>>,
    /// What was printed since the last `take`.
    log: Arc<Mutex<Vec<u8>>>,
    /// The thread has read bytes it has not logged and passed on yet.
    busy: Arc<AtomicBool>,
    /// Drop what is printed (the skipped part of a resumed run) instead of passing it on.
    discard: Arc<AtomicBool>,
    /// The thread that reads and logs, and the one that passes the bytes on (so that a
    /// slow reader of our output never holds the log back).
    threads: Mutex<Vec<JoinHandle<()>>>,
}

static OUTPUT: OnceLock<Output> = OnceLock::new();

/// Bytes waiting in pipe `fd`.
fn waiting(fd: RawFd) -> usize {
    let mut n: nix::libc::c_int = 0;
    // SAFETY: FIONREAD writes one `c_int` through the pointer, which points to `n`.
    let r = unsafe { nix::libc::ioctl(fd, nix::libc::FIONREAD, &mut n) };
    if r < 0 { 0 } else { n.max(0) as usize }
}

/// Sends standard output through the log from now on, dropping it while `discard`;
/// `false` when it cannot be redirected (then nothing changes).
pub(super) fn start(discard: bool) -> bool {
    let mut out = std::io::stdout().lock();
    let _ = out.flush();
    let made = (|| -> std::io::Result<Output> {
        let original = out.as_fd().try_clone_to_owned()?;
        let (reader, writer) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
        // SAFETY: `dup2` replaces descriptor 1 atomically with a copy of the pipe's
        // writer; both are open (owned here), and every handle to standard output writes
        // through descriptor 1 by number, under the lock held here.
        if unsafe { nix::libc::dup2(writer.as_raw_fd(), 1) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        drop(writer);
        let log = Arc::new(Mutex::new(Vec::new()));
        let busy = Arc::new(AtomicBool::new(false));
        let discard = Arc::new(AtomicBool::new(discard));
        let raw = reader.as_raw_fd();
        let to = std::fs::File::from(original.try_clone()?);
        let (l, b, d) = (log.clone(), busy.clone(), discard.clone());
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let reader = std::thread::Builder::new()
            .name("strads-output".into())
            .spawn(move || take_in(std::fs::File::from(reader), &tx, &l, &b, &d))?;
        let writer = std::thread::Builder::new()
            .name("strads-output-out".into())
            .spawn(move || pass_on(&rx, to))?;
        Ok(Output {
            reader: raw,
            original: Mutex::new(Some(original)),
            log,
            busy,
            discard,
            threads: Mutex::new(vec![reader, writer]),
        })
    })();
    drop(out);
    match made {
        Ok(o) => {
            let _ = OUTPUT.set(o);
            // SAFETY: `atexit` with a function that takes no arguments and does not unwind.
            unsafe { nix::libc::atexit(at_exit) };
            true
        }
        Err(e) => {
            crate::log::say!(
                Warn,
                "strads: STRADS_CHECKPOINT: standard output cannot be logged ({e}): a resumed \
                 run prints what its skipped calls' serial code prints"
            );
            false
        }
    }
}

/// Reads what the program prints, logs it and hands it to [`pass_on`] (or drops it).
fn take_in(
    mut from: std::fs::File,
    to: &std::sync::mpsc::Sender<Vec<u8>>,
    log: &Mutex<Vec<u8>>,
    busy: &AtomicBool,
    discard: &AtomicBool,
) {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let mut fds = [nix::libc::pollfd {
            fd: from.as_raw_fd(),
            events: nix::libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one valid `pollfd` in a live array.
        unsafe { nix::libc::poll(fds.as_mut_ptr(), 1, -1) };
        busy.store(true, Ordering::SeqCst);
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => {
                busy.store(false, Ordering::SeqCst);
                return;
            }
            Ok(n) => n,
        };
        if !discard.load(Ordering::SeqCst) {
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&buf[..n]);
            let _ = to.send(buf[..n].to_vec());
        }
        busy.store(false, Ordering::SeqCst);
    }
}

/// Passes the program's output on to standard output as it was.
fn pass_on(from: &std::sync::mpsc::Receiver<Vec<u8>>, mut to: std::fs::File) {
    for bytes in from {
        let _ = to.write_all(&bytes);
    }
}

/// Waits until what the program printed so far is logged (the pipe empty, nothing read and
/// not yet logged): whether it is, within a minute (another thread printing without end
/// could keep it from being so).
fn drain(o: &Output) -> bool {
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if waiting(o.reader) == 0 && !o.busy.load(Ordering::SeqCst) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// What the program printed since the last call of `take`, once it is logged; `None` when
/// it could not be (the checkpoint then waits for a later call).
pub(super) fn take() -> Option<Vec<u8>> {
    let Some(o) = OUTPUT.get() else {
        return Some(Vec::new());
    };
    drain(o).then(|| std::mem::take(&mut *o.log.lock().unwrap_or_else(|e| e.into_inner())))
}

/// Prints `bytes` where the program's output stands (a checkpoint's log).
pub(super) fn print_logged(bytes: &[u8]) {
    let original = OUTPUT.get().and_then(|o| {
        drain(o);
        let fd = o.original.lock().unwrap_or_else(|e| e.into_inner());
        fd.as_ref().and_then(|f| f.try_clone().ok())
    });
    match original {
        Some(fd) => {
            let _ = std::fs::File::from(fd).write_all(bytes);
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }
}

/// The skipped part of the run is over: what the program prints passes on again.
pub(super) fn resume_passing() {
    if let Some(o) = OUTPUT.get() {
        drain(o);
        o.discard.store(false, Ordering::SeqCst);
    }
}

/// Standard output back as it was; the thread passes on what is left and ends (at exit,
/// and before a driver restarts its job).
pub(super) fn finish() {
    if let Some(o) = OUTPUT.get() {
        let _ = std::io::stdout().flush();
        let Some(fd) = o.original.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        // SAFETY: descriptor 1 becomes a copy of the original (open: owned here); the
        // pipe's last writer closes, and the thread ends at its end.
        unsafe { nix::libc::dup2(fd.as_raw_fd(), 1) };
        let threads = o
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        // The reader ends at the pipe's end and drops its sender; the writer then ends.
        for t in threads {
            let _ = t.join();
        }
        drop(fd);
    }
}

extern "C" fn at_exit() {
    finish();
}
