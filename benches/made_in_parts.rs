//! Arrays made in parts on a cluster job (the driver runs the caller's code and sends
//! every other rank its share as it is made) against one process making them whole: the
//! seconds to make the array, the loops over it, and each rank's peak resident memory, at
//! P = 1 (one process of 2 threads), 2 and 4 processes of one thread. Every layout must
//! print the one process's results; the table says so. By default `DistArray::from_fn` of
//! `--rows` x `--cols` `f32` from a sequential generator (a closure that must run in
//! order), then a 1D loop that writes it and a reduction that reads it; with `--entries
//! E`, `SparseArray::from_entries_iter` of E ratings-like entries (`--rows` x `--cols`
//! indices, `f32` values, from a sequential generator), then two reductions over them (a
//! read-only loop over a spread array trades its entries to the ranks that run them at
//! its first call). Ranks are started by `STRADS_PROCESSES` on this machine; each rank's
//! peak is its `VmHWM` (the workers' from `STRADS_EXPLAIN`'s memory lines). Record the
//! table in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench made_in_parts
//! cargo bench --bench made_in_parts -- --rows 4000000 --cols 64
//! cargo bench --bench made_in_parts -- --entries 30000000 --rows 100000 --cols 20000
//! ```

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

#[path = "common/ranks.rs"]
mod ranks;
use ranks::vm_hwm_kib;
use strads::prelude::*;

/// Every row scaled and shifted by its index: a 1D loop that writes the rows where they are.
#[strads::parallel_for(expect = "1d")]
fn shift(w: &mut DistArray<f32, 2>, n: usize) {
    for u in 0..n {
        let a = (u % 17) as f32 * 0.01;
        for x in w.row_mut(u) {
            *x = *x * 0.5 + a;
        }
    }
}

/// A weighted sum of every element (in 1/65536ths, an integer: the same for every worker
/// count), read where the parts are.
#[strads::parallel_for]
fn weighted(w: &DistArray<f32, 2>) -> i64 {
    let mut s: i64 = 0;
    for ([u, k], &x) in w {
        s += (x * 65536.0) as i64 * ((u + 3 * k) % 11) as i64;
    }
    s
}

/// Entries weighted by their indices (in 1/65536ths, an integer), read where they are.
#[strads::parallel_for]
fn weighted_entries(r: &SparseArray<f32, 2>) -> i64 {
    let mut s: i64 = 0;
    for ([u, i], &x) in r {
        s += (x * 65536.0) as i64 * ((u + 3 * i) % 11) as i64;
    }
    s
}

#[derive(Parser, Debug)]
#[command(about = "Arrays made in parts against one process")]
struct Args {
    /// Rows of the array.
    #[arg(long, default_value_t = 2_000_000)]
    rows: usize,
    /// Columns of the array (`f32`).
    #[arg(long, default_value_t = 64)]
    cols: usize,
    /// Make a sparse array of this many entries with `from_entries_iter` instead.
    #[arg(long)]
    entries: Option<usize>,
    /// Ignored: `cargo bench` passes it.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn program(rows: usize, cols: usize) {
    let t = Instant::now();
    let mut g = Lcg(5);
    let mut w = DistArray::<f32, 2>::from_fn([rows, cols], |_| g.next());
    let make = t.elapsed().as_secs_f64();
    let made_peak = vm_hwm_kib();
    let t = Instant::now();
    shift(&mut w, rows);
    let s = weighted(&w);
    let looped = t.elapsed().as_secs_f64();
    println!("result weighted={s}");
    println!(
        "timing make={make:.3} loops={looped:.3} spread={} driver_made_peak_kib={made_peak} \
         driver_peak_kib={}",
        w.is_spread(),
        vm_hwm_kib()
    );
}

fn program_entries(rows: usize, cols: usize, n: usize) {
    let t = Instant::now();
    let mut g = Lcg(9);
    let entries = (0..n).map(|e| {
        let x = g.next();
        let u = (e.wrapping_mul(2_654_435_761) >> 3) % rows;
        ([u, (e.wrapping_mul(40_503) >> 2) % cols], x)
    });
    let r = SparseArray::from_entries_iter([rows, cols], entries).expect("in the shape");
    let make = t.elapsed().as_secs_f64();
    let made_peak = vm_hwm_kib();
    let t = Instant::now();
    let a = weighted_entries(&r);
    let b = weighted_entries(&r);
    let looped = t.elapsed().as_secs_f64();
    println!("result weighted={a} again={b} nnz={}", r.nnz());
    println!(
        "timing make={make:.3} loops={looped:.3} spread={} driver_made_peak_kib={made_peak} \
         driver_peak_kib={}",
        r.is_spread(),
        vm_hwm_kib()
    );
}

/// One layout's run: its result line, make and loop seconds, the driver's peak after
/// making the array, and every rank's peak (MiB).
type Run = (String, f64, f64, f64, Vec<f64>);

fn run(args: &Args, procs: usize) -> Result<Run, String> {
    let shape = format!("{} {} {}", args.rows, args.cols, args.entries.unwrap_or(0));
    let (stdout, peaks) = ranks::run_ranks(&[("MADE_IN_PARTS_SHAPE", &shape)], procs)?;
    let field = |key| ranks::field(&stdout, key);
    Ok((
        ranks::result_line(&stdout)?,
        field("make").unwrap_or(f64::NAN),
        field("loops").unwrap_or(f64::NAN),
        field("driver_made_peak_kib").unwrap_or(0.0) / 1024.0,
        peaks,
    ))
}

fn bench() -> Result<(), String> {
    let args = Args::parse();
    let mut runs = Vec::new();
    for procs in [1, 2, 4] {
        runs.push((procs, run(&args, procs)?));
    }
    let one = runs[0].1.0.clone();
    match args.entries {
        Some(n) => println!(
            "{n} entries of {} x {} f32 ({:.1} MiB); {one}",
            args.rows,
            args.cols,
            (n * 12) as f64 / (1 << 20) as f64
        ),
        None => println!(
            "{} x {} f32 ({:.1} MiB); {one}",
            args.rows,
            args.cols,
            (args.rows * args.cols * 4) as f64 / (1 << 20) as f64
        ),
    }
    println!(
        "| layout | make s | loops s | driver peak after making, MiB | peak MiB by rank | as 1 process |"
    );
    println!("|---|---|---|---|---|---|");
    for (procs, (result, make, looped, made, peaks)) in &runs {
        let layout = if *procs == 1 {
            "1 process x 2 threads".to_owned()
        } else {
            format!("{procs} x 1, in parts")
        };
        let peaks: Vec<String> = peaks.iter().map(|p| format!("{p:.1}")).collect();
        println!(
            "| {layout} | {make:.3} | {looped:.3} | {made:.1} | {} | {} |",
            peaks.join(" / "),
            if *result == one {
                "same"
            } else {
                "**differs**"
            }
        );
    }
    if runs.iter().any(|(_, r)| r.0 != one) {
        return Err("a layout printed another result".to_owned());
    }
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    if let Ok(shape) = std::env::var("MADE_IN_PARTS_SHAPE") {
        let mut it = shape
            .split_whitespace()
            .map(|n| n.parse::<usize>().unwrap_or(1));
        let (rows, cols) = (it.next().unwrap_or(1), it.next().unwrap_or(1));
        match it.next().unwrap_or(0) {
            0 => program(rows, cols),
            n => program_entries(rows, cols, n),
        }
        return ExitCode::SUCCESS;
    }
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("made_in_parts: {e}");
            ExitCode::FAILURE
        }
    }
}
