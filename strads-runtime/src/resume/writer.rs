//! Writing checkpoints from a thread of their own, so that training goes on meanwhile:
//! the arrays' bytes (copied by the call that made them), then, once every other rank
//! said it wrote the pieces it holds (`cluster::job::saving`), the manifest, each file
//! whole or not at all; then the files no kept manifest names are removed. A job stays
//! pending until then: the next checkpoint starts only after every rank wrote this one,
//! and at most [`IN_FLIGHT`] jobs' copies wait (a call waits when the disks fall behind).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

use super::manifest::{Manifest, checksum, manifests};
use crate::checkpoint::write_atomic;

/// Complete checkpoints kept: the newest, and one to fall back to (a file damaged since).
const KEPT: usize = 2;

/// Jobs sent and not yet done before [`Writer::send`] waits: the copies waiting to be
/// written (here and on the ranks) stay bounded.
const IN_FLIGHT: usize = 2;

/// One checkpoint's writing: array files, the pieces other ranks write (their paths), and
/// the manifest when the checkpoint is complete (its files' checksums are taken here, off
/// the program's thread, or, for files written already, as they were written: those it
/// lacks are those of files this thread wrote).
pub(super) struct Job {
    pub(super) files: Vec<(String, Content)>,
    pub(super) pieces: Vec<String>,
    pub(super) manifest: Option<Manifest>,
}

/// A file of a checkpoint: its bytes, to write; or written already from where the array
/// lives (no copy kept), with their checksum, to sync and rename; or what kept it from
/// being written.
pub(super) enum Content {
    Bytes(Vec<u8>),
    Staged(crate::checkpoint::Staged, u64),
    Failed(String),
}

/// The writing thread, and whether it is busy.
pub(super) struct Writer {
    tx: Sender<Job>,
    progress: Progress,
}

/// How far the writing thread is: checkpoints sent and not yet written, and whether
/// writing failed.
#[derive(Clone)]
pub(super) struct Progress {
    pending: Arc<AtomicUsize>,
    failed: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
}

impl Progress {
    /// Writes no more checkpoints (those sent are dropped), once the one being written is.
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.flush();
    }

    /// Waits until every checkpoint sent is written (bounded by the writes themselves).
    pub(super) fn flush(&self) {
        while self.pending.load(Ordering::Acquire) > 0 && !self.failed.load(Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl Writer {
    pub(super) fn start(dir: PathBuf) -> Writer {
        let (tx, rx) = channel();
        let progress = Progress {
            pending: Arc::new(AtomicUsize::new(0)),
            failed: Arc::new(AtomicBool::new(false)),
            stopped: Arc::new(AtomicBool::new(false)),
        };
        let p = progress.clone();
        std::thread::Builder::new()
            .name("strads-checkpoint".into())
            .spawn(move || write_jobs(&dir, &rx, &p))
            .expect("a thread for checkpoints");
        Writer { tx, progress }
    }

    /// Whether a checkpoint is still being written.
    pub(super) fn busy(&self) -> bool {
        self.progress.pending.load(Ordering::Acquire) > 0
    }

    /// Whether writing failed (said on stderr once): checkpoints stop.
    pub(super) fn failed(&self) -> bool {
        self.progress.failed.load(Ordering::Acquire)
    }

    /// How far it is.
    pub(super) fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Sends a job; waits first while [`IN_FLIGHT`] are pending.
    pub(super) fn send(&self, job: Job) {
        let pending = &self.progress.pending;
        while pending.load(Ordering::Acquire) >= IN_FLIGHT && !self.failed() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        pending.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(job).is_err() {
            pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn write_jobs(dir: &Path, rx: &Receiver<Job>, p: &Progress) {
    crate::checkpoint::lowest_priority();
    let mut sums = HashMap::new();
    for job in rx {
        if !p.failed.load(Ordering::Acquire) && !p.stopped.load(Ordering::Acquire) {
            let done = write_job(dir, job, &mut sums, p);
            if let Err(e) = done {
                crate::log::say!(
                    Warn,
                    "strads: checkpoint: {e}; no more checkpoints are written"
                );
                p.failed.store(true, Ordering::Release);
            }
        }
        p.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits until the other ranks wrote `pieces`: `Ok(true)`; `Ok(false)` when no answer is
/// coming (the job failed or ended, or checkpoints stopped: a driver restarting its job);
/// an error naming a piece a rank could not write.
fn wait_for_ranks(pieces: &[String], p: &Progress) -> Result<bool, String> {
    loop {
        if pieces.is_empty() {
            return Ok(true);
        }
        if p.stopped.load(Ordering::Acquire) {
            return Ok(false);
        }
        match crate::cluster::job::saving(pieces) {
            None => return Ok(false),
            Some(Err(path)) => return Err(format!("a rank could not write {path}")),
            Some(Ok(false)) => return Ok(true),
            Some(Ok(true)) => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
    }
}

fn write_job(
    dir: &Path,
    job: Job,
    sums: &mut HashMap<String, u64>,
    p: &Progress,
) -> Result<(), String> {
    for (name, content) in job.files {
        let (sum, written) = match content {
            Content::Bytes(bytes) => (checksum(&bytes), write_atomic(&dir.join(&name), &bytes)),
            Content::Staged(staged, sum) => (sum, staged.commit()),
            Content::Failed(e) => return Err(e),
        };
        written.map_err(|e| e.to_string())?;
        sums.insert(name, sum);
    }
    // Pieces other ranks write end with their checksums; a manifest names them once those
    // ranks said they are written (and none is written when no answer is coming).
    if !wait_for_ranks(&job.pieces, p)? {
        return Ok(());
    }
    if let Some(mut m) = job.manifest {
        for a in &mut m.arrays {
            if let Some(f) = &a.file
                && let Some(&c) = sums.get(f)
            {
                a.checksum = Some(c);
            }
        }
        for o in &mut m.output {
            if let Some(&c) = sums.get(&o.file) {
                o.checksum = Some(c);
            }
        }
        let call = m.call;
        write_atomic(&dir.join(Manifest::name(call)), &m.encode()).map_err(|e| e.to_string())?;
        collect(dir, call);
        // Files no kept manifest names are gone: so are their sums.
        sums.retain(|f, _| dir.join(f).exists());
    }
    Ok(())
}

/// After the manifest of `call`: removes older manifests but the one before it, and array
/// files neither names (but those of calls after `call`, a checkpoint under way).
pub(super) fn collect(dir: &Path, call: u64) {
    let found = manifests(dir);
    let mut named = HashSet::new();
    for (k, (_, path)) in found.iter().enumerate() {
        if k < KEPT {
            match Manifest::read(path) {
                Ok(m) => named.extend(m.files().map(|(f, _, _)| f.to_owned())),
                // A manifest that does not read keeps everything: nothing is lost.
                Err(_) => return,
            }
        } else {
            let _ = std::fs::remove_file(path);
        }
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(c) = array_file_call(name).or_else(|| output_file_call(name))
            && c <= call
            && !named.contains(name)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The file name of the contents of the array at parameter `param` of call `call`.
pub(super) fn array_file(call: u64, param: usize) -> String {
    format!("c{call:012}-p{param}.bin")
}

/// The file name of piece `piece` of the array at parameter `param` of call `call`, which
/// the rank that held it wrote.
pub(super) fn part_file(call: u64, param: usize, piece: usize) -> String {
    format!("c{call:012}-p{param}-s{piece}.bin")
}

/// The call of an array file's name (or of a piece's).
pub(super) fn array_file_call(name: &str) -> Option<u64> {
    let rest = name.strip_prefix('c')?.strip_suffix(".bin")?;
    let (call, param) = rest.split_once("-p")?;
    let param = match param.split_once("-s") {
        Some((p, s)) => s.parse::<usize>().map(|_| p).ok()?,
        None => param,
    };
    param.parse::<usize>().ok()?;
    call.parse().ok()
}

/// The file name of what the program printed up to the end of call `call`, since the
/// checkpoint before.
pub(super) fn output_file(call: u64) -> String {
    format!("o{call:012}.out")
}

/// The call of an output file's name.
pub(super) fn output_file_call(name: &str) -> Option<u64> {
    name.strip_prefix('o')?.strip_suffix(".out")?.parse().ok()
}

/// Whether `name` is a temporary file of a checkpoint's.
fn unfinished(name: &str) -> bool {
    name.contains(".tmp-")
        && (name.starts_with("manifest-") || name.starts_with('c') || name.starts_with('o'))
}

/// Removes the temporary files a run that was killed while writing left in `dir`.
pub(super) fn clear_unfinished(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_name().to_str().is_some_and(unfinished) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Removes every checkpoint file of an earlier run from `dir` (a run that starts over).
pub(super) fn clear(dir: &Path) -> usize {
    let mut removed = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let ours = Manifest::call_of(name).is_some()
            || array_file_call(name).is_some()
            || unfinished(name);
        if ours && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_job_no_answer_is_awaited() {
        let progress = Progress {
            pending: Arc::new(AtomicUsize::new(0)),
            failed: Arc::new(AtomicBool::new(false)),
            stopped: Arc::new(AtomicBool::new(false)),
        };
        // Nothing to wait for: done. Pieces, and no job to answer for them (one process,
        // or a job that failed): no manifest, no error.
        assert_eq!(wait_for_ranks(&[], &progress), Ok(true));
        let piece = vec!["/ck/c1-p0-s0.bin".to_string()];
        assert_eq!(wait_for_ranks(&piece, &progress), Ok(false));
        // Checkpoints stopped (a driver restarting its job): no manifest.
        progress.stopped.store(true, Ordering::Release);
        assert_eq!(wait_for_ranks(&piece, &progress), Ok(false));
    }

    #[test]
    fn names_parse_back() {
        assert_eq!(array_file_call(&array_file(42, 3)), Some(42));
        assert_eq!(array_file_call(&part_file(42, 3, 1)), Some(42));
        assert_eq!(array_file_call("c12-px.bin"), None);
        assert_eq!(Manifest::call_of(&Manifest::name(7)), Some(7));
        assert_eq!(output_file_call(&output_file(9)), Some(9));
    }
}
