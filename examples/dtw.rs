//! Dynamic time warping of two series, a wavefront loop run in parallel.
//!
//! Each cell of the DTW table depends on its upper, left and upper-left neighbours, so
//! the dependence vectors are (1, 0), (0, 1) and (1, 1): no row and no column can run on
//! its own (neither 1D nor 2D). The nest is fully permutable, so the unimodular path tiles
//! the table and runs the tiles as a wavefront: worker `s` takes the tile rows `s`, and a
//! tile starts once the tile above it is done. The loop is `ordered`, so every dependence
//! keeps its direction and the result is bit-identical to the serial loop; the program
//! checks that.
//!
//! The costs come from a 1D loop over the rows and the table is created with
//! `DistArray::full`: on a cluster each rank fills the rows of the cost matrix its tiles
//! read and makes its band of the table, so a call moves only the tiles' boundary rows.
//! `seconds` covers making the table and filling it (on threads the table is written
//! when it is created; on a cluster each rank makes its band during the fill), and
//! `serial_seconds` making the reference table and filling it with the serial loop.
//!
//! ```text
//! cargo run --release --example dtw                       # two series of 3000 points
//! cargo run --release --example dtw -- --n 8000 --m 6000 --threads 2
//! STRADS_EXPLAIN=1 cargo run --release --example dtw      # prints the plan
//! ```

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use strads::prelude::*;

#[path = "common/cli.rs"]
mod cli;

/// Fills the DTW table `d` (shape `[n + 1, m + 1]`, `d[0][0] = 0`, the rest of row and
/// column 0 infinite) from the pairwise costs `cost` (shape `[n, m]`).
#[strads::parallel_for(ordered, expect = "unimodular")]
fn dtw_fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

/// The pairwise costs `|a[i] - b[j]|`, a parallel loop over the rows: on a cluster each
/// rank fills the rows of `cost` that its tiles of [`dtw_fill`] read, and they stay there.
#[strads::parallel_for(expect = "1d")]
fn costs(a: &DistArray<f32, 1>, b: &DistArray<f32, 1>, cost: &mut DistArray<f32, 2>) {
    let [n, m] = cost.shape();
    for i in 0..n {
        for j in 0..m {
            cost[[i, j]] = (a[i] - b[j]).abs();
        }
    }
}

#[derive(Parser, Debug)]
#[command(about = "Dynamic time warping with a strads wavefront")]
struct Args {
    /// Length of the first series.
    #[arg(long, default_value_t = 3000, value_parser = cli::dim)]
    n: usize,
    /// Length of the second series.
    #[arg(long, default_value_t = 3000, value_parser = cli::dim)]
    m: usize,
    /// Seed of the noise.
    #[arg(long, default_value_t = 7, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
}

/// Two noisy, time-warped sines: the second runs at a varying speed.
fn series(n: usize, m: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let noise = DistArray::<f32, 1>::random([n + m], seed);
    let a = (0..n)
        .map(|t| (t as f32 * 0.02).sin() + 0.1 * noise[t])
        .collect();
    let b = (0..m)
        .map(|t| {
            let x = t as f32 / m as f32;
            let warped = (x + 0.15 * (x * 6.0).sin()) * n as f32;
            (warped * 0.02).sin() + 0.1 * noise[n + t]
        })
        .collect();
    (a, b)
}

/// The table before the fill: `d[0][0] = 0`, every other cell infinite (the fill
/// writes every cell of rows and columns 1 on). Created in place on a cluster.
fn table(n: usize, m: usize) -> DistArray<f32, 2> {
    let mut d = DistArray::full([n + 1, m + 1], f32::INFINITY);
    d[[0, 0]] = 0.0;
    d
}

fn run(args: &Args) -> Result<(), String> {
    // The costs and the two tables.
    let cells = (args.n + 1)
        .checked_mul(args.m + 1)
        .and_then(|c| c.checked_mul(3));
    let what = format!("the tables of {} x {} cells", args.n, args.m);
    cli::check_memory(&what, cells, 4)?;
    let (a, b) = series(args.n, args.m, args.seed);
    let a = DistArray::from_vec([args.n], a).map_err(|e| e.to_string())?;
    let b = DistArray::from_vec([args.m], b).map_err(|e| e.to_string())?;
    let mut cost = DistArray::zeros([args.n, args.m]);
    costs(&a, &b, &mut cost);
    let threads = cli::threads_used();

    // The table's making and its fill, timed together (see the module's doc).
    let t = Instant::now();
    let mut d = table(args.n, args.m);
    dtw_fill(&cost, &mut d);
    let seconds = t.elapsed().as_secs_f64();

    // The reference: the original loop, serially. On a cluster the cost matrix's rows are
    // on the ranks that filled them: they come home first, outside the serial timing.
    let _ = cost.as_slice();
    let t = Instant::now();
    let mut reference = table(args.n, args.m);
    strads::testing::serial(|| dtw_fill(&cost, &mut reference));
    let serial_seconds = t.elapsed().as_secs_f64();
    let identical = d
        .as_slice()
        .iter()
        .zip(reference.as_slice())
        .all(|(x, y)| x.to_bits() == y.to_bits());

    let distance = d[[args.n, args.m]];
    let processes = cli::processes();
    println!(
        "dtw n={} m={} distance={distance} seconds={seconds:.3} serial_seconds={serial_seconds:.3} \
         threads={threads} processes={processes} bit_identical_to_serial={identical}",
        args.n, args.m
    );
    if identical {
        Ok(())
    } else {
        Err("the parallel table differs from the serial one".into())
    }
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, run)
}
