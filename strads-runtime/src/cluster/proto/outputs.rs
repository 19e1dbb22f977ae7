//! What a rank's protocol core ([`Core`](super::Core)) hands the code that drives it:
//! the frames to send, where each transfer of a call is, and why the job stops.

use super::msg::Msg;

/// A frame to send.
#[derive(Clone, Debug, PartialEq)]
pub enum Outgoing {
    /// A control message.
    Control { to: usize, msg: Msg },
    /// A block: a header message and its elements (shared: an array sent whole to
    /// several ranks is encoded once).
    Block {
        to: usize,
        msg: Msg,
        data: bytes::Bytes,
    },
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

/// A transfer a rank applies, once taken ([`Core::take_part`](super::Core::take_part)):
/// the elements another rank sent, or a part this rank makes itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Little-endian elements.
    Sent(Vec<u8>),
    /// To make from the array's recipe.
    Made,
}

impl Part {
    /// Puts the part into its array (`into`): `write` the elements sent, or `make` it
    /// from `recipe` (the array's, when it was created in place).
    pub fn apply<A>(
        self,
        recipe: Option<super::Recipe>,
        into: A,
        write: impl FnOnce(A, &[u8]) -> Result<(), String>,
        make: impl FnOnce(A, super::Recipe) -> Result<(), String>,
    ) -> Result<(), String> {
        match (self, recipe) {
            (Part::Sent(bytes), _) => write(into, &bytes),
            (Part::Made, Some(recipe)) => make(into, recipe),
            (Part::Made, None) => Err("a part made in place without its recipe".into()),
        }
    }
}

/// Why the job stops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The rank that failed or was lost.
    pub rank: usize,
    /// What happened.
    pub message: String,
}
