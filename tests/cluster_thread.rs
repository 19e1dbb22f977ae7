//! A program without `#[strads::main]` whose first call runs on a thread it spawned, which
//! then ends: the job's workers live on (their death signal follows the process, not the
//! thread that started them), and the program's later calls, from its main thread, print
//! as 2 processes what 2 threads print (issue 26, review item b).
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml), and on purpose
//! without `#[strads::main]`: the copies `STRADS_PROCESSES` starts become workers at their
//! first call, as the driver's program would.

use std::process::ExitCode;

#[path = "common/self_run.rs"]
mod self_run;
use self_run::{main_of, run_self};

use strads::prelude::*;

/// A 1D loop that writes every element of `w`.
#[strads::parallel_for(expect = "1d")]
fn grow(w: &mut DistArray<f64, 1>, n: usize, s: f64) {
    for u in 0..n {
        w[u] = w[u] * 0.5 + s * (u as f64 + 1.0);
    }
}

/// A loop that reads `w` whole into a sum.
#[strads::parallel_for]
fn total(w: &DistArray<f64, 1>, n: usize) -> f64 {
    let mut s: f64 = 0.0;
    for u in 0..n {
        s += w[u];
    }
    s
}

fn program() {
    let n = 10_000;
    // The first call, from a thread that ends right after.
    let w = std::thread::spawn(move || {
        let mut w = DistArray::<f64, 1>::zeros([n]);
        grow(&mut w, n, 1.0);
        w
    })
    .join()
    .expect("the first call's thread");
    // Long enough for a death signal tied to that thread to have struck.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut w = w;
    for round in 0..3 {
        grow(&mut w, n, round as f64);
        println!("round {round}: {:016x}", total(&w, n).to_bits());
    }
}

fn check() -> Result<(), String> {
    let (one, _) = run_self("CLUSTER_THREAD_ROLE", "program", &[("STRADS_THREADS", "2")])?;
    let env = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let (many, explain) = run_self("CLUSTER_THREAD_ROLE", "program", &env)?;
    if one.lines().count() != 3 || many != one {
        return Err(format!(
            "2 processes print\n{many}\n2 threads print\n{one}\n{explain}"
        ));
    }
    // Every call crossed: the first, from the thread, and the three from main.
    if !explain.contains("strads cluster grow: 4 calls across processes") {
        return Err(format!("the calls did not cross processes:\n{explain}"));
    }
    println!("cluster_thread: a first call on a thread that ended left the workers running");
    Ok(())
}

fn main() -> ExitCode {
    main_of("CLUSTER_THREAD_ROLE", "cluster_thread", program, check)
}
