//! Parts a call leaves on other ranks are not sent again while the driver has not changed
//! the array, and are sent again when it has: a 2D loop called repeatedly, each call
//! followed by a loop that only reads its arrays, with serial code changing them between
//! some calls, gives as 2 processes the bits it gives as 2 threads, and moves fewer bytes
//! when nothing changed in between.
//!
//! Written parts also stay where they were written between calls (docs/design.md, "Across processes", arrays in parts): a
//! chain of calls of two different loops that write the same array, with no serial code
//! in between, gives the same bits, and the parts come home once, when serial code reads
//! the arrays at the end.
//!
//! A worker drops its copy of an array when the driver drops the array: after a loop over
//! temporary arrays, the worker holds none of them.
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml): its `main` carries
//! `#[strads::main]`, so the copies of this binary that `STRADS_PROCESSES` starts go
//! straight to serving. It runs itself as the program under test.

use std::process::ExitCode;

#[path = "common/factors.rs"]
mod factors;
#[path = "common/self_run.rs"]
mod self_run;
use factors::step;
use self_run::{main_of_roles, run_self};

use strads::prelude::*;

/// A loop that only reads the arrays `step` writes: what other ranks hold of them travels
/// no more (the parts they lack go by regions, applied before the loop lends them).
#[strads::parallel_for]
fn total(r: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, i], &x) in r {
        s += (x - dot(w.row(u), h.row(i))) as f64;
    }
    s
}

/// A 1D loop over the rows of `w`, which `step` also writes (by another partition).
#[strads::parallel_for(expect = "1d")]
fn decay(w: &mut DistArray<f32, 2>, n: usize) {
    for u in 0..n {
        for x in w.row_mut(u) {
            *x *= 0.99;
        }
    }
}

/// Two read-only parameters that may be one array: `w` read by parts (rows of `u`), `v`
/// whole (row 0 and rows of `u` in one loop).
#[strads::parallel_for(expect = "1d")]
fn mix(w: &DistArray<f32, 2>, v: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>, n: usize) {
    for u in 0..n {
        out[u] = w.row(u)[0] + v[[0, 0]] * v[[u, 1]];
    }
}

/// The arrays' bits, as one number.
fn digest(w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> u64 {
    strads::testing::bits(w)
        .into_iter()
        .chain(strads::testing::bits(h))
        .fold(0u64, |s, b| s.wrapping_mul(1_000_003).wrapping_add(b))
}

/// The ratings and the two factor arrays every program starts from.
fn setup() -> (SparseArray<f32, 2>, DistArray<f32, 2>, DistArray<f32, 2>) {
    let cfg = strads::generate::LowRankConfig {
        ratings: 4000,
        users: 120,
        items: 90,
        ..Default::default()
    };
    (
        strads::generate::low_rank_ratings(&cfg),
        DistArray::random([120, 4], 1),
        DistArray::random([90, 4], 2),
    )
}

/// The in-place program: `step` and `decay` in turn, with no serial code in between;
/// the arrays' bits once at the end.
fn in_place() {
    let (r, mut w, mut h) = setup();
    for _ in 0..4 {
        step(&r, &mut w, &mut h);
        decay(&mut w, 120);
    }
    println!("in place: {:016x}", digest(&w, &h));
    println!("total {:016x}", total(&r, &w, &h).to_bits());
}

/// Temporary arrays, each written across processes and dropped: the worker drops its
/// copies too, and keeps the one array the driver never drops (leaked, so it is alive when
/// the job ends).
fn forget() {
    let kept: &'static mut DistArray<f32, 2> = Box::leak(Box::new(DistArray::random([50, 4], 9)));
    decay(kept, 50);
    // Lent without a view (its version moves on while rank 1 still holds its rows): the
    // next call brings those rows home first, instead of taking them from rank 1.
    let _ = strads::__private::SharedMut::new(&mut *kept);
    decay(kept, 50);
    let mut total = kept.as_slice().iter().sum::<f32>();
    for n in 0..6 {
        let mut t = DistArray::<f32, 2>::random([200, 4], n);
        decay(&mut t, 200);
        total += t.as_slice().iter().sum::<f32>();
    }
    println!("forget: {:08x}", total.to_bits());
}

/// One array passed as both of `mix`'s parameters, twice, with a written call between:
/// the call stays on the driver (a worker keeps one copy of an array), with the bits of
/// 2 threads.
fn alias() {
    let (r, mut w, mut h) = setup();
    let mut out = DistArray::<f32, 1>::zeros([120]);
    let mut acc = 0u64;
    for _ in 0..2 {
        step(&r, &mut w, &mut h);
        mix(&w, &w, &mut out, 120);
        acc = strads::testing::bits(&out)
            .into_iter()
            .fold(acc, |s, b| s.wrapping_mul(1_000_003).wrapping_add(b));
    }
    println!("alias: {acc:016x}");
}

/// The program under test: prints the arrays' bits after each call.
fn program(change: bool) {
    let (r, mut w, mut h) = setup();
    // Alive when the job ends, so rank 1 reports what it keeps of it.
    let r: &'static SparseArray<f32, 2> = Box::leak(Box::new(r));
    for call in 0..6 {
        step(r, &mut w, &mut h);
        if change && call % 2 == 0 {
            // Serial code on the driver changes both arrays: what other ranks hold of them
            // (rank 1's rows of one, the partition of the other it wrote last) is stale.
            for x in w.as_mut_slice() {
                *x *= 0.5;
            }
            h.row_mut(call)[0] += 1.0;
        }
        let sum = digest(&w, &h);
        println!(
            "call {call}: {sum:016x} total {:016x}",
            total(r, &w, &h).to_bits()
        );
    }
}

/// Runs this binary as the program `role` with `env`; its output and its explain lines.
fn run(role: &str, env: &[(&str, &str)]) -> Result<(String, String), String> {
    run_self("CLUSTER_COPIES_ROLE", role, env)
}

/// The number after `prefix` on a line of `text`, if any.
fn figure(text: &str, prefix: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

fn check() -> Result<(), String> {
    let procs = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let threads = [("STRADS_THREADS", "2")];
    let mut sent = Vec::new();
    for role in ["keep", "change"] {
        let (one, _) = run(role, &threads)?;
        let (many, explain) = run(role, &procs)?;
        if one.lines().count() != 6 || many != one {
            return Err(format!(
                "{role}: 2 processes print\n{many}\n2 threads print\n{one}"
            ));
        }
        sent.push(figure(&explain, "strads cluster: the driver sent ").unwrap_or(0));
        // The ratings are generated in place: rank 1 makes its half of the entries, and
        // the first call of each loop trades them so that it holds the blocks its worker
        // runs (of `step` and of `total`): at the end it holds the ratings as an array of
        // no entries (its shape), as its part (under 48,000 bytes: 4,000 entries of 12
        // bytes are the whole) and as its two loops' blocks, not whole; no `iter_mut()`
        // values.
        let line = explain
            .lines()
            .find_map(|l| l.strip_prefix("[rank 1] strads cluster: this rank holds "))
            .unwrap_or_default();
        let numbers: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        if !matches!(numbers[..], [1, 0, 2, b, 1, p, 0] if b > 0 && b < 2 * 48_000 && p < 48_000) {
            return Err(format!("{role}: rank 1 holds {line:?}:\n{explain}"));
        }
    }
    // In place: the same bits, and the parts come home once (when `digest` reads `w`;
    // `h` is home by then or comes with it), not after each of the 8 calls.
    let (one, _) = run("place", &threads)?;
    let (many, explain) = run("place", &procs)?;
    if one.lines().count() != 2 || many != one {
        return Err(format!(
            "in place: 2 processes print\n{many}\n2 threads print\n{one}"
        ));
    }
    let homes = figure(
        &explain,
        "strads cluster: parts left on other ranks came home ",
    );
    if !matches!(homes, Some(1..=2)) {
        return Err(format!(
            "in place: parts came home {homes:?} times, not once per array at the end:\n{explain}"
        ));
    }
    // Unchanged arrays: the rows of w and the h partition rank 1 keeps are not sent again.
    if !(sent[0] > 0 && sent[0] < sent[1]) {
        return Err(format!(
            "the driver sent {} bytes when nothing changed between calls, {} when serial \
             code changed the arrays",
            sent[0], sent[1]
        ));
    }
    // Dropped arrays: the worker holds none of the six temporary arrays at the end, only
    // the one the driver keeps.
    let (one, _) = run("forget", &threads)?;
    let (many, explain) = run("forget", &procs)?;
    if one.lines().count() != 1 || many != one {
        return Err(format!(
            "forget: 2 processes print\n{many}\n2 threads print\n{one}"
        ));
    }
    let held = figure(&explain, "[rank 1] strads cluster: this rank holds ");
    if held != Some(1) {
        return Err(format!(
            "forget: rank 1 holds {held:?} arrays at the end, not 1:\n{explain}"
        ));
    }
    // One array as two parameters: the same bits, the call kept on the driver.
    let (one, _) = run("alias", &threads)?;
    let (many, explain) = run("alias", &procs)?;
    if one.lines().count() != 1 || many != one {
        return Err(format!(
            "alias: 2 processes print\n{many}\n2 threads print\n{one}"
        ));
    }
    if !explain.contains("(`w` and `v` are the same array)") {
        return Err(format!(
            "alias: the call did not say why it stays:\n{explain}"
        ));
    }
    println!(
        "cluster_copies: same bits as 2 threads; the driver sent {} bytes (arrays kept) and {} \
         (arrays changed between calls)",
        sent[0], sent[1]
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    let roles: [(&str, fn()); 5] = [
        ("keep", || program(false)),
        ("change", || program(true)),
        ("place", in_place),
        ("forget", forget),
        ("alias", alias),
    ];
    main_of_roles("CLUSTER_COPIES_ROLE", "cluster_copies", &roles, check)
}
