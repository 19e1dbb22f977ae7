//! Scale by simulation for the loop kinds beyond SGD-MF's 2D ring (issue 28, item 5):
//! `dtw`'s wavefront, LDA's 2D ring with a write-back buffer and per-token values, and
//! word2vec's `sync = "bsp"` merges, each predicted at 16, 64 and 256 workers (one a rank)
//! with compute costs measured on this machine in the same run: each example's serial
//! loop (`STRADS_SERIAL=1`) on its generated data, from the binaries of
//! `cargo build --release --examples`. Prints one table; record it in BENCHMARKS.md.
//!
//! ```text
//! cargo build --release --examples
//! cargo bench --bench loop_kinds_sim
//! ```
//!
//! The models, and which parts are the runtime's own:
//! - **dtw**: the runtime's wavefront schedule (`plan::wavefront`, 4 time tiles a worker)
//!   and its transfers (`Itinerary`) run on the simulated network (`proto::sim`, the real
//!   protocol core) with each tile taking its cells x the measured cost of a cell. Two
//!   placements of the table: *from the driver* (today: a table the program made on the
//!   driver goes out by bands and comes back) and *in place* (each rank already holds its
//!   band, what a table created in place would give: only tile boundaries move).
//! - **LDA**: the runtime's 2D rotation and transfers for the doc-topic and word-topic
//!   tables on the simulated network (equal blocks, each token the measured cost of a
//!   token), plus, per step, the write-back buffer's merge of the `K` topic totals (one
//!   exchange, latency-bound) and, per sweep, the `iter_mut()` values (4 bytes a token):
//!   *values travel* (through the driver's link to their rank and back each call, as
//!   before stop 38) or *values stay* (kept on the rank that runs their entries between
//!   calls: what the runtime does now, `itermut/kept.rs`).
//! - **word2vec**: an analytic model of a round (`batch` tokens a worker, then a merge of
//!   both replicas; `bsp` cannot overlap them): the rows a replica changes in a round
//!   and their union over `P` replicas are expected counts of distinct words drawn from
//!   text8's Zipf law (contexts and centres) and its unigram^0.75 law (negatives); the
//!   merge is *all-to-all* (below 64 KiB: every rank sends its changed rows to every
//!   other), a *collective* (reduce-scatter then all-gather around a ring, or a binomial
//!   tree when latency dominates, whichever is shorter), or the runtime's
//!   *reduce-scatter* (`array/buffer/collective.rs`: the ring's bytes, each phase one
//!   round trip to the P - 1 others, each rank merging its segment of the tables), each
//!   also paying the sum of the differences at the measured memory rate; the collectives
//!   also at `batch = 65536` (the attribute's `batch`: fewer merges of nearly the same
//!   rows); and `sync = "ssp(1)"` as the runtime runs it (`exec/ahead.rs`): the same
//!   reduce-scatter behind the workers, overlapping the next round, each worker also
//!   paying its round's passes over its replicas (its difference, and its replica rebuilt
//!   from the merged value: seven streams over the tables, at the measured rate).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[path = "common/examples.rs"]
mod examples;
use clap::Parser;
use strads::cluster::proto::sim::{Link, Sim, dtw_wavefront, sgd_mf_2d};
use strads::cluster::proto::{Itinerary, PlanArray, Region};

#[derive(Parser, Debug)]
#[command(about = "Predicted scaling of the wavefront, LDA and word2vec")]
struct Args {
    /// DTW table side (cells: side x side; the simulator holds the bytes in flight, so
    /// the table must fit in memory).
    #[arg(long, default_value_t = 30_000)]
    dtw_side: usize,
    /// LDA tokens, documents, vocabulary (NYTimes-size).
    #[arg(long, default_value_t = 100_000_000)]
    lda_tokens: u64,
    #[arg(long, default_value_t = 300_000)]
    lda_docs: usize,
    #[arg(long, default_value_t = 102_660)]
    lda_vocab: usize,
    /// word2vec tokens an epoch, vocabulary and dimensions (text8-size).
    #[arg(long, default_value_t = 17_000_000)]
    w2v_tokens: u64,
    #[arg(long, default_value_t = 71_290)]
    w2v_vocab: usize,
    #[arg(long, default_value_t = 100)]
    w2v_dim: usize,
    /// One-way link latency, microseconds.
    #[arg(long, default_value_t = 10)]
    latency: u64,
    /// Directory of the example binaries.
    #[arg(long)]
    examples: Option<PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Costs measured here: nanoseconds per DTW cell, per LDA token (at the example's topic
/// count), per word2vec token, and per byte of a summed difference.
struct Costs {
    cell_ns: f64,
    gibbs_ns: f64,
    topics: usize,
    token_ns: f64,
    window: usize,
    negative: usize,
    sum_ns_per_byte: f64,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let dir = examples::dir(args.examples.as_deref())?;
    let c = measure(&dir)?;
    println!(
        "measured here (serial loops): dtw {:.2} ns a cell; lda {:.1} ns a token at {} topics; \
         word2vec {:.0} ns a token (window {}, {} negatives); summing differences {:.3} ns a byte",
        c.cell_ns, c.gibbs_ns, c.topics, c.token_ns, c.window, c.negative, c.sum_ns_per_byte
    );
    println!();
    println!(
        "| kind | link | workers | variant | epoch s | speedup | efficiency | MiB sent a rank | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for gbps in [10.0f64, 40.0] {
        let link = Link {
            latency: args.latency,
            bandwidth: gbps * 125.0,
        };
        for p in [16usize, 64, 256] {
            dtw_rows(args, &c, link, gbps, p);
        }
        for p in [16usize, 64, 256] {
            lda_rows(args, &c, link, gbps, p);
        }
        for p in [16usize, 64, 256] {
            w2v_rows(args, &c, link, gbps, p);
        }
    }
    Ok(())
}

/// Runs `bin` with `args` as its serial loop and returns its stdout.
fn serial_run(bin: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(bin)
        .args(args)
        .env("STRADS_SERIAL", "1")
        .env("STRADS_THREADS", "1")
        .env_remove("STRADS_PROCESSES")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn field(text: &str, key: &str) -> Vec<f64> {
    text.split_whitespace()
        .filter_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .filter_map(|v| v.parse().ok())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(dir: &Path) -> Result<Costs, String> {
    let bin = |name: &str| {
        let b = dir.join(name);
        if b.exists() {
            Ok(b)
        } else {
            Err(format!(
                "{} is missing: run `cargo build --release --examples` first",
                b.display()
            ))
        }
    };
    // dtw: the fill of a 4000 x 4000 table, best of three.
    let cell_ns = (0..3)
        .map(|_| {
            let out = serial_run(&bin("dtw")?, &["--n", "4000", "--m", "4000"])?;
            Ok(field(&out, "seconds").first().copied().unwrap_or(f64::NAN) * 1e9 / 16e6)
        })
        .collect::<Result<Vec<f64>, String>>()?
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    // LDA: the median sweep of 8 on its generated corpus; tokens = loglik / per_token.
    let out = serial_run(&bin("lda")?, &["--iterations", "8"])?;
    let sweeps = field(&out, "sweep_seconds");
    let (ll, per) = (field(&out, "loglik"), field(&out, "per_token"));
    let tokens = ll.first().zip(per.first()).map_or(f64::NAN, |(l, p)| l / p);
    let topics = field(&out, "topics").first().copied().unwrap_or(f64::NAN) as usize;
    let gibbs_ns = median(sweeps[1..].to_vec()) * 1e9 / tokens;
    // word2vec: trained words a second of its serial epoch on a generated corpus.
    let out = serial_run(&bin("word2vec")?, &["--words", "400000", "--epochs", "1"])?;
    let wps = field(&out, "words_per_second");
    let token_ns = 1e9 / wps.last().copied().unwrap_or(f64::NAN);
    // Summing differences: f32 adds over 64 MiB, best of three.
    let n = 16 << 20;
    let (a, mut b) = (vec![1.0f32; n], vec![2.0f32; n]);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for (x, y) in b.iter_mut().zip(&a) {
            *x += *y;
        }
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&b);
    }
    Ok(Costs {
        cell_ns,
        gibbs_ns,
        topics,
        token_ns,
        window: 5,
        negative: 5,
        sum_ns_per_byte: best * 1e9 / (n * 4) as f64,
    })
}

/// Prints a row.
#[allow(clippy::too_many_arguments)]
fn row(
    kind: &str,
    gbps: f64,
    p: usize,
    variant: &str,
    epoch: f64,
    serial: f64,
    mib: f64,
    note: &str,
) {
    println!(
        "| {kind} | {gbps} Gb/s | {p} | {variant} | {epoch:.4} | {:.1} | {:.1}% | {mib:.1} | {note} |",
        serial / epoch,
        100.0 * serial / (p as f64 * epoch)
    );
}

const MIB: f64 = 1048576.0;

fn dtw_rows(args: &Args, c: &Costs, link: Link, gbps: f64, p: usize) {
    let n = args.dtw_side;
    // The runtime's planner at 256 workers (a 256 x 1024-tile pipeline) needs more memory
    // than this machine has (BENCHMARKS.md, issue 28): beyond 64 workers only the formula
    // runs, over the tiles the planner would cut (uniform, 4 time tiles a worker).
    let planned = (p <= 64).then(|| dtw_wavefront(n, n, p));
    let cells: Vec<Vec<u64>> = match &planned {
        Some((_, _, cells)) => cells.clone(),
        None => {
            let tt = 4 * p;
            (0..p)
                .map(|s| {
                    let rows = (n * (s + 1) / p - n * s / p) as u64;
                    (0..tt)
                        .map(|t| rows * (n * (t + 1) / tt - n * t / tt) as u64)
                        .collect()
                })
                .collect()
        }
    };
    let serial = n as f64 * n as f64 * c.cell_ns * 1e-9;
    let time_tiles = cells[0].len();
    let cost = |t: usize, w: usize| -> u64 {
        t.checked_sub(w)
            .and_then(|tt| cells.get(w)?.get(tt))
            .map_or(0, |&k| (k as f64 * c.cell_ns * 1e-3).ceil() as u64)
    };
    // A tile's compute against the transfer of its boundary row to the next band.
    let tile_us = cells[0][0] as f64 * c.cell_ns * 1e-3;
    let boundary_us = (n / time_tiles) as f64 * 4.0 / link.bandwidth + link.latency as f64;
    let ceiling = time_tiles as f64 / (p + time_tiles - 1) as f64;
    // The pipeline as a formula, checked against the simulated network where it runs:
    // rank `s` starts its first tile after `s` tiles and boundaries, then runs its `T`
    // tiles back to back (each boundary arrives while the rank is still busy with the tile
    // before: ranks keep one tile and one transfer apart).
    let tile_s = tile_us * 1e-6;
    let piped = time_tiles as f64 * tile_s + (p - 1) as f64 * (tile_s + boundary_us * 1e-6);
    // From the driver: the other ranks' bands go out through its link first (the written
    // parts then stay where they were written).
    let table = (n + 1) as f64 * (n + 1) as f64 * 4.0;
    let shipped = table * (p - 1) as f64 / p as f64 / link.bandwidth * 1e-6;
    let note = |how: &str| {
        format!(
            "{how}; tiles {p}x{time_tiles}; pipeline ceiling {:.0}%; a tile computes \
             {tile_us:.0} µs, its boundary takes {boundary_us:.1} µs",
            100.0 * ceiling
        )
    };
    for (placing, epoch, bytes) in [
        ("from the driver", piped + shipped, table / p as f64),
        ("in place", piped, table / (n + 1) as f64 * 4.0),
    ] {
        row(
            "dtw",
            gbps,
            p,
            placing,
            epoch,
            serial,
            bytes / MIB,
            &note("formula"),
        );
    }
    let Some((sched, arrays, _)) = planned else {
        return;
    };
    for placing in ["from the driver", "in place"] {
        let plan_arrays: Vec<PlanArray> = if placing == "in place" {
            // Each rank holds its band of rows of `d` already.
            let width = (n + 1) as u64;
            let band = |s: usize| {
                let rows = (
                    n as u64 * s as u64 / p as u64,
                    n as u64 * (s as u64 + 1) / p as u64,
                );
                let mut r = Region::default();
                r.push(rows.0 * width, (rows.1 + u64::from(s == p - 1)) * width);
                r
            };
            let mut a = arrays.clone();
            a[0].away = (1..p).map(|s| (band(s), s)).collect();
            a
        } else {
            arrays.clone()
        };
        let plan = Itinerary::new(&sched, p, 1, &plan_arrays, false).expect("the wavefront ships");
        let mut sim = Sim::new(p, link, u64::MAX / 4, u64::MAX / 4);
        let r = sim.run_call(&sched, &plan, &cost, &[4, 4], u64::MAX / 4);
        let epoch = r.makespan as f64 / 1e6;
        row(
            "dtw",
            gbps,
            p,
            placing,
            epoch,
            serial,
            r.bytes as f64 / p as f64 / MIB,
            &note("simulated"),
        );
    }
}

fn lda_rows(args: &Args, c: &Costs, link: Link, gbps: f64, p: usize) {
    let k = c.topics;
    let (sched, arrays) = sgd_mf_2d(args.lda_docs, args.lda_vocab, k, p);
    let steps = sched.steps.len();
    let serial = args.lda_tokens as f64 * c.gibbs_ns * 1e-9;
    let block_us = (args.lda_tokens as f64 / (p * steps) as f64 * c.gibbs_ns * 1e-3).ceil() as u64;
    // The steady state: the tables where the previous sweep left them.
    let first = Itinerary::new(&sched, p, 1, &arrays, false).expect("2D ships");
    let plan = Itinerary::new(&sched, p, 1, &first.next_arrays(&arrays), false).expect("2D ships");
    let mut sim = Sim::new(p, link, u64::MAX / 4, u64::MAX / 4);
    let r = sim.run_call(&sched, &plan, &|_, _| block_us, &[4, 4], u64::MAX / 4);
    let ring = r.makespan as f64 / 1e6;
    // The buffer's topic totals, merged after every step: one exchange of K counts with
    // every rank (a round trip of latency; the bytes are few).
    let merge_s = steps as f64
        * (2.0 * link.latency as f64 + (p - 1) as f64 * (k * 4) as f64 / link.bandwidth)
        * 1e-6;
    // The values (4 bytes a token): through the driver's link out and back each sweep.
    let values_bytes = args.lda_tokens as f64 * 4.0 * (p - 1) as f64 / p as f64;
    let values_s = 2.0 * values_bytes / link.bandwidth * 1e-6;
    for (variant, epoch, bytes) in [
        (
            "values travel",
            ring + merge_s + values_s,
            r.bytes as f64 + 2.0 * values_bytes,
        ),
        ("values stay", ring + merge_s, r.bytes as f64),
    ] {
        let note = format!(
            "{steps} steps; a block computes {block_us} µs; the ring alone {ring:.3} s, \
             buffer merges {merge_s:.4} s, values {values_s:.3} s"
        );
        row(
            "lda",
            gbps,
            p,
            variant,
            epoch,
            serial,
            bytes / p as f64 / MIB,
            &note,
        );
    }
}

/// Expected distinct values among `draws` draws from the law `probs`.
fn distinct(probs: &[f64], draws: f64) -> f64 {
    probs.iter().map(|&q| 1.0 - (-(q * draws)).exp()).sum()
}

fn w2v_rows(args: &Args, c: &Costs, link: Link, gbps: f64, p: usize) {
    let v = args.w2v_vocab;
    // text8's words follow Zipf's law (s = 1); noise words its unigram^0.75.
    let zipf: Vec<f64> = (1..=v).map(|r| 1.0 / r as f64).collect();
    let z: f64 = zipf.iter().sum();
    let words: Vec<f64> = zipf.iter().map(|x| x / z).collect();
    let noise_raw: Vec<f64> = words.iter().map(|x| x.powf(0.75)).collect();
    let zn: f64 = noise_raw.iter().sum();
    let noise: Vec<f64> = noise_raw.iter().map(|x| x / zn).collect();
    for batch in [16_384.0, 65_536.0] {
        w2v_batch(args, c, link, gbps, p, batch, &words, &noise);
    }
}

/// word2vec's rows at `batch` tokens a worker between merges.
#[allow(clippy::too_many_arguments)]
fn w2v_batch(
    args: &Args,
    c: &Costs,
    link: Link,
    gbps: f64,
    p: usize,
    batch: f64,
    words: &[f64],
    noise: &[f64],
) {
    // Pairs a token: contexts within a reach drawn uniformly from 1..=window each side.
    let pairs = (c.window + 1) as f64;
    let rows = |replicas: f64| {
        let tokens = batch * replicas;
        let syn0 = distinct(words, tokens);
        let syn1 = distinct(words, tokens).max(distinct(noise, tokens * pairs * c.negative as f64));
        syn0 + syn1
    };
    let row_bytes = (args.w2v_dim * 4 + 4) as f64;
    let d = rows(1.0) * row_bytes;
    let u = rows(p as f64) * row_bytes;
    let compute = batch * c.token_ns * 1e-9;
    let rounds = (args.w2v_tokens as f64 / (p as f64 * batch)).ceil();
    let serial = args.w2v_tokens as f64 * c.token_ns * 1e-9;
    let bw = link.bandwidth * 1e6; // bytes a second
    let lat = link.latency as f64 * 1e-6;
    let pf = p as f64;
    let sum = |bytes: f64| bytes * c.sum_ns_per_byte * 1e-9;
    // Today: every rank sends its changed rows to every other and sums all of them.
    let all_to_all = (pf - 1.0) * d / bw + lat + sum(pf * d);
    // Reduce-scatter then all-gather around the ring: a rank sends (P-1)/P of its rows
    // and of the merged union, in P - 1 steps each.
    let ring = (pf - 1.0) / pf * (d + u) / bw + 2.0 * (pf - 1.0) * lat + sum(d);
    // A binomial tree: up with partial sums growing to the union, and down.
    let levels = pf.log2().ceil();
    let tree = 2.0 * levels * (lat + u / bw) + sum(levels * u);
    let collective = ring.min(tree);
    let which = if ring <= tree { "ring" } else { "tree" };
    // The runtime's reduce-scatter and all-gather (`array/buffer/collective.rs`): the
    // same bytes as the ring, sent to the P - 1 others at once, so a round trip a phase;
    // a rank merges its segment of the tables (every element of it) from P contributions.
    let table = 2.0 * (args.w2v_vocab * args.w2v_dim * 4) as f64;
    let direct = (pf - 1.0) / pf * (d + u) / bw + 2.0 * lat + sum(d.max(table / pf));
    let variants: &[(&str, f64)] = if batch > 16_384.0 {
        &[
            ("collective, batch 65536", collective),
            ("reduce-scatter, batch 65536", direct),
        ]
    } else {
        &[
            ("all-to-all", all_to_all),
            ("collective", collective),
            ("reduce-scatter", direct),
        ]
    };
    let overlapped: &[(&str, f64)] = if batch > 16_384.0 {
        &[("ssp(1), batch 65536", direct)]
    } else {
        &[("ssp(1)", direct)]
    };
    // `ssp(1)`: a worker's passes a round over both tables, at the measured rate of a sum
    // (two streams read, one written): its difference (copy and start read, difference
    // written) and its replica rebuilt (value and difference read, replica and start
    // written), seven streams.
    let passes = 7.0 / 3.0 * sum(table);
    for &(variant, merge) in variants.iter().chain(overlapped) {
        // Every token computed once; a merge after each round (the last one partial).
        // `ssp(1)` (`exec/ahead.rs`): a merge runs while the next round computes, so only
        // the part longer than a round waits, and the last merge; every round also pays
        // the worker's passes.
        let compute_epoch = args.w2v_tokens as f64 / pf * c.token_ns * 1e-9;
        let epoch = if variant.starts_with("ssp") {
            let round = compute + passes;
            compute_epoch + rounds * passes + (rounds - 1.0) * (merge - round).max(0.0) + merge
        } else {
            compute_epoch + rounds * merge
        };
        let note = format!(
            "{rounds:.0} rounds; a round computes {:.1} ms; a replica changes {:.1} MiB, the \
             union of {p} {:.1} MiB; merge {:.2} ms{}{}",
            compute * 1e3,
            d / MIB,
            u / MIB,
            merge * 1e3,
            if variant.starts_with("ssp") {
                format!("; a worker's passes {:.2} ms a round", passes * 1e3)
            } else {
                String::new()
            },
            if variant.starts_with("collective") {
                format!(" ({which})")
            } else {
                String::new()
            }
        );
        let sent = if variant == "all-to-all" {
            (pf - 1.0) * d
        } else if variant.starts_with("reduce-scatter")
            || variant.starts_with("ssp")
            || which == "ring"
        {
            (pf - 1.0) / pf * (d + u)
        } else {
            2.0 * u
        };
        row(
            "word2vec",
            gbps,
            p,
            variant,
            epoch,
            serial,
            rounds * sent / MIB,
            &note,
        );
    }
}
