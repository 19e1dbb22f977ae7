//! Roofline of the SGD-MF kernel on this machine: measures the memory bandwidth (STREAM
//! copy and triad, 1 and 2 threads), the single-core floating-point rate (independent
//! multiply-add chains, and the SGD-MF update itself on factor rows that stay in L1), and
//! the SGD-MF epoch (hand-written serial loop and strads at 1 and 2 threads) on the
//! generated 10.5 M ratings set, all in one run; then prints where the kernel stands
//! against the bound that applies. Record the table in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench roofline
//! cargo bench --bench roofline -- --ratings 2000000 --rounds 3 --stream-mib 256
//! ```
//!
//! Counting, per rating with `k` factors (the loop of `examples/sgd_mf.rs`):
//! - flops: the dot product `2k`, the error 1, and per factor two updates of 5 operations
//!   (`lr * (err * h - reg * w)` then `+=`): `12k + 1` (385 at k = 32);
//! - bytes from memory when neither factor row is in cache: the rating (12 bytes) and both
//!   rows read and written back: `12 + 16k` (524 at k = 32), an arithmetic intensity of
//!   0.73 flop/byte. That is the memory roof; the in-cache kernel rate is the compute roof
//!   this kernel can reach, below the machine's peak because of the dot product's reduction.

use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use strads::testing::median;

/// The timed loops, shared by the benches.
#[path = "common/sgd.rs"]
mod sgd;
use sgd::{init_factors, serial_epoch, sgd_epoch};

#[derive(Parser, Debug)]
struct Args {
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
    /// Timed repetitions of every measurement (the best is kept for the roofs, the median
    /// for epochs).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Size of each STREAM array in MiB (three arrays; far larger than the caches).
    #[arg(long, default_value_t = 512)]
    stream_mib: usize,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Runs `f(dst_part, src_parts)` on `threads` equal parts of `dst` and the matching parts
/// of each source on scoped threads (inline for one thread); returns the wall time.
fn timed_parts(
    threads: usize,
    dst: &mut [f64],
    srcs: [&[f64]; 2],
    f: impl Fn(&mut [f64], [&[f64]; 2]) + Sync,
) -> f64 {
    let chunk = dst.len().div_ceil(threads.max(1));
    let t = Instant::now();
    if threads <= 1 {
        f(dst, srcs);
    } else {
        std::thread::scope(|s| {
            for (p, d) in dst.chunks_mut(chunk).enumerate() {
                let f = &f;
                let r = p * chunk..p * chunk + d.len();
                let parts = [&srcs[0][r.clone()], &srcs[1][r]];
                s.spawn(move || f(d, parts));
            }
        });
    }
    t.elapsed().as_secs_f64()
}

/// STREAM copy (`c = a`, 16 bytes per element) and triad (`a = b + s * c`, 24 bytes per
/// element): the best of `rounds` in GB/s.
fn stream(threads: usize, elems: usize, rounds: usize) -> (f64, f64) {
    let (mut a, mut b, mut c) = (
        vec![1.0f64; elems],
        vec![2.0f64; elems],
        vec![0.0f64; elems],
    );
    let (mut copy, mut triad) = (f64::INFINITY, f64::INFINITY);
    let s = black_box(3.0f64);
    for _ in 0..rounds {
        let t = timed_parts(threads, &mut c, [&a, &b], |d, [src, _]| {
            d.copy_from_slice(src)
        });
        copy = copy.min(t);
        let t = timed_parts(threads, &mut a, [&b, &c], |d, [y, z]| {
            for ((x, &y), &z) in d.iter_mut().zip(y).zip(z) {
                *x = y + s * z;
            }
        });
        triad = triad.min(t);
        std::mem::swap(&mut b, &mut c);
    }
    black_box((&a, &b, &c));
    let bytes = elems as f64 * 8.0;
    (2.0 * bytes / copy / 1e9, 3.0 * bytes / triad / 1e9)
}

/// Single-core f32 multiply-add rate in GFLOP/s: 64 independent chains `x = x * a + b`
/// (2 flops each), which the compiler vectorizes; the best of `rounds`.
fn peak_flops(rounds: usize) -> f64 {
    const LANES: usize = 64;
    let iters = 20_000_000usize;
    let (a, b) = (black_box(0.999_999f32), black_box(1e-7f32));
    let mut best = f64::INFINITY;
    for _ in 0..rounds {
        let mut acc = black_box([1.0f32; LANES]);
        let t = Instant::now();
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = *x * a + b;
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
        black_box(acc);
    }
    2.0 * (LANES * iters) as f64 / best / 1e9
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    let (lr, reg, k) = (0.01f32, 0.05f32, args.k);
    let rounds = args.rounds.max(1);
    let flops_per = (12 * k + 1) as f64;
    let bytes_per = (12 + 16 * k) as f64;
    let intensity = flops_per / bytes_per;

    // Memory and compute roofs.
    let elems = args.stream_mib * (1 << 20) / 8;
    let (copy1, triad1) = stream(1, elems, rounds);
    let (copy2, triad2) = stream(2, elems, rounds);
    let peak = peak_flops(rounds);

    // The kernel with its rows in L1: 16 users x 16 items, the same number of updates as a
    // 1 M-rating epoch.
    let small = 1_000_000usize;
    let hot: Vec<(u32, u32, f32)> = (0..small)
        .map(|n| ((n % 16) as u32, ((n / 16 + n) % 16) as u32, 1.0))
        .collect();
    let (mut hw, mut hh) = (vec![0.1f32; 16 * k], vec![0.1f32; 16 * k]);
    let mut hot_t = f64::INFINITY;
    for _ in 0..rounds {
        let t = Instant::now();
        serial_epoch(black_box(&hot), &mut hw, &mut hh, k, lr, reg);
        hot_t = hot_t.min(t.elapsed().as_secs_f64());
    }
    black_box((&hw, &hh));
    let kernel_roof = small as f64 * flops_per / hot_t / 1e9;

    // The epoch on the generated set.
    let t = Instant::now();
    let ratings = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: args.users,
        items: args.items,
        ratings: args.ratings,
        ..Default::default()
    });
    let [users, items] = ratings.shape();
    println!(
        "data: generated (Zipf-skewed, random order): {} ratings, {users} users x {items} \
         items (built in {:.1}s); k = {k}",
        ratings.nnz(),
        t.elapsed().as_secs_f64()
    );
    let flat: Vec<(u32, u32, f32)> = ratings
        .iter()
        .map(|([u, i], &r)| (u as u32, i as u32, r))
        .collect();
    // The factors and step of `benches/sgd_mf.rs`, so the two benches' epochs compare.
    let (w0, h0) = (init_factors(users, k, 1), init_factors(items, k, 2));
    let (mut ws, mut hs) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    let mut models = [
        (1usize, w0.clone(), h0.clone()),
        (2, w0.clone(), h0.clone()),
    ];
    // Warm-up (strads plans and buckets here).
    serial_epoch(&flat, &mut ws, &mut hs, k, lr, reg);
    for (n, w, h) in &mut models {
        strads::with_threads(*n, || sgd_epoch(&ratings, w, h, lr, reg));
    }
    let mut times = vec![Vec::new(); 3];
    for _ in 0..rounds {
        let t = Instant::now();
        serial_epoch(&flat, &mut ws, &mut hs, k, lr, reg);
        times[0].push(t.elapsed().as_secs_f64());
        for (m, (n, w, h)) in models.iter_mut().enumerate() {
            let t = Instant::now();
            strads::with_threads(*n, || sgd_epoch(&ratings, w, h, lr, reg));
            times[m + 1].push(t.elapsed().as_secs_f64());
        }
    }
    let nnz = ratings.nnz() as f64;

    println!();
    println!("| roof | 1 thread | 2 threads |");
    println!("|---|---|---|");
    println!("| STREAM copy, GB/s | {copy1:.2} | {copy2:.2} |");
    println!("| STREAM triad, GB/s | {triad1:.2} | {triad2:.2} |");
    println!(
        "| f32 multiply-add chains, GFLOP/s | {peak:.2} | ({:.2}) |",
        2.0 * peak
    );
    println!(
        "| SGD-MF update, rows in L1, GFLOP/s | {kernel_roof:.2} | ({:.2}) |",
        2.0 * kernel_roof
    );
    println!();
    println!(
        "kernel: {flops_per:.0} flops and at most {bytes_per:.0} bytes per rating \
         (intensity {intensity:.3} flop/byte)"
    );
    println!();
    println!(
        "| system | threads | epoch_s | M upd/s | GFLOP/s | GB/s if rows missed cache | \
         of memory roof (triad) | of kernel roof |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (m, name, threads) in [
        (0, "hand-written serial", 1usize),
        (1, "strads", 1),
        (2, "strads", 2),
    ] {
        let s = median(&mut times[m]);
        let ups = nnz / s;
        let gflops = ups * flops_per / 1e9;
        let gbs = ups * bytes_per / 1e9;
        let (triad, roof) = if threads == 1 {
            (triad1, kernel_roof)
        } else {
            (triad2, 2.0 * kernel_roof)
        };
        println!(
            "| {name} | {threads} | {s:.4} | {:.1} | {gflops:.2} | {gbs:.2} | {:.2} | {:.2} |",
            ups / 1e6,
            gbs / triad,
            gflops / roof
        );
    }
    println!();
    println!(
        "roofs: the best of {rounds}; STREAM arrays {} MiB each; the 2-thread compute roofs \
         in brackets are 2x the 1-thread figure, not measured; epoch_s: median of {rounds} \
         interleaved epochs; \"of memory roof\" above 1 means the rows come from cache",
        args.stream_mib
    );
    Ok(())
}
