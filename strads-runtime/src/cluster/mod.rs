//! The cluster runtime: the same program on many processes (DESIGN.md, "Cluster").
//!
//! - `proto`: the sans-I/O protocol core: a state machine per rank fed frames and time,
//!   returning frames to send and its next timeout; the transfers of a call computed from
//!   its schedule; and the simulated network that runs many ranks in one process.
//! - `wire`: arrays' elements as bytes; a worker's copies of the driver's arrays.
//! - `session`: this process's place in the job (rank, transport, the shared core) and
//!   fail-stop; `start`: how it joins (launch, transport).
//! - `call`: one loop call across processes (driver and worker sides, the executor's
//!   hooks); `registry`: the loops linked into the binary, and a worker's serve loop.

pub mod call;
pub mod proto;
pub mod registry;
pub mod session;
mod start;
pub mod wire;
