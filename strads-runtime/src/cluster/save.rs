//! A worker rank's side of a checkpoint (module `resume`): the parts of the driver's
//! arrays it holds, written to the files the driver names, each ending with its own
//! checksum. The rank writes a part's bytes from where they live, a slice at a time,
//! before it serves the next call (so no copy of the part is kept for later: a rank near
//! its memory limit can still checkpoint); a thread of its own then syncs and renames the
//! file and tells the driver (`Msg::Saved`). The driver's checkpoint writer waits for those
//! answers before it counts a checkpoint's job done (`job::saving`), and keeps at most two
//! jobs in flight.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

use super::session::Session;
use crate::checkpoint::{Staged, Sum};

/// A file to commit: its name for the driver, and the file written (or why not).
type Piece = (String, Result<Staged, String>);

/// The committing thread's queue.
static LATER: OnceLock<Mutex<Sender<Piece>>> = OnceLock::new();

/// Files queued and not yet committed.
static PENDING: AtomicUsize = AtomicUsize::new(0);

fn later(session: &'static Session) -> &'static Mutex<Sender<Piece>> {
    LATER.get_or_init(|| {
        let (tx, rx) = channel::<Piece>();
        std::thread::Builder::new()
            .name("strads-save".into())
            .spawn(move || {
                crate::checkpoint::lowest_priority();
                for (path, staged) in rx {
                    let ok = match staged.and_then(|s| s.commit().map_err(|e| e.to_string())) {
                        Ok(()) => true,
                        Err(e) => {
                            crate::log::say!(Warn, "strads: checkpoint: {e}");
                            false
                        }
                    };
                    session.with(|core| core.send_saved(path, ok));
                    PENDING.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .expect("a thread for checkpoints");
        Mutex::new(tx)
    })
}

/// Writes a piece to `path`: `write` gives its bytes a slice at a time, from where they
/// live (no copy is kept), and the file ends with their checksum; the writing thread then
/// syncs and renames it and tells the driver. The next call waits for the bytes written,
/// not for the disk.
pub(crate) fn write_piece(
    session: &'static Session,
    path: PathBuf,
    write: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<(), String>) -> Result<(), String>,
) {
    let name = path.to_string_lossy().into_owned();
    let staged = Staged::create(&path)
        .map_err(|e| e.to_string())
        .and_then(|mut staged| {
            let mut sum = Sum::new();
            write(&mut |bytes: &[u8]| {
                sum.update(bytes);
                staged.write(bytes).map_err(|e| e.to_string())
            })
            .map_err(|e| format!("{name}: {e}"))?;
            staged
                .write(&sum.finish().to_le_bytes())
                .map_err(|e| e.to_string())?;
            Ok(staged)
        });
    let tx = later(session);
    PENDING.fetch_add(1, Ordering::AcqRel);
    let sent = tx
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((name, staged));
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
