//! Skew (issue 4): how the partitions of a sparse iteration space balance the SGD-MF loop
//! of `examples/sgd_mf.rs` on skewed data, and what `strads::permute::randomize` adds.
//!
//! For each data set, at the given thread count (default 2):
//!
//! - (a) equal-range partitions (`STRADS_PARTITION=uniform`; measured in a child process,
//!   since the setting is read once per process), also (a+r) with randomized ids;
//! - (b) histogram-balanced partitions (the default);
//! - (c) histogram-balanced partitions over randomized ids (`randomize` on users and
//!   items, the factor rows moved with `permute_rows`).
//!
//! From the order the workers ran one recorded epoch (`strads::testing::record`): the
//! largest worker's iterations over the mean (`load`), the largest block of the worst step
//! over that step's mean (`step`), and the sum over steps of the step's largest block over
//! the ideal `nnz / P` (`crit`: the epoch's critical path in iterations when a step waits
//! for its largest block; 1.0 is perfect balance). `crit_t` is the same in time: each
//! block of the recorded order timed alone with a hand-written serial loop, since blocks
//! of equal size need not cost the same (popular rows stay in cache, the long tail does
//! not). Then the median epoch time; the systems of one process run interleaved epoch by
//! epoch. `rmse` is the training RMSE after the last epoch (in the original ids), a sanity
//! check: the systems run the same iterations in different orders, so the models differ
//! a little.
//!
//! Data sets: ml-latest-small (skipped with a note when absent), and generated Zipf-skewed
//! ratings relabelled so that the most popular users and items have the smallest ids
//! (`strads::permute::sort_by_count`): the case randomize exists for.
//!
//! ```text
//! cargo bench --bench permute
//! cargo bench --bench permute -- --ratings 2000000 --users 40000 --items 8000 --rounds 5
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use clap::Parser;
use strads::permute::{permute_rows, randomize, sort_by_count, unpermute_rows};
use strads::prelude::*;
use strads::testing::median;

/// The timed loops, shared by the benches.
#[path = "common/sgd.rs"]
#[allow(dead_code)] // this bench has its own baseline
mod sgd;
use sgd::{init_factors, sgd_epoch};

const LR: f32 = 0.01;
const REG: f32 = 0.05;

#[derive(Parser, Debug, Clone)]
struct Args {
    /// MovieLens ratings file (skipped with a note when absent).
    #[arg(
        long,
        default_value = "../shared/data/movielens-latest-small/ratings.csv"
    )]
    data: PathBuf,
    /// Generated ratings.
    #[arg(long, default_value_t = 10_500_000)]
    ratings: usize,
    /// Generated users.
    #[arg(long, default_value_t = 200_000)]
    users: usize,
    /// Generated items.
    #[arg(long, default_value_t = 40_000)]
    items: usize,
    /// Zipf exponent of the generated user and item popularity.
    #[arg(long, default_value_t = 1.0)]
    zipf: f64,
    /// Latent factors.
    #[arg(long, default_value_t = 32)]
    k: usize,
    /// Timed epochs per system on the generated set (after one warm-up epoch each).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Timed epochs per system on the MovieLens set.
    #[arg(long, default_value_t = 41)]
    ml_rounds: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Print every block of the recorded epoch: its size, distinct users and items, and
    /// its time alone on one thread.
    #[arg(long)]
    blocks: bool,
    /// Seed of the randomize permutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Internal: measure the equal-range rows of this data set and print them for the
    /// parent process (run with `STRADS_PARTITION=uniform`).
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One measured configuration.
#[derive(Debug, Clone)]
struct Row {
    system: String,
    load: f64,
    step: f64,
    crit: f64,
    crit_t: f64,
    first_s: f64,
    epoch_s: f64,
    rmse: f64,
}

impl Row {
    fn to_line(&self) -> String {
        format!(
            "ROW\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.system,
            self.load,
            self.step,
            self.crit,
            self.crit_t,
            self.first_s,
            self.epoch_s,
            self.rmse
        )
    }

    fn from_line(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.strip_prefix("ROW\t")?.split('\t').collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok());
        Some(Row {
            system: f.first()?.to_string(),
            load: num(1)?,
            step: num(2)?,
            crit: num(3)?,
            crit_t: num(4)?,
            first_s: num(5)?,
            epoch_s: num(6)?,
            rmse: num(7)?,
        })
    }
}

/// A configuration being measured: the ratings it trains on and its model, in its ids.
struct System {
    name: String,
    ratings: SparseArray<f32, 2>,
    w: DistArray<f32, 2>,
    h: DistArray<f32, 2>,
    /// Permutations of user and item ids, when randomized.
    perms: Option<(Vec<u32>, Vec<u32>)>,
    times: Vec<f64>,
    first_s: f64,
    balance: Balance,
}

impl System {
    fn new(
        name: &str,
        ratings: &SparseArray<f32, 2>,
        w0: &DistArray<f32, 2>,
        h0: &DistArray<f32, 2>,
        seed: Option<u64>,
    ) -> Self {
        match seed {
            None => System {
                name: name.to_string(),
                ratings: ratings.clone(),
                w: w0.clone(),
                h: h0.clone(),
                perms: None,
                times: Vec::new(),
                first_s: 0.0,
                balance: Balance::default(),
            },
            Some(seed) => {
                let r = randomize(ratings, &[0, 1], seed);
                let pu = r.perms[0].clone().expect("users randomized");
                let pi = r.perms[1].clone().expect("items randomized");
                System {
                    name: name.to_string(),
                    w: permute_rows(w0, &pu),
                    h: permute_rows(h0, &pi),
                    ratings: r.array,
                    perms: Some((pu, pi)),
                    times: Vec::new(),
                    first_s: 0.0,
                    balance: Balance::default(),
                }
            }
        }
    }

    fn epoch(&mut self, threads: usize) -> f64 {
        let t = Instant::now();
        strads::with_threads(threads, || {
            sgd_epoch(&self.ratings, &mut self.w, &mut self.h, LR, REG)
        });
        t.elapsed().as_secs_f64()
    }

    /// The balance of one recorded epoch, run on copies of the model.
    fn record_balance(&mut self, threads: usize, show_blocks: bool) {
        let (mut w, mut h) = (self.w.clone(), self.h.clone());
        let ((), trace) = strads::testing::record(|| {
            strads::with_threads(threads, || {
                sgd_epoch(&self.ratings, &mut w, &mut h, LR, REG)
            })
        });
        let steps = &trace.runs[0].steps;
        self.balance = balance(steps, self.ratings.nnz());
        let times = block_times(steps, &self.ratings, &self.w, &self.h);
        self.balance.crit_t = time_crit(&times);
        if show_blocks {
            for (t, step) in steps.iter().enumerate() {
                for (w, ids) in step.iter().enumerate() {
                    let distinct = |d: usize| {
                        let mut v: Vec<usize> =
                            ids.iter().map(|&n| self.ratings.entry(n).0[d]).collect();
                        v.sort_unstable();
                        v.dedup();
                        v.len()
                    };
                    eprintln!(
                        "{}: step {t} worker {w}: {} ratings, {} users, {} items, {:.2} ms",
                        self.name,
                        ids.len(),
                        distinct(0),
                        distinct(1),
                        times[t][w] * 1e3
                    );
                }
            }
        }
    }

    /// The model in the original ids.
    fn model(&self) -> (DistArray<f32, 2>, DistArray<f32, 2>) {
        match &self.perms {
            None => (self.w.clone(), self.h.clone()),
            Some((pu, pi)) => (unpermute_rows(&self.w, pu), unpermute_rows(&self.h, pi)),
        }
    }
}

/// How evenly a recorded epoch was spread over the workers.
#[derive(Debug, Clone, Copy, Default)]
struct Balance {
    /// Largest worker's iterations / mean.
    load: f64,
    /// Largest block / mean block, in the worst step.
    step: f64,
    /// Sum over steps of the largest block / (nnz / P).
    crit: f64,
    /// `crit` in time: blocks timed one by one with a hand-written serial loop.
    crit_t: f64,
}

/// The balance in iterations of a recorded run: `steps[t][w]` are the ids worker `w` ran
/// at step `t`.
fn balance(steps: &[Vec<Vec<usize>>], nnz: usize) -> Balance {
    let p = steps.first().map_or(1, |s| s.len()).max(1);
    let mut per_worker = vec![0usize; p];
    let (mut worst_step, mut crit) = (0.0f64, 0usize);
    for step in steps {
        let sizes: Vec<usize> = step.iter().map(|b| b.len()).collect();
        for (w, &n) in sizes.iter().enumerate() {
            per_worker[w] += n;
        }
        let max = sizes.iter().copied().max().unwrap_or(0);
        let total: usize = sizes.iter().sum();
        if total > 0 {
            worst_step = worst_step.max(max as f64 * sizes.len() as f64 / total as f64);
        }
        crit += max;
    }
    let mean = nnz as f64 / p as f64;
    Balance {
        load: *per_worker.iter().max().unwrap_or(&0) as f64 / mean,
        step: worst_step,
        crit: crit as f64 / mean,
        crit_t: 0.0,
    }
}

/// Every block of the recorded run timed alone, one after the other in step order on one
/// thread (best of 3 passes): `[step][worker]` seconds.
fn block_times(
    steps: &[Vec<Vec<usize>>],
    ratings: &SparseArray<f32, 2>,
    w: &DistArray<f32, 2>,
    h: &DistArray<f32, 2>,
) -> Vec<Vec<f64>> {
    let k = w.shape()[1];
    let blocks: Vec<Vec<Vec<(u32, u32, f32)>>> = steps
        .iter()
        .map(|step| {
            step.iter()
                .map(|ids| {
                    ids.iter()
                        .map(|&n| {
                            let ([u, i], &r) = ratings.entry(n);
                            (u as u32, i as u32, r)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let (mut ws, mut hs) = (w.as_slice().to_vec(), h.as_slice().to_vec());
    let mut best: Vec<Vec<f64>> = blocks
        .iter()
        .map(|s| vec![f64::INFINITY; s.len()])
        .collect();
    for _ in 0..3 {
        for (t, step) in blocks.iter().enumerate() {
            for (b, block) in step.iter().enumerate() {
                let start = Instant::now();
                sgd::serial_epoch(block, &mut ws, &mut hs, k, LR, REG);
                best[t][b] = best[t][b].min(start.elapsed().as_secs_f64());
            }
        }
    }
    best
}

/// `crit` in time: the sum over steps of the slowest block over the mean time per worker.
/// Tells apart blocks of equal size whose rows fit the caches differently.
fn time_crit(times: &[Vec<f64>]) -> f64 {
    let p = times.first().map_or(1, |s| s.len()).max(1) as f64;
    let total: f64 = times.iter().flatten().sum();
    let crit: f64 = times
        .iter()
        .map(|s| s.iter().copied().fold(0.0, f64::max))
        .sum();
    crit / (total / p)
}

fn rmse(data: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let sum: f64 = data
        .iter()
        .map(|([u, i], &r)| ((r - dot(w.row(u), h.row(i))) as f64).powi(2))
        .sum();
    (sum / data.nnz().max(1) as f64).sqrt()
}

/// Measures the systems in this process, interleaved epoch by epoch.
fn measure(
    ratings: &SparseArray<f32, 2>,
    configs: &[(&str, bool)],
    args: &Args,
    rounds: usize,
) -> Vec<Row> {
    let [users, items] = ratings.shape();
    let k = args.k;
    let (w0, h0) = (init_factors(users, k, 1), init_factors(items, k, 2));
    let mut systems: Vec<System> = configs
        .iter()
        .map(|&(name, randomized)| {
            System::new(name, ratings, &w0, &h0, randomized.then_some(args.seed))
        })
        .collect();
    // First epoch: planning (histograms) and bucketing included.
    for s in &mut systems {
        s.first_s = s.epoch(args.threads);
        s.record_balance(args.threads, args.blocks);
    }
    for _ in 0..rounds {
        for s in &mut systems {
            let t = s.epoch(args.threads);
            s.times.push(t);
        }
    }
    systems
        .iter_mut()
        .map(|s| {
            let (w, h) = s.model();
            Row {
                system: s.name.clone(),
                load: s.balance.load,
                step: s.balance.step,
                crit: s.balance.crit,
                crit_t: s.balance.crit_t,
                first_s: s.first_s,
                epoch_s: median(&mut s.times),
                rmse: rmse(ratings, &w, &h),
            }
        })
        .collect()
}

/// The data set `name` (`ml` or `zipf`), or `None` with a note when it is absent.
fn data_set(name: &str, args: &Args) -> strads::Result<Option<(String, SparseArray<f32, 2>)>> {
    match name {
        "ml" => {
            if !args.data.exists() {
                return Ok(None);
            }
            let r = strads::load::ratings(&args.data)?;
            Ok(Some((args.data.display().to_string(), r)))
        }
        _ => {
            let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
                users: args.users,
                items: args.items,
                ratings: args.ratings,
                zipf_exponent: args.zipf,
                ..Default::default()
            });
            let sorted = sort_by_count(&r, &[0, 1]).array;
            Ok(Some((
                format!("generated Zipf({}), popular ids smallest", args.zipf),
                sorted,
            )))
        }
    }
}

fn rounds_for(name: &str, args: &Args) -> usize {
    if name == "ml" {
        args.ml_rounds
    } else {
        args.rounds
    }
}

const UNIFORM: (&str, bool) = ("(a) equal ranges", false);
const UNIFORM_RANDOMIZED: (&str, bool) = ("(a+r) equal ranges + randomize", true);
const BALANCED: (&str, bool) = ("(b) histogram", false);
const BALANCED_RANDOMIZED: (&str, bool) = ("(c) histogram + randomize", true);

fn child(name: &str, args: &Args) -> strads::Result<()> {
    let (_, ratings) = data_set(name, args)?.expect("the parent checked the data set exists");
    for row in measure(
        &ratings,
        &[UNIFORM, UNIFORM_RANDOMIZED],
        args,
        rounds_for(name, args),
    ) {
        println!("{}", row.to_line());
    }
    Ok(())
}

/// Runs this binary again with `STRADS_PARTITION=uniform` for data set `name`.
fn uniform_rows(name: &str) -> Vec<Row> {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let out = Command::new(exe)
        .env("STRADS_PARTITION", "uniform")
        .args(std::env::args_os().skip(1))
        .args(["--child", name])
        .output()
        .expect("re-running the bench binary");
    if !out.status.success() {
        panic!(
            "the equal-range child process failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(Row::from_line)
        .collect()
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    if let Some(name) = &args.child {
        return child(name, &args);
    }
    if let Err(e) = strads::config::check() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let partition = strads::config::get().partition;
    if partition != strads::config::Partitioning::Balanced {
        eprintln!(
            "error: run without STRADS_PARTITION (it is {partition:?}); the bench sets it for \
             the equal-range child process"
        );
        std::process::exit(2);
    }
    println!(
        "SGD-MF, k = {}, lr {LR}, L2 {REG}, {} threads; randomize seed {}",
        args.k, args.threads, args.seed
    );
    println!(
        "\n{:<32} {:>7} {:>7} {:>7} {:>7} {:>10} {:>10} {:>10} {:>8}",
        "system", "load", "step", "crit", "crit_t", "first_s", "epoch_s", "Mupd/s", "rmse"
    );
    for name in ["ml", "zipf"] {
        let t = Instant::now();
        let Some((source, ratings)) = data_set(name, &args)? else {
            println!("-- {}: absent, skipped", args.data.display());
            continue;
        };
        let [users, items] = ratings.shape();
        println!(
            "-- {source}: {} ratings, {users} users x {items} items (built in {:.1}s), {} epochs",
            ratings.nnz(),
            t.elapsed().as_secs_f64(),
            rounds_for(name, &args)
        );
        let mut rows = uniform_rows(name);
        rows.extend(measure(
            &ratings,
            &[BALANCED, BALANCED_RANDOMIZED],
            &args,
            rounds_for(name, &args),
        ));
        for r in &rows {
            println!(
                "{:<32} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>10.5} {:>10.5} {:>10.1} {:>8.4}",
                r.system,
                r.load,
                r.step,
                r.crit,
                r.crit_t,
                r.first_s,
                r.epoch_s,
                ratings.nnz() as f64 / r.epoch_s / 1e6,
                r.rmse
            );
        }
    }
    println!(
        "\nload: largest worker's iterations / mean; step: largest block / mean block of the \
         worst step; crit: sum over steps of the largest block / (nnz / threads); crit_t: \
         the same in time, each block timed alone on one thread. epoch_s: \
         median of the timed epochs (systems of one process interleaved; (a) rows run in a \
         child process with STRADS_PARTITION=uniform); first_s: first epoch, planning and \
         bucketing included. rmse: training RMSE after all epochs, original ids."
    );
    Ok(())
}
