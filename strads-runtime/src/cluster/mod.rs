//! The cluster runtime: the same program on many processes (DESIGN.md, "Cluster").
//!
//! - `launch`: who this process is (rank, size, coordinator) from `STRADS_*`, Slurm,
//!   Open MPI or PMI variables; starting the workers of `STRADS_PROCESSES=N`; the job
//!   secret.
//! - `net`: the transport: quinn + rustls (mutual TLS 1.3 with certificates from the job
//!   secret) on a tokio runtime of its own thread; frames between ranks.
//! - `proto`: the sans-I/O protocol core: a state machine per rank fed frames and time,
//!   returning frames to send and its next timeout; and the simulated network that runs
//!   many ranks in one process.

pub mod proto;
pub mod wire;
