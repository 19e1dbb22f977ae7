//! The loop shapes of issue 23, each on threads, on the serial loop and across processes
//! (2 x 1 and 2 x 2): strided red-black sweeps in 1-D and 2-D, strided triplets, the
//! README's SGD-MF loop marked `ordered` over ratings in index order and shuffled, an
//! `ordered` `iter_mut()` chain over shuffled entries, `ordered` float reductions, and
//! reconnaissance loops of many small groups (a mirrored update, a labelled scatter, a
//! tournament of `match`-selected updates, a windowed scatter); and loops over the types
//! programs already hold (issue 27: a saxpy over `Vec`s, a scale over a slice, a ReLU over
//! an ndarray matrix), which must cross processes like `DistArray`s.
//!
//! Every loop here gives one serial order's result whatever the layout: the ordered ones
//! the serial loop's own, the others a result the order cannot change (each element is
//! written by one iteration, or updated by commutative integer additions). So 2 threads,
//! 4 threads, 2 processes x 1 thread, 2 x 2 and `STRADS_SERIAL=1` must all print the same
//! bits, and every loop must say it crossed processes or why it stayed on the driver.
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies
//! of this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::process::ExitCode;

#[path = "common/self_run.rs"]
mod self_run;
use self_run::{digest, run_self};

use strads::prelude::*;
use strads::testing::bits;

/// saxpy over vectors.
#[strads::parallel_for(expect = "1d")]
fn saxpy(a: f32, x: &[f32], y: &mut Vec<f32>) {
    for i in 0..y.len() {
        y[i] += a * x[i];
    }
}

/// A scale over a slice.
#[strads::parallel_for(expect = "1d")]
fn scale(x: &mut [f64], by: f64) {
    for i in 0..x.len() {
        x[i] *= by;
    }
}

/// ReLU over an ndarray matrix.
#[strads::parallel_for(expect = "1d")]
fn relu(m: &mut ndarray::Array2<f32>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            if m[[i, j]] < 0.0 {
                m[[i, j]] = 0.0;
            }
        }
    }
}

/// Red points of a 1-D red-black sweep: odd `i` from their even neighbours.
#[strads::parallel_for(expect = "1d")]
fn red_1d(x: &mut DistArray<f64, 1>, n: usize) {
    for i in (1..n - 1).step_by(2) {
        x[i] = 0.5 * (x[i - 1] + x[i + 1]) + 0.125 * x[i];
    }
}

/// Black points: even `i` from their odd neighbours.
#[strads::parallel_for(expect = "1d")]
fn black_1d(x: &mut DistArray<f64, 1>, n: usize) {
    for i in (2..n - 1).step_by(2) {
        x[i] = 0.5 * (x[i - 1] + x[i + 1]) - 0.25 * x[i];
    }
}

/// Odd rows of a grid from the rows above and below them (2-D, strided outer dim).
#[strads::parallel_for]
fn red_rows(x: &mut DistArray<f32, 2>, n: usize, m: usize) {
    for i in (1..n - 1).step_by(2) {
        for j in 0..m {
            x[[i, j]] = 0.5 * (x[[i - 1, j]] + x[[i + 1, j]]) + 0.25 * x[[i, j]];
        }
    }
}

/// Red cells `(odd, odd)` of a 2-D grid from their four neighbours (both dims strided).
#[strads::parallel_for]
fn red_cells(x: &mut DistArray<f32, 2>, n: usize, m: usize) {
    for i in (1..n - 1).step_by(2) {
        for j in (1..m - 1).step_by(2) {
            x[[i, j]] = 0.25 * (x[[i - 1, j]] + x[[i + 1, j]] + x[[i, j - 1]] + x[[i, j + 1]]);
        }
    }
}

/// Triplets `3k, 3k + 1, 3k + 2`: a strided 1-D loop whose windows are lattices.
#[strads::parallel_for(expect = "1d")]
fn triplets(x: &mut DistArray<f32, 1>, n: usize) {
    for k in 0..n {
        let a = x[3 * k];
        x[3 * k + 1] += 0.5 * a;
        x[3 * k + 2] = x[3 * k + 1] - a;
    }
}

/// README's SGD-MF loop, marked `ordered`: rows through `row_mut`, `dot`.
#[strads::parallel_for(ordered)]
fn sgd_ordered(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
}

/// An ordered loop with float reductions: the squared error, its largest term and a
/// product, with the model updated on the way.
#[strads::parallel_for(ordered)]
fn sgd_loss(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) -> (f64, f32, f64, u64) {
    let mut sse: f64 = 0.25;
    let mut worst: f32 = 0.0;
    let mut prod = 1.0f64;
    let mut n = 0u64;
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        sse += (err * err) as f64;
        worst = worst.max(err.abs());
        prod *= 1.0 + (err as f64) * 1e-3;
        n += 1;
        for k in 0..wu.len() {
            wu[k] += lr * err * hi[k];
        }
    }
    (sse, worst, prod, n)
}

/// An ordered chain over the entries' own values: each entry takes the running value of
/// its row and passes it on (`iter_mut()`, entries in the order the program gave them).
#[strads::parallel_for(ordered)]
fn chain_mut(cells: &mut SparseArray<f32, 2>, carry: &mut DistArray<f32, 1>) {
    for ([u, _], v) in cells.iter_mut() {
        let c = carry[u];
        *v = 0.5 * *v + c;
        carry[u] = c * 0.75 + *v;
    }
}

/// A mirrored update: iterations `i` and `n - 1 - i` touch the same two elements, so the
/// loop is planned by reconnaissance, in many groups of two.
#[strads::parallel_for]
fn mirrored(x: &DistArray<i64, 1>, y: &mut DistArray<i64, 1>, n: usize) {
    for i in 0..n {
        y[i] += x[i];
        y[n - 1 - i] += 3 * x[i];
    }
}

/// A labelled scatter: counts per label read from data (reconnaissance, small groups).
#[strads::parallel_for]
fn scatter(labels: &DistArray<u32, 1>, counts: &mut DistArray<i64, 1>, n: usize) {
    for i in 0..n {
        let l = labels[i] as usize;
        counts[l] += i as i64 + 1;
    }
}

/// A tournament: each match's winner is chosen by a `match` on data, and scores change by
/// integer steps (any order gives the same totals).
#[strads::parallel_for]
fn tournament(pairs: &DistArray<u32, 2>, score: &mut DistArray<i64, 1>) {
    for m in 0..pairs.shape()[0] {
        let (a, b) = (pairs[[m, 0]] as usize, pairs[[m, 1]] as usize);
        match (a * 7 + b * 3 + m) % 3 {
            0 => score[a] += 2,
            1 => score[b] += 2,
            _ => {
                score[a] += 1;
                score[b] -= 1;
            }
        }
    }
}

/// A windowed scatter: each point adds its weight to three cells from its centre.
#[strads::parallel_for]
fn windowed(centre: &DistArray<u32, 1>, out: &mut DistArray<i64, 1>) {
    for i in 0..centre.len() {
        let c = centre[i] as usize;
        for d in 0..3 {
            out[c + d] += (i % 11) as i64 - 5;
        }
    }
}

/// Iterations of the small-group loops: `SHAPES_ACROSS_N` (for profiling at scale), else
/// 3,000.
fn small_groups_size() -> usize {
    std::env::var("SHAPES_ACROSS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

/// A deterministic shuffle (xorshift, Fisher-Yates).
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

fn program() {
    let ratings = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 90,
        items: 70,
        ratings: 3000,
        ..Default::default()
    });
    let shape = ratings.shape();
    let mut entries: Vec<([usize; 2], f32)> = ratings.iter().map(|(k, &v)| (k, v)).collect();
    shuffle(&mut entries, 5);
    let shuffled = SparseArray::from_entries(shape, entries).expect("the same entries");
    let ratings = ratings.sorted();
    let mut y: Vec<f32> = (0..5000).map(|i| (i % 17) as f32 * 0.25).collect();
    let mut z: Vec<f64> = (0..4000).map(|i| i as f64 * 0.001).collect();
    for call in 0..3 {
        // Arrays of the types programs hold.
        let x: Vec<f32> = (0..5000).map(|i| ((i + call) as f32 * 0.7).sin()).collect();
        saxpy(0.5, &x, &mut y);
        scale(&mut z[call * 10..], 1.5);
        let mut m = ndarray::Array2::from_shape_fn((60, 33), |(i, j)| {
            ((i * 33 + j + call) as f32 * 0.37).sin()
        });
        relu(&mut m);
        let f32s = |v: &mut dyn Iterator<Item = f32>| v.map(|x| u64::from(x.to_bits())).collect();
        println!(
            "bridged {call}: {:016x}",
            digest(&[
                f32s(&mut y.iter().copied()),
                z.iter().map(|v| v.to_bits()).collect(),
                f32s(&mut m.iter().copied()),
            ])
        );
        // Red-black sweeps.
        let n = 301 * (small_groups_size() / 3000).max(1) + call;
        let mut x = DistArray::<f64, 1>::random([n], 1);
        red_1d(&mut x, n);
        black_1d(&mut x, n);
        red_1d(&mut x, n);
        println!("red_black_1d {call}: {:016x}", digest(&[bits(&x)]));
        let (r, c) = (41 + call, 37);
        let mut g = DistArray::<f32, 2>::random([r, c], 2);
        red_rows(&mut g, r, c);
        red_cells(&mut g, r, c);
        println!("red_black_2d {call}: {:016x}", digest(&[bits(&g)]));
        let k = 200 * (small_groups_size() / 3000).max(1) + call;
        let mut t = DistArray::<f32, 1>::random([3 * k], 3);
        triplets(&mut t, k);
        println!("triplets {call}: {:016x}", digest(&[bits(&t)]));
        // Ordered SGD over sorted and shuffled ratings.
        for (name, data) in [("sorted", &ratings), ("shuffled", &shuffled)] {
            let mut w = DistArray::<f32, 2>::random([shape[0], 4], 7 + call as u64);
            let mut h = DistArray::<f32, 2>::random([shape[1], 4], 8);
            sgd_ordered(data, &mut w, &mut h, 0.05);
            let loss = sgd_loss(data, &mut w, &mut h, 0.01);
            println!(
                "sgd_ordered {name} {call}: {:016x} {:?}",
                digest(&[bits(&w), bits(&h)]),
                (loss.0.to_bits(), loss.1.to_bits(), loss.2.to_bits(), loss.3)
            );
        }
        let mut cells = shuffled.clone();
        let mut carry = DistArray::<f32, 1>::zeros([shape[0]]);
        chain_mut(&mut cells, &mut carry);
        let vals: Vec<u64> = cells.iter().map(|(_, v)| v.to_bits() as u64).collect();
        println!("chain_mut {call}: {:016x}", digest(&[vals, bits(&carry)]));
        // Reconnaissance with many small groups.
        let n = small_groups_size() + call;
        let xs = DistArray::from_fn([n], |[i]| (i as i64 * 7) % 13 - 6);
        let mut ys = DistArray::<i64, 1>::zeros([n]);
        mirrored(&xs, &mut ys, n);
        let labels = DistArray::from_fn([n], |[i]| ((i * 31) % 97) as u32);
        let mut counts = DistArray::<i64, 1>::zeros([97]);
        scatter(&labels, &mut counts, n);
        let players = 97;
        let pairs = DistArray::from_fn([n, 2], |[m, k]| {
            ((m * 13 + k * 31 + m / 7) % players) as u32
        });
        let mut score = DistArray::<i64, 1>::zeros([players]);
        tournament(&pairs, &mut score);
        let centres = DistArray::from_fn([n], |[i]| ((i * 37) % 500) as u32);
        let mut cells = DistArray::<i64, 1>::zeros([502]);
        windowed(&centres, &mut cells);
        println!(
            "small_groups {call}: {:016x}",
            digest(&[bits(&ys), bits(&counts), bits(&score), bits(&cells)])
        );
    }
}

/// Runs this binary as the program under test with `env`; its output and its explain
/// lines.
fn run(env: &[(&str, &str)]) -> Result<(String, String), String> {
    run_self("SHAPES_ACROSS_ROLE", "program", env)
}

/// Loops that must cross processes (not stay on the driver).
const CROSS: [&str; 3] = ["saxpy", "scale", "relu"];

const LOOPS: [&str; 12] = [
    "red_1d",
    "black_1d",
    "red_rows",
    "red_cells",
    "triplets",
    "sgd_ordered",
    "sgd_loss",
    "chain_mut",
    "mirrored",
    "scatter",
    "tournament",
    "windowed",
];

fn check() -> Result<(), String> {
    let (serial, _) = run(&[("STRADS_SERIAL", "1")])?;
    if serial.lines().count() != 24 {
        return Err(format!("the serial run printed\n{serial}"));
    }
    for (procs, threads, same) in [("2", "1", "2"), ("2", "2", "4")] {
        let (one, _) = run(&[("STRADS_THREADS", same)])?;
        if one != serial {
            return Err(format!(
                "{same} threads print\n{one}\nthe serial loops print\n{serial}"
            ));
        }
        let (many, explain) = run(&[("STRADS_PROCESSES", procs), ("STRADS_THREADS", threads)])?;
        if many != one {
            return Err(format!(
                "{procs} processes x {threads} threads print\n{many}\n{same} threads print\n{one}"
            ));
        }
        for name in CROSS {
            let crossed = format!("strads cluster {name}: {procs} processes x {threads} threads;");
            if !explain.lines().any(|l| l.starts_with(&crossed)) {
                return Err(format!(
                    "{name} did not cross processes ({procs} x {threads}):\n{explain}"
                ));
            }
        }
        for name in LOOPS {
            let crossed = format!("strads cluster {name}: {procs} processes x {threads} threads;");
            let stayed = format!("strads cluster {name}: runs on the driver's threads");
            if !explain
                .lines()
                .any(|l| l.starts_with(&crossed) || l.starts_with(&stayed))
            {
                return Err(format!(
                    "{name} said neither that it crossed processes nor why it did not \
                     ({procs} x {threads}):\n{explain}"
                ));
            }
        }
    }
    println!(
        "shapes_across: strided, ordered and small-group loops print the serial loops' bits \
         on 2 and 4 threads, 2 x 1 and 2 x 2 processes x threads"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    self_run::main_of("SHAPES_ACROSS_ROLE", "shapes_across", program, check)
}
