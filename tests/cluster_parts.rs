//! Arrays in parts on the ranks (issue 25; docs/design.md, "Arrays live in parts on the
//! ranks"):
//! - arrays created in place (`zeros`, `random`, `full`, 1-D and 2-D, `f32` and `f64`) give the
//!   bits they give on threads, through 1D and 2D loops that write them, loops that only
//!   read them (before any loop wrote them, too), serial reads and writes of single
//!   elements, and whole-array reads, as 2 x 1, 2 x 2 and 3 x 1 processes against 2, 4 and
//!   3 threads;
//! - a loop that only reads parts other ranks hold brings nothing home, whether it
//!   indexes them or iterates them: the parts come home only when serial code reads the
//!   arrays;
//! - ratings generated in place on the ranks (each rank keeps its range of the entries)
//!   and split in place run loops over their parts with the bits of threads, and serial
//!   code reading them (iteration, one entry, a clone) brings the same entries home;
//! - memory per rank falls with the ranks: a 64 MiB array made, written and read across 2
//!   processes costs each rank at most 0.75 of what one process holds.
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
use self_run::{digest, figure, main_of_roles, peak_kb, run_self};

use strads::prelude::*;

/// A 1D loop that writes every row of `w` from `v`'s rows.
#[strads::parallel_for(expect = "1d")]
fn grow(w: &mut DistArray<f32, 2>, v: &DistArray<f64, 1>, n: usize) {
    for u in 0..n {
        let vu = v[u] as f32;
        for (k, x) in w.row_mut(u).iter_mut().enumerate() {
            *x = *x * 0.5 + vu * (k as f32 + 1.0);
        }
    }
}

/// A loop that only reads `w` and `h` by parts.
#[strads::parallel_for]
fn error(r: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, i], &x) in r {
        let e = (x - dot(w.row(u), h.row(i))) as f64;
        s += e * e;
    }
    s
}

/// A 1-D array read by parts, written into a zeros array created in place.
#[strads::parallel_for(expect = "1d")]
fn copy(v: &DistArray<f64, 1>, out: &mut DistArray<f64, 1>, n: usize) {
    for u in 0..n {
        out[u] += v[u] * 2.0;
    }
}

/// A loop that only reads `w`, by rows.
#[strads::parallel_for(expect = "1d")]
fn firsts(w: &DistArray<f32, 2>, n: usize) -> f64 {
    let mut s: f64 = 0.0;
    for u in 0..n {
        s += w.row(u)[0] as f64;
    }
    s
}

/// A reduction over `w` itself: each block reads its own rows of it, where they are.
#[strads::parallel_for]
fn total(w: &DistArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([_u, _k], &x) in w {
        s += f64::from(x);
    }
    s
}

/// A wavefront over the cost matrix it iterates (DTW's table): each tile reads its own
/// elements of `cost`, which are made where the tile runs when `cost` is created in place.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn warp(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

/// The bits of `a`.
fn bits<T: Copy + Into<f64>, const N: usize>(a: &DistArray<T, N>) -> Vec<u64> {
    a.as_slice().iter().map(|&x| x.into().to_bits()).collect()
}

/// The shape of `warp`'s cost matrix.
const COST_ROWS: usize = 60;
const COST_COLS: usize = 50;

/// The program under test: arrays made in place, loops and serial code in turn; one
/// line per point where serial code looks.
fn program() {
    let cfg = strads::generate::LowRankConfig {
        ratings: 3000,
        users: 150,
        items: 70,
        ..Default::default()
    };
    let r = strads::generate::low_rank_ratings(&cfg);
    let mut w = DistArray::<f32, 2>::random([150, 5], 3);
    let mut h = DistArray::<f32, 2>::random([70, 5], 4);
    let v = DistArray::<f64, 1>::random([150], 5);
    let mut out = DistArray::<f64, 1>::zeros([150]);
    let mut g = DistArray::<f32, 2>::zeros([150, 5]);
    // Read before any loop wrote them: every rank makes the parts it reads.
    println!("fresh error {:016x}", error(&r, &w, &h).to_bits());
    copy(&v, &mut out, 150);
    grow(&mut g, &v, 150);
    for round in 0..3 {
        grow(&mut w, &v, 150);
        // Iterates `w` itself, only reading: its parts stay where `grow` left them.
        println!("round {round}: total {:016x}", total(&w).to_bits());
        step(&r, &mut w, &mut h);
        // Only reads: the parts stay where they are.
        let e = error(&r, &w, &h);
        println!("round {round}: error {:016x}", e.to_bits());
        if round == 1 {
            // One element read, one written, from serial code.
            println!("w[7][2] {:08x}", w[[7, 2]].to_bits());
            h[[3, 1]] += 1.0;
        }
    }
    // An element read while the other parts stay away, its reference kept across a loop
    // that only reads the array (whose parts come to this process's workers around it).
    let held = &w[[140, 4]];
    let e = error(&r, &w, &h);
    println!("held {:08x} error {:016x}", held.to_bits(), e.to_bits());
    copy(&v, &mut out, 150);
    // A wavefront over a cost matrix created in place: no rank receives any of it.
    let cost = DistArray::<f32, 2>::random([COST_ROWS, COST_COLS], 11);
    let mut d = DistArray::<f32, 2>::full([COST_ROWS + 1, COST_COLS + 1], f32::INFINITY);
    d[[0, 0]] = 0.0;
    warp(&cost, &mut d);
    println!("warp {:016x}", digest(&[bits(&d)]));
    println!(
        "arrays {:016x}",
        digest(&[bits(&w), bits(&h), bits(&v), bits(&out), bits(&g)])
    );
    // The ratings were generated in place on the ranks; split in place too.
    eprintln!("ratings spread: {}", r.is_spread());
    let (train, test) = strads::load::split(&r, 0.2, 9);
    drop(r);
    eprintln!("halves spread: {} {}", train.is_spread(), test.is_spread());
    println!(
        "split {} {} sorted {}",
        train.nnz(),
        test.nnz(),
        test.is_sorted()
    );
    step(&train, &mut w, &mut h);
    println!("train error {:016x}", error(&train, &w, &h).to_bits());
    println!("test error {:016x}", error(&test, &w, &h).to_bits());
    // Serial code reads the test set whole: its parts come home, in order.
    let sum = test.iter().fold(0.0f64, |s, ([u, i], &x)| {
        s * 0.5 + (u * 70 + i) as f64 + x as f64
    });
    println!(
        "test entries {:016x}, entry 5 {:?}",
        sum.to_bits(),
        test.entry(5)
    );
    // The training set, brought home by a clone, then used by a loop again.
    let copy_of = train.clone();
    println!("copy error {:016x}", error(&copy_of, &w, &h).to_bits());
}

/// The memory program: a 64 MiB array made in place, written by a 1D loop and read by
/// another; serial code reads elements of it (by reference: their windows come home; by
/// value: copies); prints this process's peak resident set.
fn memory() {
    let rows = 1 << 20;
    let mut w = DistArray::<f32, 2>::random([rows, 16], 1);
    let v = DistArray::<f64, 1>::zeros([rows]);
    grow(&mut w, &v, rows);
    println!("memory {:016x}", firsts(&w, rows).to_bits());
    println!("total {:016x}", total(&w).to_bits());
    // Serial code reads a few elements: only the windows around them come home.
    let picks = [w[[7, 3]], w[[rows / 2 + 11, 0]], w.row(rows - 2)[15]];
    println!("picks {:?}", picks.map(f32::to_bits));
    // Serial code reads elements by value all over the array (a sample of rows): those
    // the other rank holds come as copies of their windows, at most 4 MiB kept, and
    // nothing comes home.
    let sample: Vec<usize> = (0..rows).step_by(997).collect();
    let sampled: f64 = sample
        .iter()
        .map(|&r| f64::from(w.value([r, r % 16])))
        .sum();
    // Again, the sample's last 32 rows: their windows are among the copies kept.
    let again: f64 = sample[sample.len() - 32..]
        .iter()
        .map(|&r| f64::from(w.value([r, (r + 1) % 16])))
        .sum();
    println!(
        "sampled {:016x} {:016x}",
        sampled.to_bits(),
        again.to_bits()
    );
    // Serial code sets elements by value: those the other rank holds are set there
    // (nothing comes home), those here (the driver's rows, or read home by the picks) here;
    // the last write of an element wins. A loop and reads by value then see them as
    // threads do.
    w.set([rows - 5000, 2], 0.5);
    let sets = (0..64).map(|k| ([rows / 2 + 1000 * k + 7, k % 16], k as f32 + 0.25));
    let more = [
        ([7, 3], 1.5),
        ([rows - 9, 2], 2.5),
        ([rows - 5000, 2], 4.5),
        ([7, 3], 3.5),
    ];
    w.set_many(sets.chain(more));
    println!(
        "after sets {:016x} {:016x} {} {} {}",
        firsts(&w, rows).to_bits(),
        total(&w).to_bits(),
        w.value([rows - 5000, 2]),
        w.value([rows - 9, 2]),
        w.value([7, 3])
    );
    // Setting nothing changes nothing: the next loop takes the parts where they are.
    w.set_many(std::iter::empty());
    println!("after no sets {:016x}", firsts(&w, rows).to_bits());
    // Serial code writes an element held by the other rank: its window comes home and
    // stays; the next loop takes the rest from where it is.
    w[[rows - 3, 0]] += 1.0;
    println!("after a write {:016x}", firsts(&w, rows).to_bits());
    // And an array created in place that no loop has used: only the written window is
    // made here, the rest where the loop needs it.
    let mut z = DistArray::<f32, 2>::random([rows, 16], 9);
    // Read by value before any rank made it: copies made from its recipe, with the bits
    // of the array threads make, and nothing of the array made here (256 windows, 16 MiB,
    // when made).
    let drawn: f64 = (0..rows)
        .step_by(4099)
        .map(|r| f64::from(z.value([r, r % 16])))
        .sum();
    println!(
        "drawn {:016x} {}",
        drawn.to_bits(),
        z.row_values(rows - 1)[15]
    );
    z[[rows - 7, 0]] = 2.0;
    z.row_mut(3)[0] -= 1.0;
    println!("fresh {:016x}", firsts(&z, rows).to_bits());
    // Filled in place: each rank fills the rows it reads.
    let f = DistArray::<f32, 2>::full([rows, 16], 0.25);
    println!("full {:016x}", firsts(&f, rows).to_bits());
    let peak = peak_kb();
    eprintln!("program peak {peak} kB");
}

fn check() -> Result<(), String> {
    for (procs, threads) in [("2", "1"), ("2", "2"), ("3", "1")] {
        let workers =
            (procs.parse::<usize>().unwrap() * threads.parse::<usize>().unwrap()).to_string();
        let (one, _) = run_self(
            "CLUSTER_PARTS_ROLE",
            "program",
            &[("STRADS_THREADS", &workers)],
        )?;
        let env = [("STRADS_PROCESSES", procs), ("STRADS_THREADS", threads)];
        let (many, explain) = run_self("CLUSTER_PARTS_ROLE", "program", &env)?;
        if one.lines().count() != 16 || many != one {
            return Err(format!(
                "{procs} x {threads}: processes print\n{many}\n{workers} threads print\n{one}"
            ));
        }
        if !explain.contains("ratings spread: true")
            || !explain.contains("halves spread: true true")
        {
            return Err(format!(
                "{procs} x {threads}: the ratings were not made in place:\n{explain}"
            ));
        }
        // Parts come home only for serial code: the element read (w) and written (h),
        // and the arrays read whole (w, h, v, out, g, warp's d): 8 times; and once for the rows of
        // `w` the driver's own workers read in `error` over the test set, whose partition
        // is not the training set's, which left them on other ranks: at most 8. The
        // other `error` calls, the two `copy` calls and the three `total` calls, which
        // only read `w`, `h` and `v` (`total` iterating `w` itself), bring nothing home
        // (when they did, 11 more).
        let homes = figure(&explain, "parts left on other ranks came home ");
        if !matches!(homes, Some(n) if n <= 9.0) {
            return Err(format!(
                "{procs} x {threads}: parts came home {homes:?} times:\n{explain}"
            ));
        }
        // `warp`'s cost matrix, created in place, is made where its tiles run: the call
        // sends only the other ranks' rows of `d` (when `cost` was read whole, it crossed
        // whole too).
        let sent: Option<f64> = explain
            .lines()
            .find(|l| l.starts_with("strads cluster warp: ") && l.contains(" sent "))
            .and_then(|l| figure(l, " the driver sent "));
        let others = procs.parse::<usize>().unwrap() - 1;
        let cost_bytes = (COST_ROWS * COST_COLS * 4 * others) as f64;
        if !matches!(sent, Some(b) if b < cost_bytes) {
            return Err(format!(
                "{procs} x {threads}: warp's first call sent {sent:?} bytes, not less than \
                 its cost matrix to each other rank, {cost_bytes}:\n{explain}"
            ));
        }
    }
    // Memory: each of 2 ranks holds about half of what one process holds.
    let peak = |err: &str| figure(err, "program peak ").unwrap_or(0.0) / 1024.0;
    let (one, err) = run_self("CLUSTER_PARTS_ROLE", "memory", &[("STRADS_THREADS", "2")])?;
    let alone = peak(&err);
    let env = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let (many, explain) = run_self("CLUSTER_PARTS_ROLE", "memory", &env)?;
    if many != one {
        return Err(format!(
            "memory: 2 processes print\n{many}\n2 threads print\n{one}"
        ));
    }
    // The three reads and the write brought at most three windows of 64 KiB home, and
    // `total`, iterating the array, nothing (it brought half of it home before) (the
    // first read is of the driver's own rows; before windows, half of the 64 MiB array
    // came home for the first read); the fresh array's windows are made here.
    let fetched = figure(&explain, "came home ").zip(
        explain
            .lines()
            .find_map(|l| l.split_once(" times (").map(|(_, r)| r))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|b| b.parse::<f64>().ok()),
    );
    if !matches!(fetched, Some((n, bytes)) if n <= 3.0 && bytes <= 3.0 * 65536.0) {
        return Err(format!(
            "memory: serial reads of three elements brought home (times, bytes) {fetched:?}:\n{explain}"
        ));
    }
    // The sample's elements on the other rank came as copies of their windows: 526 of
    // its 1,052 reads, in 512 windows of 1,024 rows, of which the two read by reference
    // before were home; the second pass over its last 32 rows copied nothing more (542
    // without the copies kept). None came home (checked above).
    let copies = figure(&explain, "serial code copied ");
    if !matches!(copies, Some(n) if (505.0..=515.0).contains(&n)) {
        return Err(format!(
            "memory: serial reads by value copied {copies:?} windows:\n{explain}"
        ));
    }
    // The two calls that set elements the other rank holds set them there.
    let sets = figure(
        &explain,
        "serial code wrote elements where other ranks hold them ",
    );
    if sets != Some(2.0) {
        return Err(format!(
            "memory: serial code's sets by value reached the other rank {sets:?} times:\n{explain}"
        ));
    }
    let driver = peak(&explain);
    let worker = figure(&explain, "strads memory rank 1: peak resident ").unwrap_or(f64::MAX);
    if !(alone > 64.0 && driver < 0.75 * alone && worker < 0.75 * alone) {
        return Err(format!(
            "memory: one process peaks at {alone:.1} MiB; as 2 processes the driver at \
             {driver:.1} MiB and rank 1 at {worker:.1} MiB, not below 0.75 of it:\n{explain}"
        ));
    }
    println!(
        "cluster_parts: same bits as threads at 2 x 1, 2 x 2, 3 x 1; peak {alone:.1} MiB \
         alone, {driver:.1} / {worker:.1} MiB as 2 processes"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    let roles: [(&str, fn()); 2] = [("program", program), ("memory", memory)];
    main_of_roles("CLUSTER_PARTS_ROLE", "cluster_parts", &roles, check)
}
