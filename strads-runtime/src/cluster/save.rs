//! A worker rank's side of a checkpoint (module `resume`): the parts of the driver's
//! arrays it holds, written to the files the driver names, from a thread of its own; each
//! file ends with its own checksum, and the driver waits for none of it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use crate::checkpoint::{add_trailer, write_atomic};

/// A file to write: where, and its bytes.
type Piece = (PathBuf, Vec<u8>);

/// The writing thread's queue.
static LATER: OnceLock<Mutex<Sender<Piece>>> = OnceLock::new();

/// Files queued and not yet written.
static PENDING: AtomicUsize = AtomicUsize::new(0);

fn later() -> &'static Mutex<Sender<Piece>> {
    LATER.get_or_init(|| {
        let (tx, rx) = channel::<Piece>();
        std::thread::Builder::new()
            .name("strads-save".into())
            .spawn(move || {
                crate::checkpoint::lowest_priority();
                for (path, mut bytes) in rx {
                    add_trailer(&mut bytes);
                    if let Err(e) = write_atomic(&path, &bytes) {
                        // The driver's manifest names the file: a resume falls back past it.
                        eprintln!("strads: checkpoint: {e}");
                    }
                    PENDING.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .expect("a thread for checkpoints");
        Mutex::new(tx)
    })
}

/// Files a rank may have queued before a save waits: its pieces never lag the driver's
/// checkpoints by more than about two (the driver keeps three), and their copies stay
/// bounded.
const QUEUED: usize = 4;

/// Saves `bytes` to `path` from the writing thread (the file ends with their checksum),
/// once fewer than [`QUEUED`] files wait.
pub(crate) fn write_later(path: PathBuf, bytes: Vec<u8>) {
    let tx = later();
    while PENDING.load(Ordering::Acquire) >= QUEUED {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    PENDING.fetch_add(1, Ordering::AcqRel);
    let sent = tx
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((path, bytes));
    if sent.is_err() {
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// At the job's end: the files still to write are written first.
pub(crate) fn flush_later() {
    while PENDING.load(Ordering::Acquire) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
