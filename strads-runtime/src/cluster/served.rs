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

    /// The values of the `iter_mut()` call that the driver sent.
    pub(crate) fn values(&self) -> Vec<u8> {
        self.session.wait(|core| core.take_values(self.msg.seq, 0))
    }

    /// The blocks of the call's space that the driver sent this rank (when `blocks_sent`).
    pub(crate) fn blocks(&self) -> Vec<u8> {
        self.session.wait(|core| core.take_blocks(self.msg.seq))
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
