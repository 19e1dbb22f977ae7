//! The workspace's integration tests, one binary (linking strads, quinn, tokio and rustls
//! once, not once per file), in topic folders:
//!
//! - `macro`: what the attribute accepts and refuses, and how;
//! - `plans`: every kind of plan, bit for bit against the serial replay of its order;
//! - `models`: the examples' and benches' programs end to end;
//! - `io`: malformed inputs and settings, and the examples as cluster jobs.
//!
//! Tests that must be the whole program (their `main` is `#[strads::main]`, so the copies
//! `STRADS_PROCESSES` starts of them serve) are targets of their own: `cluster_copies`,
//! `cluster_kinds` and `shapes_across`.

#[path = "../common/bins.rs"]
mod bins;
#[path = "../common/mod.rs"]
mod common;
mod io;
mod r#macro;
mod models;
mod plans;
#[path = "../common/procs.rs"]
mod procs;

/// The libtest name of test `name` in module `module` (`module_path!()` of the caller):
/// a test that runs another test of this binary in a child process names it with this.
pub(crate) fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}
