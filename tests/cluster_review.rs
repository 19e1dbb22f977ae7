//! What the review of the cluster found (issue 26, item 6), as a job sees it:
//! - c. a panic in a loop's body on a worker rank ends the job at once, and the driver's
//!   error names the rank, the loop and the panic's message;
//! - d. a call whose captured values are larger than a call message carries runs on the
//!   driver's threads, as the job's workers, and prints what threads print (it killed the
//!   job before).
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

/// A 1D loop that reads a large captured table.
#[strads::parallel_for(expect = "1d")]
fn lookup(w: &mut DistArray<f64, 1>, n: usize, table: Vec<u32>) {
    for u in 0..n {
        w[u] += table[(u * 7919) % table.len()] as f64;
    }
}

fn panics() {
    let n = 10_000;
    let mut w = DistArray::<f64, 1>::zeros([n]);
    boom(&mut w, n);
    println!("not reached: {}", w[[0]]);
}

fn captures() {
    let n = 10_000;
    let mut w = DistArray::<f64, 1>::zeros([n]);
    // 80 MiB of captured values, more than a quarter of a call message.
    let table: Vec<u32> = (0..20u32 << 20)
        .map(|x| x.wrapping_mul(2_654_435_761))
        .collect();
    lookup(&mut w, n, table);
    let s: f64 = w.as_slice().iter().sum();
    println!("sum {:016x}", s.to_bits());
}

/// Runs this binary as `role` with `env`: its status, output and error, and how long.
fn run(role: &str, env: &[(&str, &str)]) -> Result<(bool, String, String, Duration), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    let started = Instant::now();
    let out = cmd
        .env("CLUSTER_REVIEW_ROLE", role)
        .env("STRADS_COST", "0")
        .env("STRADS_EXPLAIN", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run: {e}"))?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    ))
}

fn check() -> Result<(), String> {
    let procs = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let (ok, _, err, took) = run("panics", &procs)?;
    let said = "rank 1 failed: loop `boom` panicked: bad value at 9999";
    if ok || !err.contains(said) || err.contains("no packet") {
        return Err(format!("the job's error does not say \"{said}\":\n{err}"));
    }
    // Detection, not speed: the silent-rank timeout it replaces is 10 s.
    if took > Duration::from_secs(8) {
        return Err(format!("the job took {took:?} to stop:\n{err}"));
    }
    let (ok1, one, _, _) = run("captures", &[("STRADS_THREADS", "2")])?;
    let (ok2, many, err, _) = run("captures", &procs)?;
    let local =
        "lookup: runs on the driver's threads as the job's 2 workers (its captured values take";
    if !(ok1 && ok2) || one != many || one.lines().count() != 1 || !err.contains(local) {
        return Err(format!(
            "large captured values: 2 processes print\n{many}\n2 threads print\n{one}\n{err}"
        ));
    }
    println!(
        "cluster_review: a worker's panic stops the job naming the rank, loop and message; \
         large captured values run on the driver's threads"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    match std::env::var("CLUSTER_REVIEW_ROLE").as_deref() {
        Ok("panics") => panics(),
        Ok("captures") => captures(),
        _ => {
            if let Err(e) = check() {
                eprintln!("cluster_review: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
