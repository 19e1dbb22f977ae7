//! What the review of the cluster found (issue 26, item 6), as a job sees it:
//! - c. a panic in a loop's body on a worker rank ends the job at once, and the driver's
//!   error names the rank, the loop and the panic's message;
//! - d. a call whose captured values are larger than a call message carries runs on the
//!   driver's threads, as the job's workers, and prints what threads print (it killed the
//!   job before);
//! - item 4: `testing::record` on a job's driver records every call (a 2D loop over ratings
//!   generated in place, a 1D loop) as it crosses processes, and `testing::replay`
//!   replays the trace on this process with the same bits; both print what 2 threads
//!   print. (`cluster_kinds` records every other kind of loop.)
//! - issue 28, item 4: with the cost model on, a loop whose data fit the driver, in a job
//!   whose ranks are all on this machine, runs on the driver's threads as the job's
//!   workers (a 1D loop, a reconnaissance loop, an `iter_mut()` loop), and says so once;
//!   every call prints what 2 threads print. (Where ranks are
//!   on other machines, its first call runs there, its second crosses, and then the
//!   cheaper way measured: `exec::cost`'s unit test.)
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies of
//! this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::process::ExitCode;
use std::time::{Duration, Instant};

#[path = "common/factors.rs"]
mod factors;
#[path = "common/self_run.rs"]
mod self_run;
use factors::step;
use self_run::{main_of_roles, run_self_status};

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

/// A 1D loop that writes every row of `w`.
#[strads::parallel_for(expect = "1d")]
fn shrink(w: &mut DistArray<f32, 2>) {
    for u in 0..w.shape()[0] {
        for x in w.row_mut(u) {
            *x *= 0.9;
        }
    }
}

/// A 1D loop with a float sum: its plan's bits are not the serial loop's, so the cost
/// model times only where the plan runs.
#[strads::parallel_for(expect = "1d")]
fn decay(w: &mut DistArray<f32, 2>) -> f64 {
    let mut total = 0.0f64;
    for u in 0..w.shape()[0] {
        for x in w.row_mut(u) {
            *x *= 0.9;
            total += f64::from(*x);
        }
    }
    total
}

/// A scatter whose targets are read from data: planned by reconnaissance.
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(labels: &DistArray<u32, 1>, counts: &mut DistArray<i64, 1>) {
    for i in 0..labels.len() {
        counts[labels[i] as usize] += i as i64 + 1;
    }
}

/// An `iter_mut()` loop: each entry's value from its own and its row's weight.
#[strads::parallel_for(expect = "1d")]
fn blend(cells: &mut SparseArray<f32, 2>, w: &DistArray<f32, 1>) {
    for ([u, _], v) in cells.iter_mut() {
        *v = 0.5 * *v + w[u];
    }
}

/// FNV-1a over bit patterns.
fn fnv(bits: impl Iterator<Item = u64>) -> u64 {
    bits.fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b).wrapping_mul(0x100_0000_01b3)
    })
}

fn placed() {
    let mut w = DistArray::<f32, 2>::random([3000, 8], 5);
    let labels = DistArray::from_fn([20_000], |[i]| ((i * 31) % 97) as u32);
    let entries: Vec<([usize; 2], f32)> = (0..4000)
        .map(|e| ([e / 8, (e * 7) % 50], e as f32 * 0.25))
        .collect();
    let mut cells = SparseArray::from_entries([500, 50], entries).expect("in the shape");
    let weights = DistArray::<f32, 1>::random([500], 3);
    for call in 0..4 {
        let total = decay(&mut w);
        let h = fnv(w.as_slice().iter().map(|x| u64::from(x.to_bits())));
        println!("placed {call}: {:016x} {h:016x}", total.to_bits());
        let mut counts = DistArray::<i64, 1>::zeros([97]);
        scatter(&labels, &mut counts);
        blend(&mut cells, &weights);
        let c = fnv(counts.as_slice().iter().map(|&x| x as u64));
        let v = fnv(cells.iter().map(|(_, x)| u64::from(x.to_bits())));
        println!("scatter and blend {call}: {c:016x} {v:016x}");
    }
}

fn records() {
    let cfg = strads::generate::LowRankConfig {
        ratings: 3000,
        users: 150,
        items: 70,
        ..Default::default()
    };
    let r = strads::generate::low_rank_ratings(&cfg);
    let start = || {
        (
            DistArray::<f32, 2>::random([150, 5], 3),
            DistArray::<f32, 2>::random([70, 5], 4),
        )
    };
    let (mut w, mut h) = start();
    let ((), trace) = strads::testing::record(|| {
        for _ in 0..2 {
            step(&r, &mut w, &mut h);
            shrink(&mut w);
        }
    });
    let bits = |w: &DistArray<f32, 2>, h: &DistArray<f32, 2>| {
        let mut b = strads::testing::bits(w);
        b.extend(strads::testing::bits(h));
        b.iter()
            .fold(0u64, |s, &x| s.wrapping_mul(1_000_003).wrapping_add(x))
    };
    println!(
        "recorded {} calls, arrays {:016x}",
        trace.runs.len(),
        bits(&w, &h)
    );
    let (mut w2, mut h2) = start();
    strads::testing::replay(&trace, || {
        for _ in 0..2 {
            step(&r, &mut w2, &mut h2);
            shrink(&mut w2);
        }
    });
    println!("replayed arrays {:016x}", bits(&w2, &h2));
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

/// Runs this binary as `role` with `env`: whether it succeeded, its output and error, and
/// how long it took.
fn run(role: &str, env: &[(&str, &str)]) -> Result<(bool, String, String, Duration), String> {
    let started = Instant::now();
    let (code, out, err) = run_self_status("CLUSTER_REVIEW_ROLE", role, env)?;
    Ok((code == Some(0), out, err, started.elapsed()))
}

fn check() -> Result<(), String> {
    let procs = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    // One thread a rank, and two: the panicking thread ends the job itself.
    for threads in ["1", "2"] {
        let env = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", threads)];
        let (ok, _, err, took) = run("panics", &env)?;
        let said = "rank 1 failed: loop `boom` panicked: bad value at 9999";
        if ok || !err.contains(said) || err.contains("no packet") {
            return Err(format!(
                "2 x {threads}: the job's error does not say \"{said}\":\n{err}"
            ));
        }
        // Detection, not speed: the silent-rank timeout it replaces is 10 s.
        if took > Duration::from_secs(8) {
            return Err(format!(
                "2 x {threads}: the job took {took:?} to stop:\n{err}"
            ));
        }
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
    let cost = [("STRADS_COST", "1")];
    let (ok1, one, _, _) = run("placed", &[cost[0], ("STRADS_THREADS", "2")])?;
    let (ok2, many, err, _) = run("placed", &[cost[0], procs[0], procs[1]])?;
    // Every rank is on this machine: no call crosses.
    let said = "strads cost decay: runs on the driver's threads as the job's 2 workers: every \
                rank is on this machine";
    let placed = err.matches(said).count() == 1
        && !err.contains(": 2 processes x 1 threads; the driver sent");
    if !(ok1 && ok2) || one != many || one.lines().count() != 8 || !placed {
        return Err(format!(
            "the cost model's place: 2 processes print\n{many}\n2 threads print\n{one}\n{err}"
        ));
    }
    let (ok1, one, _, _) = run("records", &[("STRADS_THREADS", "2")])?;
    let (ok2, many, err, _) = run("records", &procs)?;
    let lines: Vec<&str> = one.lines().collect();
    let replayed_same = lines.len() == 2
        && lines[0].starts_with("recorded 4 calls, arrays ")
        && lines[1].ends_with(&lines[0][lines[0].len() - 16..]);
    // Both loops cross processes while recorded.
    let said = ["step", "shrink"].iter().all(|name| {
        err.contains(&format!(
            "strads cluster {name}: 2 processes x 1 threads; the driver sent"
        ))
    }) && !err.contains("runs on the driver's threads");
    let good = ok1 && ok2 && one == many && replayed_same && said;
    if !good {
        return Err(format!(
            "a recorded run: 2 processes print\n{many}\n2 threads print\n{one}\n{err}"
        ));
    }
    println!(
        "cluster_review: a worker's panic stops the job naming the rank, loop and message; \
         large captured values run on the driver's threads; the cost model keeps a loop of a \
         one-machine job on the driver, saying so; a recorded job replays on one process"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    let roles: [(&str, fn()); 4] = [
        ("panics", panics),
        ("captures", captures),
        ("placed", placed),
        ("records", records),
    ];
    main_of_roles("CLUSTER_REVIEW_ROLE", "cluster_review", &roles, check)
}
