//! What a rank's protocol core holds of the collective data operations
//! ([`collective`](super::collective)): the operations asked, the answers and the rounds'
//! bytes that arrived.

use std::collections::VecDeque;

use super::msg::Msg;

/// One rank's collective operations in progress: what it was asked, what it received.
#[derive(Debug, Default)]
pub struct Collectives {
    /// Worker: operations the driver asked for, `(req, op, args)`.
    pub(super) ops: VecDeque<(u64, String, Vec<u8>)>,
    /// Driver: the workers' answers, `(req, from, bytes)`.
    pub(super) replies: Vec<(u64, usize, Vec<u8>)>,
    /// Bytes other ranks sent in a round of an operation, `(req, round, from, bytes)`.
    pub(super) rounds: Vec<(u64, u64, usize, Vec<u8>)>,
    /// Driver: the next operation's number.
    pub(super) next_req: u64,
}

impl Collectives {
    /// Takes in a frame of a collective operation; `false` when it is not one.
    pub(super) fn handle(&mut self, from: usize, msg: &Msg, data: Option<Vec<u8>>) -> bool {
        match msg {
            Msg::Data { req, op, args } => self.ops.push_back((*req, op.clone(), args.clone())),
            Msg::DataReply { req } => self.replies.push((*req, from, data.unwrap_or_default())),
            Msg::Exchange { req, round } => {
                self.rounds
                    .push((*req, *round, from, data.unwrap_or_default()))
            }
            _ => return false,
        }
        true
    }
}
