//! Time per sparse logistic regression epoch: a hand-written serial loop (plain slices, the
//! same arithmetic) against strads at 1 and 2 threads, interleaved in one run so the
//! ratios share the machine's noise. strads reaches the weights through feature ids read
//! from the data, so its first call runs the loop in recording mode (reconnaissance) and
//! plans task groups; that first call is reported apart from the median epoch, which
//! reuses the plan. Prints one table; record it in BENCHMARKS.md.
//!
//! Two data sets: a9a (`../shared/data/libsvm-a9a`, or a generated set of its shape when
//! the directory is absent), where a few features occur in almost every sample, and a
//! larger generated set (1M samples, 100k features in 20 Zipf-skewed groups) where
//! samples conflict less.
//!
//! ```text
//! cargo bench --bench sparse_lr
//! cargo bench --bench sparse_lr -- --samples 200000 --rounds 3
//! cargo bench --bench sparse_lr -- --data path/to/train.libsvm --threads 1,2,4
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use strads::load::LibSvm;
use strads::prelude::*;
use strads::testing::median;

/// The example's loops, compiled here as they are there.
#[path = "../examples/sparse_lr/model.rs"]
#[allow(dead_code)] // not every item of the example's module is used here
mod model;
use model::lr_epoch;

/// What a user would write without strads: plain slices, the same arithmetic, the samples
/// in the order `order` gives.
#[allow(clippy::too_many_arguments)]
fn serial_epoch(
    labels: &[f32],
    offsets: &[u32],
    features: &[u32],
    values: &[f32],
    order: &[u32],
    w: &mut [f32],
    lr: f32,
    reg: f32,
) {
    for &s in order {
        let s = s as usize;
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f32;
        for k in lo..hi {
            z += w[features[k] as usize] * values[k];
        }
        let y = labels[s];
        let g = -y / (1.0 + (y * z).exp());
        for k in lo..hi {
            let f = features[k] as usize;
            w[f] -= lr * (g * values[k] + reg * w[f]);
        }
    }
}

/// Fraction of `data` the model classifies correctly.
fn accuracy(data: &LibSvm, w: &[f32]) -> f64 {
    let correct = (0..data.samples())
        .filter(|&s| {
            let (y, f, v) = data.sample(s);
            let z: f32 = f.iter().zip(v).map(|(&f, &v)| w[f as usize] * v).sum();
            y * z > 0.0
        })
        .count();
    correct as f64 / data.samples().max(1) as f64
}

#[derive(Parser, Debug)]
struct Args {
    /// LIBSVM training file for the first data set (default: a9a from ../shared/data,
    /// else a generated set of its shape).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Samples of the large generated set (0 skips it).
    #[arg(long, default_value_t = 1_000_000)]
    samples: usize,
    /// Features of the large generated set.
    #[arg(long, default_value_t = 100_000)]
    features: usize,
    /// Active features per sample (feature groups) of the large generated set.
    #[arg(long, default_value_t = 20)]
    active: usize,
    /// Zipf exponent of feature popularity within a group of the large generated set.
    #[arg(long, default_value_t = 1.0)]
    zipf: f64,
    /// Timed epochs per system (after the first, timed apart).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Thread counts to run strads at.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

const LR: f32 = 0.03;
const REG: f32 = 1e-4;

/// One table row.
struct Row {
    data: String,
    system: String,
    threads: String,
    first: Option<f64>,
    epoch: f64,
    base: f64,
    nnz: usize,
    accuracy: f64,
}

fn print_row(r: &Row) {
    let first = r.first.map_or("-".to_string(), |f| format!("{f:.4}"));
    // Only strads plans: for the hand-written loop the difference is noise.
    let plan = match r.first {
        Some(f) if r.system == "strads" => format!("{:.4}", (f - r.epoch).max(0.0)),
        _ => "-".to_string(),
    };
    println!(
        "{:<10} {:<26} {:>7} {:>9} {:>9} {:>9} {:>8.3} {:>10.1} {:>8.4}",
        r.data,
        r.system,
        r.threads,
        first,
        plan,
        format!("{:.4}", r.epoch),
        r.base / r.epoch,
        r.nnz as f64 / r.epoch / 1e6,
        r.accuracy
    );
}

/// Times the systems on one data set and returns its rows.
fn bench(name: &str, data: &LibSvm, args: &Args) -> Vec<Row> {
    let n = data.samples();
    let (labels, offsets, features, values) = (
        data.labels.as_slice(),
        data.offsets.as_slice(),
        data.features.as_slice(),
        data.values.as_slice(),
    );
    let w0 = DistArray::<f32, 1>::zeros([data.n_features]);
    let identity: Vec<u32> = (0..n as u32).collect();
    let run_strads = |threads: usize, w: &mut DistArray<f32, 1>| {
        strads::with_threads(threads, || {
            lr_epoch(
                &data.labels,
                &data.offsets,
                &data.features,
                &data.values,
                w,
                n,
                LR,
                REG,
            )
        })
    };

    let mut ws = w0.as_slice().to_vec();
    let t = Instant::now();
    serial_epoch(
        labels, offsets, features, values, &identity, &mut ws, LR, REG,
    );
    let serial_first = t.elapsed().as_secs_f64();
    // The first call of each thread count: reconnaissance, planning, then the epoch.
    let mut models: Vec<(usize, DistArray<f32, 1>, f64)> = args
        .threads
        .iter()
        .map(|&threads| {
            let mut w = w0.clone();
            let t = Instant::now();
            run_strads(threads, &mut w);
            (threads, w, t.elapsed().as_secs_f64())
        })
        .collect();

    // The hand-written loop again, over the samples in the order strads' widest run uses:
    // separates the effect of the order (cache locality) from that of running in parallel.
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let (_, trace) = strads::testing::record(|| run_strads(widest, &mut w0.clone()));
    let blocked: Vec<u32> = trace.runs.first().map_or(identity.clone(), |r| {
        r.order().iter().map(|&s| s as u32).collect()
    });
    let plan = trace.runs.first().map_or("serial", |r| r.plan.as_str());
    println!("{name}: strads plan at {widest} threads: {plan}");
    let mut wb = w0.as_slice().to_vec();
    serial_epoch(
        labels, offsets, features, values, &blocked, &mut wb, LR, REG,
    );

    let (mut serial_times, mut blocked_times) = (Vec::new(), Vec::new());
    let mut strads_times = vec![Vec::new(); models.len()];
    for _ in 0..args.rounds {
        let t = Instant::now();
        serial_epoch(
            labels, offsets, features, values, &identity, &mut ws, LR, REG,
        );
        serial_times.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        serial_epoch(
            labels, offsets, features, values, &blocked, &mut wb, LR, REG,
        );
        blocked_times.push(t.elapsed().as_secs_f64());
        for (m, (threads, w, _)) in models.iter_mut().enumerate() {
            let t = Instant::now();
            run_strads(*threads, w);
            strads_times[m].push(t.elapsed().as_secs_f64());
        }
    }
    let base = median(&mut serial_times);
    let row = |system: String, threads: String, first, epoch, w: &[f32]| Row {
        data: name.to_string(),
        system,
        threads,
        first,
        epoch,
        base,
        nnz: data.nnz(),
        accuracy: accuracy(data, w),
    };
    let mut rows = vec![
        row(
            "hand-written serial".into(),
            "1".into(),
            Some(serial_first),
            base,
            &ws,
        ),
        row(
            format!("  ..in {widest}-thread order"),
            "1".into(),
            None,
            median(&mut blocked_times),
            &wb,
        ),
    ];
    for (m, (threads, w, first)) in models.iter().enumerate() {
        rows.push(row(
            "strads".into(),
            threads.to_string(),
            Some(*first),
            median(&mut strads_times[m]),
            w.as_slice(),
        ));
        if *threads == 1 {
            let same = w.as_slice() == ws.as_slice();
            println!("{name}: strads at 1 thread equals the hand-written loop bit for bit: {same}");
        }
    }
    rows
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    let a9a = Path::new("../shared/data/libsvm-a9a/a9a");
    let t = Instant::now();
    let (name, small) = match &args.data {
        Some(p) => ("file", strads::load::libsvm(p)?),
        None if a9a.exists() => ("a9a", strads::load::libsvm(a9a)?),
        None => (
            "a9a-like",
            strads::generate::libsvm_like(&strads::generate::LibSvmConfig {
                test: 0,
                ..Default::default()
            })
            .0,
        ),
    };
    println!(
        "{name}: {} samples, {} features, {} entries (loaded in {:.2}s)",
        small.samples(),
        small.n_features,
        small.nnz(),
        t.elapsed().as_secs_f64()
    );
    let mut rows = bench(name, &small, &args);
    drop(small);
    if args.samples > 0 {
        let t = Instant::now();
        let (large, _) = strads::generate::libsvm_like(&strads::generate::LibSvmConfig {
            train: args.samples,
            test: 0,
            features: args.features,
            active: args.active,
            zipf_exponent: args.zipf,
            seed: 7,
        });
        println!(
            "large: generated, {} samples, {} features in {} Zipf({}) groups, {} entries (built in {:.2}s)",
            large.samples(),
            large.n_features,
            args.active,
            args.zipf,
            large.nnz(),
            t.elapsed().as_secs_f64()
        );
        rows.extend(bench("large", &large, &args));
    }
    println!(
        "\n{:<10} {:<26} {:>7} {:>9} {:>9} {:>9} {:>8} {:>10} {:>8}",
        "data", "system", "threads", "first_s", "plan_s", "epoch_s", "speedup", "Mupdates/s", "acc"
    );
    for r in &rows {
        print_row(r);
    }
    println!(
        "\nepoch_s: median of {} interleaved epochs (lr = {LR}, reg = {REG}, weights from 0); \
         first_s: the first epoch (strads: reconnaissance and planning included); \
         plan_s = first_s - epoch_s; speedup = hand-written serial epoch_s / epoch_s; \
         Mupdates/s: feature entries per second; acc: training accuracy after all epochs",
        args.rounds
    );
    Ok(())
}
