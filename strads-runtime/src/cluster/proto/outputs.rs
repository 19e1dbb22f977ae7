//! What a rank's protocol core ([`Core`](super::Core)) hands the code that drives it:
//! the frames to send, where each transfer of a call is, and why the job stops.

use super::msg::Msg;

/// A frame to send.
#[derive(Clone, Debug, PartialEq)]
pub enum Outgoing {
    /// A control message.
    Control { to: usize, msg: Msg },
    /// A block: a header message and its elements.
    Block { to: usize, msg: Msg, data: Vec<u8> },
}

/// Where a transfer is on the receiving rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Not here yet.
    Pending,
    /// Here, not applied.
    Received(Vec<u8>),
    /// Made on this rank when applied: a part of an array created in place that no rank
    /// has written yet ([`MADE`](super::itinerary::MADE)), sent by no one.
    Made,
    /// A worker is applying it.
    Applying,
    /// In the arrays.
    Applied,
}

/// Why the job stops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The rank that failed or was lost.
    pub rank: usize,
    /// What happened.
    pub message: String,
}
