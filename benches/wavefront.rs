//! Time of one DTW table fill (the `dtw` example's wavefront loop): a hand-written serial
//! loop, the original loop (`strads::testing::serial`), and strads at 1 and 2 threads,
//! interleaved in one run. Prints a table; record it in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench wavefront                       # 6000 x 6000 table
//! cargo bench --bench wavefront -- --n 3000 --rounds 5
//! ```

use std::time::Instant;

use clap::Parser;
use strads::prelude::*;
use strads::testing::median;

#[strads::parallel_for(ordered, expect = "unimodular")]
fn dtw_fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

/// What a user would write without strads: a flat table, the same arithmetic.
fn dtw_serial(cost: &[f32], d: &mut [f32], n: usize, m: usize) {
    let w = m + 1;
    for i in 0..n {
        for j in 0..m {
            let best = d[i * w + j + 1].min(d[(i + 1) * w + j]).min(d[i * w + j]);
            d[(i + 1) * w + j + 1] = cost[i * m + j] + best;
        }
    }
}

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, default_value_t = 6000)]
    n: usize,
    /// Timed fills per system (after one first call each).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn table(n: usize) -> DistArray<f32, 2> {
    DistArray::from_fn([n + 1, n + 1], |[i, j]| {
        if i == 0 && j == 0 {
            0.0
        } else if i == 0 || j == 0 {
            f32::INFINITY
        } else {
            0.0
        }
    })
}

fn main() {
    let args = Args::parse();
    let n = args.n;
    let noise = DistArray::<f32, 1>::random([2 * n], 7);
    let a: Vec<f32> = (0..n)
        .map(|t| (t as f32 * 0.02).sin() + 0.1 * noise[t])
        .collect();
    let b: Vec<f32> = (0..n)
        .map(|t| (t as f32 * 0.021).sin() + 0.1 * noise[n + t])
        .collect();
    let cost = DistArray::from_fn([n, n], |[i, j]| (a[i] - b[j]).abs());
    println!("DTW table {n} x {n} ({} cells), f32", n * n);

    let systems = [
        "hand-written serial",
        "original loop (serial)",
        "strads",
        "strads",
    ];
    let threads = [1usize, 1, 1, 2];
    let mut tables: Vec<DistArray<f32, 2>> = (0..systems.len()).map(|_| table(n)).collect();
    let run = |k: usize, d: &mut DistArray<f32, 2>| -> f64 {
        let t = Instant::now();
        match k {
            0 => dtw_serial(cost.as_slice(), d.as_mut_slice(), n, n),
            1 => strads::testing::serial(|| dtw_fill(&cost, d)),
            _ => strads::with_threads(threads[k], || dtw_fill(&cost, d)),
        }
        t.elapsed().as_secs_f64()
    };
    let first: Vec<f64> = (0..systems.len()).map(|k| run(k, &mut tables[k])).collect();
    let mut times = vec![Vec::new(); systems.len()];
    for _ in 0..args.rounds {
        for k in 0..systems.len() {
            times[k].push(run(k, &mut tables[k]));
        }
    }
    let base = median(&mut times[0].clone());
    println!(
        "\n{:<24} {:>7} {:>10} {:>10} {:>10} {:>12}",
        "system", "threads", "first_s", "fill_s", "speedup", "Mcells/s"
    );
    for k in 0..systems.len() {
        let t = median(&mut times[k]);
        println!(
            "{:<24} {:>7} {:>10.3} {:>10.3} {:>10.3} {:>12.1}",
            systems[k],
            threads[k],
            first[k],
            t,
            base / t,
            (n * n) as f64 / t / 1e6
        );
    }
    let same = tables.iter().all(|t| {
        t.as_slice()
            .iter()
            .zip(tables[0].as_slice())
            .all(|(x, y)| x.to_bits() == y.to_bits())
    });
    println!("\nall tables bit-identical: {same}");
    println!(
        "fill_s: median of {} interleaved fills; first_s: first fill (strads: planning and tiling included)",
        args.rounds
    );
}
