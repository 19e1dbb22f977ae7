//! The cluster runtime: the same program on many processes (docs/design.md, "Across processes").
//!
//! - `proto`: the sans-I/O protocol core: a state machine per rank fed frames and time,
//!   returning frames to send and its next timeout; the transfers of a call computed from
//!   its schedule; and the simulated network that runs many ranks in one process.
//! - `wire`: arrays' elements as bytes; `store`: a worker's copies of the driver's arrays.
//! - `session`: this process's place in the job (rank, transport, the shared core) and
//!   fail-stop; `start`: how it joins (launch, transport).
//! - `call`: one loop call across processes (driver and worker sides, the executor's
//!   hooks); `registry`: the loops linked into the binary, and a worker's serve loop.

pub mod call;
pub mod launch;
pub mod net;
mod peers;
pub mod proto;
mod rankdata;
pub mod registry;
mod schedules;
pub mod session;
mod start;
pub mod store;
pub mod wire;

/// Joins the cluster job this process belongs to, if any (`STRADS_PROCESSES`, `strads
/// run`, Slurm, Open MPI, PMI, or `STRADS_RANK`/`STRADS_SIZE`): the driver (rank 0) starts
/// or meets its workers and returns; a worker rank serves the driver's loop calls and
/// exits when the driver's program ends, never returning. Called by `#[strads::main]`
/// and by the first loop call; calling it again does nothing.
pub fn start() {
    let _ = session::get();
}

/// This process's rank and the job's size, once started: `(0, 1)` for a program run as
/// one process.
pub fn rank_and_size() -> (usize, usize) {
    session::current().map_or((0, 1), |s| (s.rank(), s.size()))
}
