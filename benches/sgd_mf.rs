//! Time per SGD-MF epoch: a hand-written serial loop (no strads, same arithmetic) against
//! strads at 1 and 2 threads, interleaved in one run so the ratios share the machine's
//! noise. Prints a table; record it in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench sgd_mf                          # 10.5M generated ratings, k = 32
//! cargo bench --bench sgd_mf -- --ratings 2000000 --rounds 3
//! cargo bench --bench sgd_mf -- --data ../shared/data/movielens-latest-small/ratings.csv
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use strads::prelude::*;

/// The timed loops, shared by the benches.
#[path = "common/sgd.rs"]
mod sgd;
use sgd::{init_factors, serial_epoch, sgd_epoch};

#[derive(Parser, Debug)]
struct Args {
    /// Ratings file instead of generated data.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Generated ratings.
    #[arg(long, default_value_t = 10_500_000)]
    ratings: usize,
    /// Generated users.
    #[arg(long, default_value_t = 200_000)]
    users: usize,
    /// Generated items.
    #[arg(long, default_value_t = 40_000)]
    items: usize,
    #[arg(long, default_value_t = 32)]
    k: usize,
    /// Timed epochs per system (after one warm-up epoch each).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Thread counts to run strads at.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let t = Instant::now();
    let ratings = match &args.data {
        Some(p) => strads::load::ratings(p)?,
        None => strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
            users: args.users,
            items: args.items,
            ratings: args.ratings,
            ..Default::default()
        }),
    };
    let [users, items] = ratings.shape();
    let source = args
        .data
        .as_ref()
        .map_or("generated (Zipf-skewed, random order)".to_string(), |p| {
            p.display().to_string()
        });
    println!(
        "data: {source}: {} ratings, {users} users x {items} items (built in {:.1}s); k = {k}",
        ratings.nnz(),
        t.elapsed().as_secs_f64()
    );
    let flat: Vec<(u32, u32, f32)> = ratings
        .iter()
        .map(|([u, i], &r)| (u as u32, i as u32, r))
        .collect();

    // One model per system, all starting from the same factors.
    let (w0, h0) = (init_factors(users, k, 1), init_factors(items, k, 2));
    let (mut ws, mut hs) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    let mut models: Vec<(usize, DistArray<f32, 2>, DistArray<f32, 2>)> = args
        .threads
        .iter()
        .map(|&n| (n, w0.clone(), h0.clone()))
        .collect();

    // Warm-up epoch: for strads this includes planning and bucketing, reported apart.
    let t = Instant::now();
    serial_epoch(&flat, &mut ws, &mut hs, k, lr, reg);
    let serial_first = t.elapsed().as_secs_f64();
    let mut first = Vec::new();
    for (n, w, h) in &mut models {
        let t = Instant::now();
        strads::with_threads(*n, || sgd_epoch(&ratings, w, h, lr, reg));
        first.push(t.elapsed().as_secs_f64());
    }

    // The hand-written loop again, over the ratings in the order strads' widest run uses
    // (block by block): separates the gain from blocking (cache locality) from the gain
    // from running blocks in parallel.
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let (_, trace) = strads::testing::record(|| {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        strads::with_threads(widest, || sgd_epoch(&ratings, &mut w, &mut h, lr, reg));
    });
    let blocked: Vec<(u32, u32, f32)> = trace.runs[0].order().iter().map(|&i| flat[i]).collect();
    let (mut wb, mut hb) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    serial_epoch(&blocked, &mut wb, &mut hb, k, lr, reg);
    let mut blocked_times = Vec::new();

    let mut serial_times = Vec::new();
    let mut strads_times = vec![Vec::new(); models.len()];
    for _ in 0..args.rounds {
        let t = Instant::now();
        serial_epoch(&flat, &mut ws, &mut hs, k, lr, reg);
        serial_times.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        serial_epoch(&blocked, &mut wb, &mut hb, k, lr, reg);
        blocked_times.push(t.elapsed().as_secs_f64());
        for (m, (n, w, h)) in models.iter_mut().enumerate() {
            let t = Instant::now();
            strads::with_threads(*n, || sgd_epoch(&ratings, w, h, lr, reg));
            strads_times[m].push(t.elapsed().as_secs_f64());
        }
    }
    let base = median(&mut serial_times);
    let n = ratings.nnz() as f64;
    println!(
        "\n{:<22} {:>7} {:>12} {:>12} {:>10} {:>12}",
        "system", "threads", "first_s", "epoch_s", "speedup", "Mupdates/s"
    );
    println!(
        "{:<22} {:>7} {:>12.3} {:>12.3} {:>10.3} {:>12.1}",
        "hand-written serial",
        1,
        serial_first,
        base,
        1.0,
        n / base / 1e6
    );
    let bt = median(&mut blocked_times);
    println!(
        "{:<22} {:>7} {:>12} {:>12.3} {:>10.3} {:>12.1}",
        format!("  ..in {widest}-thread block order"),
        1,
        "-",
        bt,
        base / bt,
        n / bt / 1e6
    );
    for (m, (threads, w, h)) in models.iter().enumerate() {
        let t = median(&mut strads_times[m]);
        println!(
            "{:<22} {:>7} {:>12.3} {:>12.3} {:>10.3} {:>12.1}",
            "strads",
            threads,
            first[m],
            t,
            base / t,
            n / t / 1e6
        );
        if *threads == 1 {
            let same = w.as_slice() == ws.as_slice() && h.as_slice() == hs.as_slice();
            println!(
                "{:<22} strads at 1 thread equals the hand-written loop bit for bit: {same}",
                ""
            );
        }
    }
    println!(
        "\nepoch_s: median of {} interleaved epochs; speedup = hand-written serial epoch_s / epoch_s; \
         first_s: first epoch (strads: planning and bucketing included)",
        args.rounds
    );
    Ok(())
}
