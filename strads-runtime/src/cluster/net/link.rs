//! The transport as the session sees it: frames between ranks, and what the transport
//! reports. QUIC (`net`) implements it; tests may put anything behind it.

use std::time::Duration;

/// A frame between ranks.
#[derive(Debug)]
pub enum Frame {
    /// A control message's bytes.
    Control(Vec<u8>),
    /// A block: its header message's bytes and its elements (shared, so that bytes sent
    /// to several ranks are held once).
    Block { header: Vec<u8>, data: bytes::Bytes },
}

/// What the transport reports.
#[derive(Debug)]
pub enum LinkEvent {
    /// A frame from a rank.
    Frame { from: usize, frame: Frame },
    /// A rank is gone.
    Lost { rank: usize, reason: String },
}

/// The transport as the session uses it (QUIC in `net`).
pub trait Link: Send + Sync {
    /// Queues a frame to `to`; never blocks.
    fn send(&self, to: usize, frame: Frame);
    /// The next event, waiting at most `d`.
    fn recv_timeout(&self, d: Duration) -> Option<LinkEvent>;
    /// Sends what is queued and closes (bounded).
    fn close(&self);
    /// Bytes sent and received so far.
    fn bytes(&self) -> (u64, u64);
    /// Whether every other rank is on this machine (reached over loopback): processes
    /// then share its cores and memory, and a loop run on this process's threads as the
    /// job's workers does the same work without the network.
    fn one_host(&self) -> bool {
        false
    }
}
