//! The cluster runtime: the same program on many processes (docs/design.md, "Across processes").
//!
//! - `proto`: the sans-I/O protocol core: a state machine per rank fed frames and time,
//!   returning frames to send and its next timeout; the transfers of a call computed from
//!   its schedule; and the simulated network that runs many ranks in one process.
//! - `wire`: arrays' elements as bytes; `store`: a worker's copies of the driver's arrays.
//! - `session`: this process's place in the job (rank, transport, the shared core, the
//!   driver's directory of parts) and fail-stop; `job`: its lifecycle (started on first
//!   use, a worker serving for ever, the job's end); `start`: how it joins (launch,
//!   transport).
//! - `call`: one loop call across processes (driver and worker sides, the executor's
//!   hooks); `registry`: the loops linked into the binary, and a worker's serve loop.
//! - `spread`: data in parts on the ranks: collective operations that make, count and
//!   trade the parts of a sparse array.
//!
//! Without the feature `cluster` (a threads-only build) there is no transport: `start`
//! refuses a cluster setting, saying how to enable it, and no session is ever made, so the
//! rest of this module is compiled but never reached.

// The threads-only build never makes a session: what only a session reaches is unused.
#![cfg_attr(not(feature = "cluster"), allow(dead_code, unused_variables))]

pub mod away;
pub mod call;
pub mod job;
pub mod launch;
#[cfg(feature = "cluster")]
pub mod net;
/// Without the feature `cluster`: the transport as the session sees it, and no transport.
#[cfg(not(feature = "cluster"))]
pub mod net {
    pub mod link;
    pub use link::{Frame, Link, LinkEvent};
}
mod peers;
pub mod proto;
mod rankdata;
pub mod registry;
pub mod restart;
pub(crate) mod save;
mod schedules;
mod served;
pub mod session;
pub mod spread;
mod start;
pub mod store;
mod traces;
pub mod wire;

pub use crate::array::inparts::MADE_IN_PARTS_BYTES;
pub use job::{rank_and_size, start};
pub(crate) use traces::Steps;
