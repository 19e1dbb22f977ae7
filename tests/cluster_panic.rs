//! A panic in a loop's body on a worker rank ends the job at once, and the driver's error
//! names the rank, the loop and the panic's message (issue 26, review item c); no process
//! is left behind.
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies of
//! this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use strads::prelude::*;

/// A 1D loop whose body panics at the last element, which rank 1 of 2 runs.
#[strads::parallel_for(expect = "1d")]
fn boom(w: &mut DistArray<f64, 1>, n: usize) {
    for u in 0..n {
        if u == n - 1 {
            panic!("bad value at {u}");
        }
        w[u] += 1.0;
    }
}

fn program() {
    let n = 10_000;
    let mut w = DistArray::<f64, 1>::zeros([n]);
    boom(&mut w, n);
    println!("not reached: {}", w[[0]]);
}

fn check() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    let started = Instant::now();
    let out = cmd
        .env("CLUSTER_PANIC_ROLE", "program")
        .env("STRADS_PROCESSES", "2")
        .env("STRADS_THREADS", "1")
        .env("STRADS_COST", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run: {e}"))?;
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    let said = "rank 1 failed: loop `boom` panicked: bad value at 9999";
    if out.status.success() || !err.contains(said) || err.contains("no packet") {
        return Err(format!(
            "the job's error does not say \"{said}\" (status {:?}):\n{err}",
            out.status
        ));
    }
    // Detection, not speed: the silent-rank timeout it replaces is 10 s.
    if took > Duration::from_secs(8) {
        return Err(format!("the job took {took:?} to stop:\n{err}"));
    }
    println!("cluster_panic: a worker's panic stops the job naming the rank, loop and message");
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    if std::env::var("CLUSTER_PANIC_ROLE").as_deref() == Ok("program") {
        program();
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check() {
        eprintln!("cluster_panic: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
