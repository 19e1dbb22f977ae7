//! The schedules of calls across processes, kept so that one is sent once: the driver
//! remembers the hashes of each loop's last schedules, every worker the same schedules.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::proto::CallMsg;
use super::session::Session;
use crate::plan::Schedule;

/// Schedules kept per loop, on the driver (their hashes) and on every worker, the least
/// recently used going first: a loop called on a few spaces in turn (a training set and a
/// test set) sends each schedule once.
const KEEP_SCHEDULES: usize = 4;

/// Driver: the hash of a schedule's bytes `bytes` for loop `name`, and whether the workers
/// keep that schedule (one of the loop's last `KEEP_SCHEDULES`); it becomes the most
/// recent, as it does on every worker.
pub(super) fn sent_before(session: &Session, name: &str, bytes: &[u8]) -> (u64, bool) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    let hash = h.finish();
    let mut sent = session.schedules.lock().unwrap_or_else(|e| e.into_inner());
    let recent = sent.entry(name.to_string()).or_default();
    let kept = recent.contains(&hash);
    recent.retain(|&x| x != hash);
    recent.push(hash);
    if recent.len() > KEEP_SCHEDULES {
        recent.remove(0);
    }
    (hash, kept)
}

/// Worker: per loop, the schedules the driver sent and their hashes, least recently used
/// first.
static THEIRS: std::sync::Mutex<Vec<(String, u64, Arc<Schedule>)>> =
    std::sync::Mutex::new(Vec::new());

/// Worker: the driver's schedule of call `msg`: the one it sent, or, when it sent none,
/// the one of the loop's last calls that has its hash. One that does not decode, or a
/// hash this rank does not hold, stops the job.
pub(crate) fn their_schedule(session: &'static Session, msg: &CallMsg) -> Arc<Schedule> {
    let mut kept = THEIRS.lock().unwrap_or_else(|e| e.into_inner());
    let here = kept
        .iter()
        .position(|(n, h, _)| *n == msg.name && *h == msg.schedule_hash);
    let schedule = match here {
        Some(i) => kept.remove(i).2,
        None if msg.schedule.is_empty() => session.fail(format!(
            "the driver sent no schedule for `{}` and this rank keeps none with its hash",
            msg.name
        )),
        None => Arc::new(postcard::from_bytes(&msg.schedule).unwrap_or_else(|e| {
            session.fail(format!(
                "the driver's schedule of `{}` does not decode: {e}",
                msg.name
            ))
        })),
    };
    kept.push((msg.name.clone(), msg.schedule_hash, schedule.clone()));
    if kept.iter().filter(|(n, ..)| *n == msg.name).count() > KEEP_SCHEDULES
        && let Some(i) = kept.iter().position(|(n, ..)| *n == msg.name)
    {
        kept.remove(i);
    }
    schedule
}
