//! A worker rank's side of a call across processes: the driver's message, and what came
//! with it (the schedule, the blocks of the space, an `iter_mut()` call's values).

use std::sync::Arc;

use super::proto::directory::plan_arrays;
use super::proto::{CallMsg, Itinerary};
use super::schedules::their_schedule;
use super::session::Session;
use crate::plan::Schedule;

/// A worker rank's call: the driver's message, the session it came on, and the call's
/// plan once made. The generated serve function hands it to its `Call`
/// ([`Serve::served`](super::registry::Serve::served)), so the call knows from its value
/// that it serves the driver's.
#[derive(Debug)]
pub struct ServedCall {
    pub(crate) session: &'static Session,
    pub(crate) msg: CallMsg,
    /// The driver's schedule and the call's itinerary, each made once per call (`Serve`
    /// may need them before `work`).
    schedule: std::sync::OnceLock<Arc<Schedule>>,
    plan: std::sync::OnceLock<Arc<Itinerary>>,
    /// What came after the blocks in their message: the `iter_mut()` call's values.
    after_blocks: std::sync::Mutex<Option<Vec<u8>>>,
}

/// A served call, shared by the serve function and its `Call`.
pub type Served = Arc<ServedCall>;

impl ServedCall {
    pub(crate) fn new(session: &'static Session, msg: CallMsg) -> Served {
        Arc::new(ServedCall {
            session,
            msg,
            schedule: std::sync::OnceLock::new(),
            plan: std::sync::OnceLock::new(),
            after_blocks: std::sync::Mutex::new(None),
        })
    }

    /// The session the call came on.
    pub(crate) fn session(&self) -> &'static Session {
        self.session
    }

    /// The driver's message.
    pub(crate) fn msg(&self) -> &CallMsg {
        &self.msg
    }

    /// The schedule of the call, as the driver made it (a reconnaissance plan, which only
    /// the driver can record).
    pub(crate) fn schedule(&self) -> Arc<Schedule> {
        self.schedule
            .get_or_init(|| their_schedule(self.session, &self.msg))
            .clone()
    }

    /// The values of the `iter_mut()` call that the driver sent (after the blocks, when
    /// they came in the same message).
    pub(crate) fn values(&self) -> Vec<u8> {
        let after = self
            .after_blocks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        after.unwrap_or_else(|| self.session.wait(|core| core.take_values(self.msg.seq, 0)))
    }

    /// The blocks of the call's space that the driver sent this rank (when `blocks_sent`):
    /// their bytes; what follows them, before their length, is kept for
    /// [`values`](Self::values).
    pub(crate) fn blocks(&self) -> Result<Vec<u8>, String> {
        let message = self.session.wait(|core| core.take_values(self.msg.seq, 0));
        let (blocks, after) = split_blocks(message)?;
        *self.after_blocks.lock().unwrap_or_else(|e| e.into_inner()) = Some(after);
        Ok(blocks)
    }

    /// Answers the driver after this rank's tasks ran (`bytes`: empty, since the rank
    /// keeps its tasks' values).
    pub(crate) fn give_back_values(&self, bytes: Vec<u8>) {
        self.session
            .with(|core| core.send_values(self.msg.seq, 0, bytes));
    }

    /// Fails the job with `message`.
    pub(crate) fn fail(&self, message: String) -> ! {
        self.session.fail(message)
    }

    /// The call plan on `schedule` (the same on every rank), made once per call.
    pub(crate) fn plan(&self, schedule: &Schedule) -> Arc<Itinerary> {
        self.plan
            .get_or_init(|| {
                let arrays = plan_arrays(&self.msg.arrays);
                match Itinerary::new(
                    schedule,
                    self.session.size,
                    self.msg.threads,
                    &arrays,
                    false,
                ) {
                    Ok(p) => Arc::new(p),
                    Err(e) => self
                        .session
                        .fail(format!("loop `{}`: {}", self.msg.name, e.0)),
                }
            })
            .clone()
    }
}

/// A message of blocks: `[blocks][what follows them][the blocks' length, u64 LE]`, split
/// into the blocks and what follows them (the blocks' bytes are not copied).
fn split_blocks(mut message: Vec<u8>) -> Result<(Vec<u8>, Vec<u8>), String> {
    let end = message.len().checked_sub(8);
    let len = end
        .map(|e| u64::from_le_bytes(message[e..].try_into().expect("8 bytes")))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| end.is_some_and(|e| n <= e))
        .ok_or_else(|| format!("a message of {} bytes without its blocks", message.len()))?;
    let mut after = message.split_off(len);
    after.truncate(after.len() - 8);
    Ok((message, after))
}

#[cfg(test)]
mod tests {
    use super::split_blocks;

    #[test]
    fn a_message_splits_into_its_blocks_and_what_follows() {
        let framed = |blocks: &[u8], after: &[u8]| {
            [blocks, after, &(blocks.len() as u64).to_le_bytes()].concat()
        };
        assert_eq!(
            split_blocks(framed(&[1, 2, 3], &[9, 9])),
            Ok((vec![1, 2, 3], vec![9, 9]))
        );
        assert_eq!(split_blocks(framed(&[], &[])), Ok((vec![], vec![])));
        assert_eq!(
            split_blocks(framed(&[5; 20], &[])),
            Ok((vec![5; 20], vec![]))
        );
        // Cut short, or a length beyond the message: refused, never a panic.
        let refused = |m: &[u8]| format!("a message of {} bytes without its blocks", m.len());
        for m in [
            vec![],
            vec![3, 0, 0],
            framed(&[1, 2, 3], &[])[1..].to_vec(),
            [&[0u8; 4][..], &u64::MAX.to_le_bytes()].concat(),
        ] {
            assert_eq!(split_blocks(m.clone()), Err(refused(&m)));
        }
    }
}
