//! Time per SGD-MF epoch: a hand-written serial loop (no strads, same arithmetic) against
//! strads at 1 and 2 threads, interleaved in one run so the ratios share the machine's
//! noise. Prints a table; record it in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench sgd_mf                          # 10.5M generated ratings, k = 32
//! cargo bench --bench sgd_mf -- --ratings 2000000 --rounds 3
//! cargo bench --bench sgd_mf -- --data ../shared/data/movielens-latest-small/ratings.csv
//! ```
//!
//! For profilers, `--only <serial|blocked|strads>` runs one system alone for `--rounds`
//! epochs (no warm-up, no table), and `--train-bin` reads the ratings the `peers` bench
//! hands to LIBMF (`target/peers/<data>-train.bin`), so a profile of LIBMF's driver and
//! one of this loop see the same data. `--only timeline|ring|variants|order` are the
//! experiments of BENCHMARKS.md's "Profiles of the missed targets" (see `--help`).
//!
//! ```text
//! valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes \
//!     --toggle-collect=sgd_mf::sgd::serial_epoch --dump-after=sgd_mf::sgd::serial_epoch \
//!     target/release/deps/sgd_mf-<hash> --train-bin target/peers/generated-train.bin \
//!     --only serial --rounds 2
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use strads::prelude::*;
use strads::testing::median;

/// The timed loops, shared by the benches.
#[path = "common/sgd.rs"]
mod sgd;
use sgd::{
    aligned_copy, init_factors, serial_epoch, serial_epoch_dot_before, serial_epoch_prefetch,
    sgd_epoch,
};

/// `sgd_epoch` expanded by hand with timestamps per block, for `--only timeline`.
#[path = "common/timeline.rs"]
mod timeline;

/// The 2D ring rebuilt over strads' blocks, started two ways, for `--only ring`.
#[path = "common/ring.rs"]
mod ring;

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
    /// Ratings in the format of `scripts/libmf/driver.cpp` ("STRADSMF", i32 m, i32 n,
    /// i64 nnz, then {i32 u, i32 v, f32 r} records), e.g. `target/peers/generated-train.bin`.
    #[arg(long, conflicts_with = "data")]
    train_bin: Option<PathBuf>,
    /// Runs only this system for `--rounds` epochs, for a profiler: `serial`, `blocked`
    /// (the serial loop in the block order of strads at the widest `--threads`) or
    /// `strads` (at the first of `--threads`); or `timeline`: strads at the first of
    /// `--threads` with a timestamp at each block's start and end, interleaved with the
    /// serial loop, and a table of where the call's time goes (medians over the rounds);
    /// or `ring`: strads' ring and blocks rebuilt in the bench, started by a broadcast from
    /// the calling thread (as strads does) or with the calling thread as worker 0 (also with
    /// a software prefetch `--ring-ahead` ratings ahead), against strads and the serial loop; or `variants`: the serial loop as written, with its
    /// factor rows aligned to 64 bytes, with a software prefetch `--ahead` ratings ahead,
    /// both, and in the block order of strads at the widest `--threads`, interleaved.
    #[arg(long)]
    only: Option<String>,
    /// Test ratings (driver format, like `--train-bin`) for `--only order`, which prints the
    /// test RMSE after each of `--rounds` epochs of the serial loop in file order, in the
    /// block order of strads at the widest `--threads`, and in the order of B x B grids of
    /// balanced blocks for each of `--grids` (steps in order, block (w, (w + t) mod B) of
    /// step t, each block in file order).
    #[arg(long)]
    test_bin: Option<PathBuf>,
    /// Grid sizes B for `--only order`.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,26")]
    grids: Vec<usize>,
    /// Prefetch distance (ratings ahead) of the last row of `--only ring`.
    #[arg(long, default_value_t = 16)]
    ring_ahead: usize,
    /// Prefetch distances (ratings ahead) for `--only variants`.
    #[arg(long, value_delimiter = ',', default_value = "4,16")]
    ahead: Vec<usize>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One rating as the hand-written loop reads it: user, item, value.
type Rating = (u32, u32, f32);

/// A factor matrix copy and the offset of its first element inside the vector.
type Factors = (Vec<f32>, usize);

/// Reads ratings in the LIBMF driver's binary format (see `Args::train_bin`).
fn read_bin(path: &std::path::Path) -> strads::Result<SparseArray<f32, 2>> {
    let io = |source| strads::Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let bad = |what: &str| io(std::io::Error::new(std::io::ErrorKind::InvalidData, what));
    if bytes.len() < 24 || &bytes[..8] != b"STRADSMF" {
        return Err(bad("not a STRADSMF file"));
    }
    let i32_at = |o: usize| i32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let (m, n) = (i32_at(8) as usize, i32_at(12) as usize);
    let nnz = i64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    if bytes.len() != 24 + 12 * nnz {
        return Err(bad("length does not match its header"));
    }
    let entries = bytes[24..]
        .chunks_exact(12)
        .map(|c| {
            let f = |o: usize| <[u8; 4]>::try_from(&c[o..o + 4]).unwrap();
            let (u, i) = (i32::from_le_bytes(f(0)), i32::from_le_bytes(f(4)));
            ([u as usize, i as usize], f32::from_le_bytes(f(8)))
        })
        .collect();
    SparseArray::from_entries([m, n], entries)
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let t = Instant::now();
    let ratings = match (&args.data, &args.train_bin) {
        (Some(p), _) => strads::load::ratings(p)?,
        (None, Some(p)) => read_bin(p)?,
        (None, None) => strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
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
        .or(args.train_bin.as_ref())
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

    if let Some(system) = &args.only {
        return profile_only(system, &args, &ratings, &flat, (w0, h0));
    }

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

/// `--only`: one system alone for `--rounds` epochs, timed per epoch, for a profiler.
fn profile_only(
    system: &str,
    args: &Args,
    ratings: &SparseArray<f32, 2>,
    flat: &[(u32, u32, f32)],
    (w0, h0): (DistArray<f32, 2>, DistArray<f32, 2>),
) -> strads::Result<()> {
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let threads = args.threads.first().copied().unwrap_or(1);
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let order: Vec<(u32, u32, f32)> = match system {
        "serial" | "strads" => Vec::new(),
        "timeline" => return timeline_table(args, threads, ratings, flat, (w0, h0)),
        "ring" => return ring_table(args, threads, ratings, flat, (w0, h0)),
        "variants" => return variants_table(args, ratings, flat, (w0, h0)),
        "order" => return order_table(args, ratings, flat, (w0, h0)),
        "blocked" => {
            let (_, trace) = strads::testing::record(|| {
                let (mut w, mut h) = (w0.clone(), h0.clone());
                strads::with_threads(widest, || sgd_epoch(ratings, &mut w, &mut h, lr, reg));
            });
            trace.runs[0].order().iter().map(|&i| flat[i]).collect()
        }
        other => {
            panic!(
                "--only {other}: expected serial, blocked, strads, timeline, ring, variants or order"
            )
        }
    };
    let (mut w, mut h) = (w0, h0);
    let (mut ws, mut hs) = (w.as_slice().to_vec(), h.as_slice().to_vec());
    for e in 1..=args.rounds {
        let t = Instant::now();
        match system {
            "serial" => serial_epoch(flat, &mut ws, &mut hs, k, lr, reg),
            "blocked" => serial_epoch(&order, &mut ws, &mut hs, k, lr, reg),
            _ => strads::with_threads(threads, || sgd_epoch(ratings, &mut w, &mut h, lr, reg)),
        }
        println!("{system} epoch {e}: {:.4} s", t.elapsed().as_secs_f64());
    }
    Ok(())
}

/// `--only timeline`: where the time of one strads call goes, block by block, against the
/// serial loop's epoch in the same run (medians over `--rounds`, after one warm-up each).
fn timeline_table(
    args: &Args,
    threads: usize,
    ratings: &SparseArray<f32, 2>,
    flat: &[(u32, u32, f32)],
    (mut w, mut h): (DistArray<f32, 2>, DistArray<f32, 2>),
) -> strads::Result<()> {
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let (mut ws, mut hs) = (w.as_slice().to_vec(), h.as_slice().to_vec());
    let ms = |ns: f64| ns / 1e6;
    let mut serial = Vec::new();
    let mut calls = Vec::new();
    let mut runs: Vec<Vec<timeline::Span>> = Vec::new();
    for round in 0..=args.rounds {
        let t = Instant::now();
        serial_epoch(flat, &mut ws, &mut hs, k, lr, reg);
        let s = t.elapsed().as_nanos() as f64;
        let (spans, total) = strads::with_threads(threads, || {
            timeline::timed_epoch(ratings, &mut w, &mut h, lr, reg)
        });
        if round > 0 {
            serial.push(s);
            calls.push(total as f64);
            runs.push(spans);
        }
    }
    let serial_med = median(&mut serial);
    let call_med = median(&mut calls.clone());
    let n = ratings.nnz() as f64;
    println!(
        "\nstrads at {threads} threads, {} calls, medians in ms (serial epoch in the same run: {:.3} ms, {:.2} ns/rating)",
        runs.len(),
        ms(serial_med),
        serial_med / n
    );
    println!(
        "{:>5} {:>6} {:>9} {:>8} {:>8} {:>9} {:>12} {:>14}",
        "step", "worker", "ratings", "start", "end", "duration", "ns/rating", "vs serial/rtg"
    );
    let blocks = runs[0].len();
    let mut busy = vec![0f64; runs.len()];
    for b in 0..blocks {
        let (step, worker, cnt) = (runs[0][b].step, runs[0][b].worker, runs[0][b].ratings);
        let mut st: Vec<f64> = runs.iter().map(|r| r[b].start as f64).collect();
        let mut en: Vec<f64> = runs.iter().map(|r| r[b].end as f64).collect();
        let mut du: Vec<f64> = runs
            .iter()
            .map(|r| (r[b].end - r[b].start) as f64)
            .collect();
        for (x, r) in busy.iter_mut().zip(&runs) {
            *x += (r[b].end - r[b].start) as f64;
        }
        let d = median(&mut du);
        println!(
            "{:>5} {:>6} {:>9} {:>8.3} {:>8.3} {:>9.3} {:>12.2} {:>14.2}",
            step,
            worker,
            cnt,
            ms(median(&mut st)),
            ms(median(&mut en)),
            ms(d),
            d / cnt.max(1) as f64,
            d / cnt.max(1) as f64 / (serial_med / n)
        );
    }
    // Where the wall time goes: the first block's start (the wake-up), the waits between a
    // worker's consecutive blocks (the ring hand-off plus waiting for the slower worker),
    // and the return after the last block.
    let mut wake: Vec<f64> = runs
        .iter()
        .map(|r| r.iter().map(|s| s.start).min().unwrap_or(0) as f64)
        .collect();
    let mut wake_last: Vec<f64> = runs
        .iter()
        .map(|r| {
            r.iter()
                .filter(|s| s.step == 0)
                .map(|s| s.start)
                .max()
                .unwrap_or(0) as f64
        })
        .collect();
    let mut tail: Vec<f64> = runs
        .iter()
        .zip(&calls)
        .map(|(r, &c)| c - r.iter().map(|s| s.end).max().unwrap_or(0) as f64)
        .collect();
    let mut gaps: Vec<f64> = runs
        .iter()
        .map(|r| {
            let mut g = 0u64;
            for s in r.iter().filter(|s| s.step > 0) {
                if let Some(prev) = r
                    .iter()
                    .find(|p| p.step + 1 == s.step && p.worker == s.worker)
                {
                    g += s.start.saturating_sub(prev.end);
                }
            }
            g as f64
        })
        .collect();
    let mut util: Vec<f64> = busy
        .iter()
        .zip(&calls)
        .map(|(b, c)| b / (c * threads as f64))
        .collect();
    println!(
        "call {:.3} ms ({:.2}x serial); first block starts after {:.3} ms, the last worker's \
         first block after {:.3} ms; waits between a worker's blocks (all workers) {:.3} ms; \
         return after the last block {:.3} ms; workers busy in blocks {:.0}% of the call",
        ms(call_med),
        serial_med / call_med,
        ms(median(&mut wake)),
        ms(median(&mut wake_last)),
        ms(median(&mut gaps)),
        ms(median(&mut tail)),
        100.0 * median(&mut util)
    );
    Ok(())
}

/// `--only ring`: how much of strads' 2-thread epoch the start of the call costs, from the
/// same blocks run by the bench's copy of the ring started two ways (see `common/ring.rs`),
/// interleaved with the serial loop and strads itself.
fn ring_table(
    args: &Args,
    threads: usize,
    ratings: &SparseArray<f32, 2>,
    flat: &[(u32, u32, f32)],
    (w0, h0): (DistArray<f32, 2>, DistArray<f32, 2>),
) -> strads::Result<()> {
    use ring::{RingPlan, Start, ring_epoch};
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let p = threads.max(2);
    let (_, trace) = strads::testing::record(|| {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        strads::with_threads(p, || sgd_epoch(ratings, &mut w, &mut h, lr, reg));
    });
    let (plan, tr) = RingPlan::from_steps(&trace.runs[0].steps, flat, ratings.shape());
    let pool = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .expect("a rayon pool")
    };
    let (full, fewer) = (pool(p), pool(p - 1));
    let (mut ws, mut hs) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    let mut models = [
        (w0.clone(), h0.clone()),
        (w0.clone(), h0.clone()),
        (w0.clone(), h0.clone()),
        (w0, h0),
    ];
    let names = [
        "strads".to_string(),
        "ring, broadcast (as strads)".to_string(),
        "ring, caller is worker 0".to_string(),
        format!("  same + prefetch {} ahead", args.ring_ahead),
    ];
    let mut times = vec![Vec::new(); 5];
    for round in 0..=args.rounds {
        let mut tick = |m: usize, f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            if round > 0 {
                times[m].push(t.elapsed().as_secs_f64());
            }
        };
        tick(0, &mut || serial_epoch(flat, &mut ws, &mut hs, k, lr, reg));
        let [a, b, c, d] = &mut models;
        tick(1, &mut || {
            strads::with_threads(p, || sgd_epoch(ratings, &mut a.0, &mut a.1, lr, reg))
        });
        tick(2, &mut || {
            ring_epoch(
                &plan,
                Start::Broadcast,
                &full,
                tr,
                0,
                &mut b.0,
                &mut b.1,
                lr,
                reg,
            )
        });
        tick(3, &mut || {
            ring_epoch(
                &plan,
                Start::CallerJoins,
                &fewer,
                tr,
                0,
                &mut c.0,
                &mut c.1,
                lr,
                reg,
            )
        });
        tick(4, &mut || {
            ring_epoch(
                &plan,
                Start::CallerJoins,
                &fewer,
                tr,
                args.ring_ahead,
                &mut d.0,
                &mut d.1,
                lr,
                reg,
            )
        });
    }
    let base = median(&mut times[0]);
    println!(
        "\n{p} threads, {} interleaved rounds; hand-written serial epoch {:.3} ms",
        args.rounds,
        base * 1e3
    );
    for (m, name) in names.iter().enumerate() {
        let t = median(&mut times[m + 1]);
        let same = models[m].0.as_slice() == models[0].0.as_slice()
            && models[m].1.as_slice() == models[0].1.as_slice();
        println!(
            "{name:<30} {:>8.3} ms {:>7.2}x serial   equals strads bit for bit: {same}",
            t * 1e3,
            base / t
        );
    }
    Ok(())
}

/// `--only variants`: what the dot product as it was before, row alignment, software
/// prefetch and block order are each worth to the hand-written serial loop (the same arithmetic; alignment and prefetch keep its
/// order, so its result, which is checked).
fn variants_table(
    args: &Args,
    ratings: &SparseArray<f32, 2>,
    flat: &[(u32, u32, f32)],
    (w0, h0): (DistArray<f32, 2>, DistArray<f32, 2>),
) -> strads::Result<()> {
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let (_, trace) = strads::testing::record(|| {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        strads::with_threads(widest, || sgd_epoch(ratings, &mut w, &mut h, lr, reg));
    });
    let blocked: Vec<(u32, u32, f32)> = trace.runs[0].order().iter().map(|&i| flat[i]).collect();
    let (nw, nh) = (w0.len(), h0.len());
    // (name, factors (vector, offset of the first element), prefetch distance (usize::MAX:
    // the dot product before), block order)
    let mut systems: Vec<(String, Factors, Factors, usize, bool)> = Vec::new();
    let plain = |d: &[f32]| (d.to_vec(), 0usize);
    let al = |d: &[f32]| aligned_copy(d, 64);
    systems.push((
        "as written".into(),
        plain(w0.as_slice()),
        plain(h0.as_slice()),
        0,
        false,
    ));
    systems.push((
        "dot before (one array of eight)".into(),
        plain(w0.as_slice()),
        plain(h0.as_slice()),
        usize::MAX,
        false,
    ));
    systems.push((
        "rows aligned to 64 B".into(),
        al(w0.as_slice()),
        al(h0.as_slice()),
        0,
        false,
    ));
    for &a in &args.ahead {
        systems.push((
            format!("prefetch {a} ahead"),
            plain(w0.as_slice()),
            plain(h0.as_slice()),
            a,
            false,
        ));
        systems.push((
            format!("aligned + prefetch {a} ahead"),
            al(w0.as_slice()),
            al(h0.as_slice()),
            a,
            false,
        ));
    }
    systems.push((
        format!("in {widest}-thread block order"),
        plain(w0.as_slice()),
        plain(h0.as_slice()),
        0,
        true,
    ));
    systems.push((
        format!("aligned, {widest}-thread block order"),
        al(w0.as_slice()),
        al(h0.as_slice()),
        0,
        true,
    ));
    let mut times = vec![Vec::new(); systems.len()];
    for round in 0..=args.rounds {
        for (m, (_, (w, ow), (h, oh), ahead, blk)) in systems.iter_mut().enumerate() {
            let order: &[(u32, u32, f32)] = if *blk { &blocked } else { flat };
            let (w, h) = (&mut w[*ow..*ow + nw], &mut h[*oh..*oh + nh]);
            let t = Instant::now();
            if *ahead == usize::MAX {
                serial_epoch_dot_before(order, w, h, k, lr, reg);
            } else if *ahead > 0 {
                serial_epoch_prefetch(order, w, h, k, lr, reg, *ahead);
            } else {
                serial_epoch(order, w, h, k, lr, reg);
            }
            if round > 0 {
                times[m].push(t.elapsed().as_secs_f64());
            }
        }
    }
    let base = median(&mut times[0].clone());
    let n = ratings.nnz() as f64;
    println!(
        "\nhand-written serial loop, {} interleaved rounds (after one warm-up each)",
        args.rounds
    );
    let reference = |blk: bool| {
        systems
            .iter()
            .find(|s| s.4 == blk && s.3 == 0)
            .map(|s| {
                (
                    s.1.0[s.1.1..s.1.1 + nw].to_vec(),
                    s.2.0[s.2.1..s.2.1 + nh].to_vec(),
                )
            })
            .expect("a plain run")
    };
    let (r_in, r_blk) = (reference(false), reference(true));
    for (m, (name, (w, ow), (h, oh), _, blk)) in systems.iter().enumerate() {
        let t = median(&mut times[m]);
        let r = if *blk { &r_blk } else { &r_in };
        let same = w[*ow..*ow + nw] == r.0[..] && h[*oh..*oh + nh] == r.1[..];
        println!(
            "{name:<34} {:>9.4} s {:>7.3}x {:>8.1} M/s  equals the plain loop in its order: {same}",
            t,
            base / t,
            n / t / 1e6
        );
        assert!(same, "{name}: the factors differ from the plain loop's");
    }
    Ok(())
}

/// Balanced bounds: `b` ranges of ids with about equal numbers of ratings; the part of
/// every id.
fn balanced_parts(counts: &[usize], b: usize) -> Vec<usize> {
    let total: usize = counts.iter().sum();
    let mut part = vec![0; counts.len()];
    let mut seen = 0usize;
    for (id, &c) in counts.iter().enumerate() {
        part[id] = (seen * b / total.max(1)).min(b - 1);
        seen += c;
    }
    part
}

/// The ratings in the order of a `b` x `b` grid of balanced blocks run as Orion's unordered
/// schedule replays: step t, then worker w, block (w, (w + t) mod b), each block in file
/// order.
fn grid_order(flat: &[(u32, u32, f32)], shape: [usize; 2], b: usize) -> Vec<(u32, u32, f32)> {
    let (mut cu, mut ci) = (vec![0usize; shape[0]], vec![0usize; shape[1]]);
    for &(u, i, _) in flat {
        cu[u as usize] += 1;
        ci[i as usize] += 1;
    }
    let (pu, pi) = (balanced_parts(&cu, b), balanced_parts(&ci, b));
    let mut blocks = vec![Vec::new(); b * b];
    for &e in flat {
        blocks[pu[e.0 as usize] * b + pi[e.1 as usize]].push(e);
    }
    let mut out = Vec::with_capacity(flat.len());
    for t in 0..b {
        for w in 0..b {
            out.extend_from_slice(&blocks[w * b + (w + t) % b]);
        }
    }
    out
}

/// `--only order`: the test RMSE per epoch of the same loop in different orders.
fn order_table(
    args: &Args,
    ratings: &SparseArray<f32, 2>,
    flat: &[(u32, u32, f32)],
    (w0, h0): (DistArray<f32, 2>, DistArray<f32, 2>),
) -> strads::Result<()> {
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let test = read_bin(
        args.test_bin
            .as_ref()
            .expect("--only order needs --test-bin"),
    )?;
    let test: Vec<(u32, u32, f32)> = test
        .iter()
        .map(|([u, i], &r)| (u as u32, i as u32, r))
        .collect();
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let (_, trace) = strads::testing::record(|| {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        strads::with_threads(widest, || sgd_epoch(ratings, &mut w, &mut h, lr, reg));
    });
    let mut orders: Vec<(String, Vec<Rating>)> = vec![
        ("file order (serial)".into(), flat.to_vec()),
        (
            format!("strads {widest}t block order"),
            trace.runs[0].order().iter().map(|&i| flat[i]).collect(),
        ),
    ];
    for &b in &args.grids {
        orders.push((
            format!("{b}x{b} grid"),
            grid_order(flat, ratings.shape(), b),
        ));
    }
    let rmse = |w: &[f32], h: &[f32]| {
        (sgd::squared_error(&test, w, h, k) / test.len().max(1) as f64).sqrt()
    };
    let mut curves = Vec::new();
    for (_, order) in &orders {
        let (mut w, mut h) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
        let mut c = Vec::new();
        for _ in 0..args.rounds {
            serial_epoch(order, &mut w, &mut h, k, lr, reg);
            c.push(rmse(&w, &h));
        }
        curves.push(c);
    }
    println!("\ntest RMSE per epoch (gap to file order in %)");
    print!("{:>5}", "epoch");
    for (name, _) in &orders {
        print!(" {name:>28}");
    }
    println!();
    for e in 0..args.rounds {
        print!("{:>5}", e + 1);
        for c in &curves {
            let gap = 100.0 * (c[e] / curves[0][e] - 1.0);
            print!(" {:>18.6} ({:>+6.3}%)", c[e], gap);
        }
        println!();
    }
    print!("{:>5}", "max");
    for c in &curves {
        let m = c
            .iter()
            .zip(&curves[0])
            .map(|(a, b)| 100.0 * (a / b - 1.0).abs())
            .fold(0.0, f64::max);
        print!(" {:>28}", format!("{m:.3}%"));
    }
    println!();
    Ok(())
}
