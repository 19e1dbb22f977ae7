//! `DistArray::from_fn` made in parts on a cluster job's driver (issue 25, item 2): the
//! closure runs on the driver in row-major order (here a sequential generator, so any
//! other order would change the values), every other rank gets its rows as they are made,
//! and no process holds the whole array:
//! - arrays of 1 to 3 dims and five element types made by `from_fn`, and sparse arrays
//!   made by `from_entries_iter` and `from_entries` (spread arrays, each rank a range of
//!   the entries), give the bits threads give through a 1D loop that writes one, a 2D loop over ratings that writes two, a
//!   `sync = "bsp"` replica, a reconnaissance loop through an index array made by
//!   `from_fn`, a wavefront, loops that only read them, and serial reads and writes, as 2 x 1, 2 x 2
//!   and 3 x 1 processes against 2, 4 and 3 threads;
//! - a closure that reads another array whose parts are away, and one that makes an array
//!   in parts itself, work (no collective operation is under way while the closure runs);
//! - a closure that panics midway panics `from_fn` as on threads, and the job goes on;
//! - `STRADS_EXPLAIN` says each rank's elements, and memory per rank falls: a 128 MiB array
//!   made by `from_fn`, written and read across 2 processes, costs each rank at most 0.75
//!   of what one process holds; the driver's own peak while making it too.
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

/// Rows of the factor arrays: 32768 x 16 `f32`, 2 MiB, over the size made in parts.
const ROWS: usize = 1 << 15;
const ITEMS: usize = 64;

/// A sequential generator: each value depends on every value before it.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// A 1D loop that writes every row of `w` from `v`.
#[strads::parallel_for(expect = "1d")]
fn grow(w: &mut DistArray<f32, 2>, v: &DistArray<f64, 1>, n: usize) {
    for u in 0..n {
        let vu = v[u] as f32;
        for (k, x) in w.row_mut(u).iter_mut().enumerate() {
            *x = *x * 0.5 + vu * (k as f32 + 1.0) * 0.001;
        }
    }
}

/// A loop that only reads `w`, iterating it.
#[strads::parallel_for]
fn total(w: &DistArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, k], &x) in w {
        s += x as f64 * ((u + k) % 7) as f64;
    }
    s
}

/// A `sync = "bsp"` replica: every worker reads and writes all of `ws`.
#[strads::parallel_for(sync = "bsp", batch = 64)]
fn fit(x: &DistArray<f32, 2>, ws: &mut DistArray<f32, 1>, d: usize) {
    for s in 0..x.shape()[0] {
        let mut p = 0.0f32;
        for k in 0..d {
            p += ws[k] * x[[s, k]];
        }
        let e = p - 0.25;
        for k in 0..d {
            ws[k] -= 0.001 * e * x[[s, k]];
        }
    }
}

/// A scatter through every 8th element of an index array (reconnaissance).
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(idx: &DistArray<u32, 1>, out: &mut DistArray<i64, 3>, n: usize) {
    for i in 0..n {
        let a = idx[8 * i] as usize;
        out[[a % 8, (a / 8) % 16, a / 128]] += i as i64;
    }
}

/// A wavefront over a cost matrix (DTW's table), both arrays made by `from_fn`.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn warp(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

/// An iterator that says it gives 100,000 entries and gives 101,000.
struct Liar(usize);

impl Iterator for Liar {
    type Item = ([usize; 2], f32);
    fn next(&mut self) -> Option<Self::Item> {
        let e = self.0;
        self.0 += 1;
        (e < 101_000).then(|| ([e % 1000, (e * 7) % 1000], (e % 13) as f32))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = 100_000usize.saturating_sub(self.0);
        (n, Some(n))
    }
}

/// Every entry's list moved on and grown by one, its sum added to its row: an
/// `iter_mut()` loop over lists made in parts, which runs where they are.
#[strads::parallel_for]
fn nudge(z: &mut SparseArray<Vec<u16>, 2>, w: &mut DistArray<f32, 2>) {
    for ([u, i], zs) in z.iter_mut() {
        for t in zs.iter_mut() {
            *t = t.wrapping_mul(3).wrapping_add(u as u16);
            w[[u, 0]] += f32::from(*t);
        }
        zs.push(i as u16);
    }
}

/// A weighted sum over a sparse array's entries, read where they are.
#[strads::parallel_for]
fn weigh(r: &SparseArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, i], &x) in r {
        s += x as f64 * ((u * 3 + i) % 17) as f64;
    }
    s
}

/// Bits of every element.
fn bits<T: Copy + Into<f64>, const N: usize>(a: &DistArray<T, N>) -> Vec<u64> {
    a.as_slice().iter().map(|&x| x.into().to_bits()).collect()
}

/// The program under test: one line per point where serial code looks.
fn program() {
    let cfg = strads::generate::LowRankConfig {
        ratings: 20_000,
        users: ROWS,
        items: ITEMS,
        ..Default::default()
    };
    let r = strads::generate::low_rank_ratings(&cfg);
    let mut g = Lcg(7);
    let mut w = DistArray::<f32, 2>::from_fn([ROWS, 16], |_| g.next());
    let mut h = DistArray::<f32, 2>::from_fn([ITEMS, 16], |_| g.next());
    let v = DistArray::<f64, 1>::from_fn([ROWS * 4], |[u]| (u % 13) as f64 * 0.5);
    eprintln!("w spread: {}", w.is_spread());
    // Read before any loop used it: the parts stay where `from_fn` left them.
    println!("fresh total {:016x}", total(&w).to_bits());
    for round in 0..2 {
        grow(&mut w, &v, ROWS);
        step(&r, &mut w, &mut h);
        println!("round {round}: total {:016x}", total(&w).to_bits());
        if round == 0 {
            println!("w[9][3] {:08x}", w[[9, 3]].to_bits());
            w[[ROWS - 2, 1]] += 1.0;
        }
    }
    // A closure reading an array whose parts are away, and one making an array in parts.
    let mut c = DistArray::<f32, 2>::from_fn([ROWS, 16], |[u, k]| w[[ROWS - 1 - u, k]] * 2.0);
    println!("from parts {:016x}", total(&c).to_bits());
    // The inner array is made between two pieces of the outer one's last rank (its rows
    // are 2 MiB at 2 processes, 1.3 MiB at 3: two pieces), while that rank holds the
    // outer's first piece.
    let nested = DistArray::<f32, 2>::from_fn([ROWS, 32], |[u, k]| {
        if u == ROWS - 3 && k == 0 {
            let inner = DistArray::<u16, 2>::from_fn([ROWS, 32], |[a, b]| (a + b) as u16);
            inner[[ROWS - 1, 31]] as f32
        } else {
            (u * k) as f32
        }
    });
    println!("nested {:08x}", nested[[ROWS - 3, 0]].to_bits());
    grow(&mut c, &v, ROWS);
    // A replica of a 1 MiB weight vector (every rank needs all of it).
    let mut ws = DistArray::<f32, 1>::from_fn([1 << 18], |[k]| (k % 5) as f32 * 0.01);
    let x = DistArray::<f32, 2>::from_fn([ROWS / 8, 64], |_| g.next());
    fit(&x, &mut ws, 64);
    println!("fit {:016x}", digest(&[bits(&ws)]));
    // Reconnaissance through an index array made in parts.
    let n = 1 << 15;
    let idx = DistArray::<u32, 1>::from_fn([8 * n], |[i]| ((i * 7919) % 4096) as u32);
    let mut out = DistArray::<i64, 3>::from_fn([8, 16, 1024], |[a, b, c]| (a + b + c) as i64);
    scatter(&idx, &mut out, n);
    let sum: i64 = out.as_slice().iter().sum();
    println!("scatter {sum}");
    // A wavefront: 512 x 520 `f32`, just over the size made in parts.
    let cost = DistArray::<f32, 2>::from_fn([512, 520], |_| g.next().abs());
    let mut d =
        DistArray::<f32, 2>::from_fn(
            [513, 521],
            |[i, j]| {
                if i + j == 0 { 0.0 } else { f32::INFINITY }
            },
        );
    warp(&cost, &mut d);
    println!("warp {:08x}", d[[512, 520]].to_bits());
    // A closure that panics midway through the last rank's rows of an 8 MiB array (the
    // first value of its fourth 1 MiB piece at 2 processes, in its second at 3): `from_fn`
    // panics with it, here as on threads, and the ranks drop what they received (the
    // workers' last lines say they hold nothing).
    let caught = std::panic::catch_unwind(|| {
        DistArray::<f64, 2>::from_fn([ROWS, 32], |[u, _]| {
            assert!(u < ROWS - ROWS / 8, "row {u} is out of luck");
            u as f64
        })
    });
    println!("panicked {}", caught.is_err());
    // Entries from an iterator that says its count (a sequential generator's values),
    // 120,000 x 12 bytes: a spread array, run by a 2D loop, read by serial code.
    let mut r2 = Lcg(11);
    let entries = (0..120_000usize).map(|e| {
        let x = r2.next();
        ([(e * 7919) % ROWS, (e * 31) % ITEMS], x)
    });
    let s = SparseArray::from_entries_iter([ROWS, ITEMS], entries).expect("in the shape");
    eprintln!("entries spread: {}", s.is_spread());
    step(&s, &mut w, &mut h);
    println!("entries total {:016x}", total(&w).to_bits());
    let sum = s.iter().fold(0.0f64, |a, ([u, i], &x)| {
        a * 0.5 + (u + i) as f64 + x as f64
    });
    println!(
        "entries {:016x} entry 77777 {:?} nnz {}",
        sum.to_bits(),
        s.entry(77_777),
        s.nnz()
    );
    // Lists of numbers per entry, from an iterator that says its count: made in parts too,
    // moved by a loop where they are, then read by serial code.
    let mut r3 = Lcg(5);
    let lists = (0..80_000usize).map(|e| {
        let list: Vec<u16> = (0..e % 4)
            .map(|_| (r3.next() * 1000.0) as i16 as u16)
            .collect();
        ([(e * 7919) % ROWS, (e * 31) % ITEMS], list)
    });
    let mut z = SparseArray::from_entries_iter([ROWS, ITEMS], lists).expect("in the shape");
    eprintln!("lists spread: {}", z.is_spread());
    nudge(&mut z, &mut w);
    nudge(&mut z, &mut w);
    eprintln!("lists spread after their loops: {}", z.is_spread());
    let all: Vec<u64> = z
        .iter()
        .flat_map(|([u, i], v)| {
            [u as u64, i as u64]
                .into_iter()
                .chain(v.iter().map(|&t| u64::from(t)))
        })
        .collect();
    println!(
        "lists {:016x} entry 4321 {:?} total {:016x}",
        digest(&[all]),
        z.entry(4321),
        total(&w).to_bits()
    );
    // An entry outside the shape, late in the stream (after the last rank got a piece):
    // the error one process gives.
    let bad = (0..200_000usize).map(|e| ([e % 1000, if e == 199_000 { 9 } else { 1 }], e as u32));
    match SparseArray::<u32, 2>::from_entries_iter([1000, 8], bad) {
        Ok(a) => println!("bad entries made {}", a.nnz()),
        Err(e) => println!("bad entries: {e}"),
    }
    // From a `Vec` (an exact count): `u16` values in 3 dims.
    let v: Vec<([usize; 3], u16)> = (0..200_000)
        .map(|e| ([e % 50, e / 50 % 40, e / 2000], e as u16))
        .collect();
    let t = SparseArray::from_entries([50, 40, 100], v).expect("in the shape");
    eprintln!("vec spread: {}", t.is_spread());
    let tsum = t.iter().fold(0u64, |s, ([a, b, c], &x)| {
        s.wrapping_mul(31)
            .wrapping_add((a * b + c) as u64 * u64::from(x))
    });
    println!("vec entries {tsum}");
    // An iterator that gives more entries than it promised: the last rank takes them.
    let l = SparseArray::<f32, 2>::from_entries_iter([1000, 1000], Liar(0)).expect("in the shape");
    eprintln!("liar spread: {}", l.is_spread());
    println!("liar {} {:016x}", l.nnz(), weigh(&l).to_bits());
    // Fewer rows than ranks: split by elements.
    let one = DistArray::<f32, 2>::from_fn([1, 300_000], |[_, j]| (j % 97) as f32 * 0.5);
    eprintln!("one row spread: {}", one.is_spread());
    println!(
        "one row {:016x} {}",
        total(&one).to_bits(),
        one[[0, 299_999]]
    );
    println!(
        "arrays {:016x}",
        digest(&[bits(&w), bits(&h), bits(&c), bits(&nested)])
    );
}

/// The memory program: a 128 MiB array made by `from_fn`, written by a 1D loop and read
/// by another; prints this process's peak resident set, and the driver's after making it.
fn memory() {
    let rows = 1 << 21;
    let mut g = Lcg(3);
    let mut w = DistArray::<f32, 2>::from_fn([rows, 16], |_| g.next());
    eprintln!("made peak {} kB", peak_kb());
    let v = DistArray::<f64, 1>::zeros([rows]);
    grow(&mut w, &v, rows);
    println!("total {:016x}", total(&w).to_bits());
    println!(
        "picks {:?}",
        [w[[7, 3]], w[[rows - 3, 15]]].map(f32::to_bits)
    );
    eprintln!("program peak {} kB", peak_kb());
}

fn check() -> Result<(), String> {
    for (procs, threads) in [("2", "1"), ("2", "2"), ("3", "1")] {
        let workers =
            (procs.parse::<usize>().unwrap() * threads.parse::<usize>().unwrap()).to_string();
        let (one, _) = run_self(
            "CLUSTER_FROM_FN_ROLE",
            "program",
            &[("STRADS_THREADS", &workers)],
        )?;
        let env = [("STRADS_PROCESSES", procs), ("STRADS_THREADS", threads)];
        let (many, explain) = run_self("CLUSTER_FROM_FN_ROLE", "program", &env)?;
        if one.lines().count() != 18 || many != one || !one.contains("panicked true") {
            return Err(format!(
                "{procs} x {threads}: processes print\n{many}\n{workers} threads print\n{one}"
            ));
        }
        // Each rank's rows of `w`, said when it was made: 32768 rows of 16 split evenly.
        let p: u64 = procs.parse().unwrap();
        let each: Vec<String> = (0..p)
            .map(|r| {
                let n = (32768 * (r + 1) / p - 32768 * r / p) * 16;
                format!("{n} ({:.1} MiB)", (n * 4) as f64 / (1 << 20) as f64)
            })
            .collect();
        let said = format!(
            "(DistArray::from_fn [32768, 16]) made in place; its elements by rank: {}",
            each.join(", ")
        );
        if !explain.contains("w spread: true") || !explain.contains(&said) {
            return Err(format!(
                "{procs} x {threads}: `w` was not made in parts (no line ending `{said}`):\n{explain}"
            ));
        }
        let spread = [
            "entries spread: true",
            "lists spread: true",
            "lists spread after their loops: true",
            "vec spread: true",
            "liar spread: true",
            "one row spread: true",
        ];
        if spread.iter().any(|l| !explain.contains(l)) {
            return Err(format!(
                "{procs} x {threads}: the entries were not made in parts:\n{explain}"
            ));
        }
        // Every worker let go of everything, the rows of the array whose closure panicked
        // too.
        let ends = explain
            .lines()
            .filter(|l| l.contains("strads cluster: this rank holds "))
            .collect::<Vec<_>>();
        let clean = "holds 0 arrays (0 bytes) of the driver's at the end, 0 sets of blocks of \
                     sparse spaces (0 bytes as sent or traded), 0 parts of data made in place \
                     (0 bytes)";
        if ends.len() + 1 != p as usize || ends.iter().any(|l| !l.contains(clean)) {
            return Err(format!(
                "{procs} x {threads}: a worker holds something at the end:\n{explain}"
            ));
        }
    }
    // Memory: each of 2 ranks holds about half of what one process holds.
    let peak = |err: &str, what: &str| figure(err, what).unwrap_or(0.0) / 1024.0;
    let role = "CLUSTER_FROM_FN_ROLE";
    let (one, err) = run_self(role, "memory", &[("STRADS_THREADS", "2")])?;
    let alone = peak(&err, "program peak ");
    let env = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let (many, explain) = run_self(role, "memory", &env)?;
    if many != one {
        return Err(format!(
            "memory: 2 processes print\n{many}\n2 threads print\n{one}"
        ));
    }
    let made = peak(&explain, "made peak ");
    let driver = peak(&explain, "program peak ");
    let worker = figure(&explain, "strads memory rank 1: peak resident ").unwrap_or(f64::MAX);
    if !(alone > 128.0 && made < 0.75 * alone && driver < 0.75 * alone && worker < 0.75 * alone) {
        return Err(format!(
            "memory: one process peaks at {alone:.1} MiB; as 2 processes the driver at \
             {made:.1} MiB after making the array and {driver:.1} MiB at the end, rank 1 at \
             {worker:.1} MiB, not all below 0.75 of it:\n{explain}"
        ));
    }
    println!(
        "cluster_from_fn: same bits as threads at 2 x 1, 2 x 2, 3 x 1; peak {alone:.1} MiB \
         alone, {driver:.1} / {worker:.1} MiB as 2 processes"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    let roles: [(&str, fn()); 2] = [("program", program), ("memory", memory)];
    main_of_roles("CLUSTER_FROM_FN_ROLE", "cluster_from_fn", &roles, check)
}
