//! A worker rank's side of a checkpoint (module `resume`): the parts of the driver's
//! arrays it holds, written to the files the driver names, from a thread of its own; each
//! file ends with its own checksum, and the rank tells the driver once it is written
//! (`Msg::Saved`). The driver's next call waits for none of it; the driver's checkpoint
//! writer waits for those answers before it counts a checkpoint's job done
//! (`job::saving`), and the driver keeps at most two jobs in flight, so a rank's queue
//! holds at most about two checkpoints' copies and the rank never waits for its disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use super::session::Session;
use crate::checkpoint::{add_trailer, write_atomic};

/// A file to write: where, and its bytes.
type Piece = (PathBuf, Vec<u8>);

/// The writing thread's queue.
static LATER: OnceLock<Mutex<Sender<Piece>>> = OnceLock::new();

/// Files queued and not yet written.
static PENDING: AtomicUsize = AtomicUsize::new(0);

fn later(session: &'static Session) -> &'static Mutex<Sender<Piece>> {
    LATER.get_or_init(|| {
        let (tx, rx) = channel::<Piece>();
        std::thread::Builder::new()
            .name("strads-save".into())
            .spawn(move || {
                crate::checkpoint::lowest_priority();
                for (path, mut bytes) in rx {
                    add_trailer(&mut bytes);
                    let ok = match write_atomic(&path, &bytes) {
                        Ok(()) => true,
                        Err(e) => {
                            crate::log::say!(Warn, "strads: checkpoint: {e}");
                            false
                        }
                    };
                    drop(bytes);
                    let path = path.to_string_lossy().into_owned();
                    session.with(|core| core.send_saved(path, ok));
                    PENDING.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .expect("a thread for checkpoints");
        Mutex::new(tx)
    })
}

/// Saves `bytes` to `path` from the writing thread (the file ends with their checksum),
/// then tells the driver.
pub(crate) fn write_later(session: &'static Session, path: PathBuf, bytes: Vec<u8>) {
    let tx = later(session);
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
