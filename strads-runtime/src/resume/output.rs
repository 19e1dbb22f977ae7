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
    thread: Mutex<Option<JoinHandle<()>>>,
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
        let thread = std::thread::Builder::new()
            .name("strads-output".into())
            .spawn(move || pass_on(std::fs::File::from(reader), to, &l, &b, &d))?;
        Ok(Output {
            reader: raw,
            original: Mutex::new(Some(original)),
            log,
            busy,
            discard,
            thread: Mutex::new(Some(thread)),
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
            eprintln!(
                "strads: STRADS_CHECKPOINT: standard output cannot be logged ({e}): a resumed \
                 run prints what its skipped calls' serial code prints"
            );
            false
        }
    }
}

fn pass_on(
    mut from: std::fs::File,
    mut to: std::fs::File,
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
            let _ = to.write_all(&buf[..n]);
            let _ = to.flush();
        }
        busy.store(false, Ordering::SeqCst);
    }
}

/// Waits (at most a second) until what the program printed so far has passed through.
fn drain(o: &Output) {
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs(1);
    while (waiting(o.reader) > 0 || o.busy.load(Ordering::SeqCst)) && Instant::now() < end {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// What the program printed since the last call of `take`, once it has passed through.
pub(super) fn take() -> Vec<u8> {
    let Some(o) = OUTPUT.get() else {
        return Vec::new();
    };
    drain(o);
    std::mem::take(&mut *o.log.lock().unwrap_or_else(|e| e.into_inner()))
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
        if let Some(t) = o.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
        drop(fd);
    }
}

extern "C" fn at_exit() {
    finish();
}
