//! SGD matrix factorization, the loop of docs/design.md, on MovieLens or generated data.
//!
//! ```text
//! cargo run --release --example sgd_mf                       # generated ml-100k-shaped data
//! cargo run --release --example sgd_mf -- --data ../shared/data/movielens-100k/ua.base \
//!     --test ../shared/data/movielens-100k/ua.test
//! cargo run --release --example sgd_mf -- --data ratings.csv  # 10% held out for testing
//! STRADS_SERIAL=1 cargo run --release --example sgd_mf       # the original serial loop
//! cargo run --release --example sgd_mf -- --adagrad --lr 0.1  # LIBMF's per-row rates
//! cargo run --release --example sgd_mf -- --save model.txt   # LIBMF's text model
//! ```
//!
//! Prints each epoch's train and test RMSE, then one line
//! `rmse_train=<f> rmse_test=<f> epochs=<n> seconds=<f> threads=<n> processes=<n>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use strads::prelude::*;

#[path = "common/adagrad.rs"]
mod adagrad;
#[path = "common/cli.rs"]
mod cli;
#[path = "common/fmt.rs"]
mod fmt;
#[path = "common/progress.rs"]
mod progress;
#[path = "common/save.rs"]
mod save;
use fmt::sig9;

/// The ratings' sum, where their parts are (LIBMF's `b` is their mean).
#[strads::parallel_for]
fn rating_sum(ratings: &SparseArray<f32, 2>) -> f64 {
    let mut sum: f64 = 0.0;
    for (_, &r) in ratings {
        sum += f64::from(r);
    }
    sum
}

/// One epoch of SGD over every rating: the serial loop, annotated.
#[strads::parallel_for]
fn sgd_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - reg * wk);
            hi[k] += lr * (err * wk - reg * hi[k]);
        }
    }
}

/// One epoch of SGD with a learning rate per row scaled by AdaGrad, LIBMF's update
/// (`common/adagrad.rs`): `gw[[u, 0]]` and `gw[[u, 1]]` are row `u`'s two sums (its first
/// `SLOW` factors and the rest); `fast` is false in the first epoch, when LIBMF updates the
/// first group only. The sums are indexed by the same keys as the rows, so the loop is as
/// parallel as `sgd_epoch` (2D, the sums travel with their rows).
#[strads::parallel_for]
#[allow(clippy::too_many_arguments)]
fn adagrad_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    gw: &mut DistArray<f32, 2>,
    gh: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
    fast: bool,
) {
    let rk: (f32, f32) = adagrad::group_scales(w.shape()[1]);
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let (gu, gi) = (gw.row_mut(u), gh.row_mut(i));
        adagrad::update_adagrad((wu, hi), (gu, gi), r, (lr, reg, rk), fast);
    }
}

/// The model's sum of squared errors on `data`. `sse` is a reduction: every worker adds up
/// its own block of ratings and the parts are summed in a fixed order, so evaluation runs in
/// parallel too and gives the same value on every run with the same thread count.
/// Multiplies every element of `a` by `s`.
#[strads::parallel_for]
fn scale_rows(a: &mut DistArray<f32, 2>, s: f32) {
    for u in 0..a.shape()[0] {
        for x in a.row_mut(u) {
            *x *= s;
        }
    }
}

/// Sets every element of `a` to `x`.
#[strads::parallel_for]
fn fill(a: &mut DistArray<f32, 2>, x: f32) {
    for u in 0..a.shape()[0] {
        for v in a.row_mut(u) {
            *v = x;
        }
    }
}

#[strads::parallel_for]
fn squared_error(data: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let mut sse: f64 = 0.0;
    for ([u, i], &r) in data {
        let e = (r - dot(w.row(u), h.row(i))) as f64;
        sse += e * e;
    }
    sse
}

/// Root mean squared error of the model on `data`.
fn rmse(data: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    (squared_error(data, w, h) / data.nnz().max(1) as f64).sqrt()
}

#[derive(Parser, Debug)]
#[command(about = "SGD matrix factorization with strads")]
struct Args {
    /// Ratings file: MovieLens `u.data`/`ua.base` (tab-separated, 1-based ids) or
    /// `ratings.csv` (with header). Without it, a Zipf-skewed low-rank set is generated.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Test ratings in the same format (e.g. `ua.test`); without it 10% of the data is held out.
    #[arg(long, requires = "data")]
    test: Option<PathBuf>,
    /// Generated data: number of ratings (train and test together).
    #[arg(long, default_value_t = 100_000, value_parser = cli::at_least_one)]
    ratings: usize,
    /// Generated data: number of users.
    #[arg(long, default_value_t = 943, value_parser = cli::dim)]
    users: usize,
    /// Generated data: number of items.
    #[arg(long, default_value_t = 1682, value_parser = cli::dim)]
    items: usize,
    /// Latent factors per user and item.
    #[arg(long, default_value_t = 32, value_parser = cli::at_least_one)]
    k: usize,
    /// Passes over the training ratings.
    #[arg(long, default_value_t = 20, value_parser = cli::at_least_one)]
    epochs: usize,
    /// Learning rate (with --adagrad, the rate before each row's scaling; 0.1 is LIBMF's).
    #[arg(long, default_value_t = 0.01, value_parser = cli::positive_f32)]
    lr: f32,
    /// Scale each row's learning rate by AdaGrad, as LIBMF does (`adagrad_epoch`).
    #[arg(long)]
    adagrad: bool,
    /// L2 regularisation.
    #[arg(long, default_value_t = 0.05, value_parser = cli::non_negative_f32)]
    reg: f32,
    /// Seed of the initial factors, the generated data and the holdout split.
    #[arg(long, default_value_t = 1, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
    /// Write the trained model to this file in LIBMF's text format (`mf_load_model` reads
    /// it; user and item ids are the 0-based rows).
    #[arg(long)]
    save: Option<PathBuf>,
}

/// A training run's errors: strads' own, and the program's (as text).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn load(args: &Args) -> Result<(SparseArray<f32, 2>, SparseArray<f32, 2>)> {
    let (train, test) = match (&args.data, &args.test) {
        (Some(train), Some(test)) => strads::load::ratings_pair(train, test)?,
        (Some(path), None) => {
            let all = strads::load::ratings(path)?;
            strads::load::split(&all, 0.1, args.seed)
        }
        (None, _) => {
            let all = strads::generate::try_low_rank_ratings(&strads::generate::LowRankConfig {
                users: args.users,
                items: args.items,
                ratings: args.ratings,
                seed: args.seed,
                ..Default::default()
            })?;
            strads::load::split(&all, 0.1, args.seed)
        }
    };
    if args.test.is_none() && (train.nnz() == 0 || test.nnz() == 0) {
        // Too few to hold 10% out: train on all of them, and test on them too.
        let all = if train.nnz() == 0 { test } else { train };
        eprintln!(
            "warning: {} ratings are too few to hold 10% out for testing: training on all of \
             them, and the test RMSE is the training RMSE (give more, or a --test file)",
            all.nnz()
        );
        return Ok((all.clone(), all));
    }
    Ok((train, test))
}

fn train(args: &Args) -> Result<()> {
    // A spinner on a terminal when reading or making the data takes over 2 s.
    let bar = progress::Bar::spinner("reading the data");
    let (train, test) = load(args)?;
    bar.finish();
    let [users, items] = train.shape();
    // The factors (twice: the random start and the scaled copy) and AdaGrad's sums (two a
    // row).
    let rows = users.checked_add(items);
    cli::check_memory(
        &format!(
            "the factors of {users} users and {items} items with k = {}",
            args.k
        ),
        rows.and_then(|r| args.k.checked_add(1)?.checked_mul(2)?.checked_mul(r)),
        4,
    )?;
    let source = match &args.data {
        Some(p) => p.display().to_string(),
        None => "generated".to_string(),
    };
    let threads = cli::threads_used();
    println!(
        "data={source} users={users} items={items} train={} test={} k={} lr={} reg={} threads={threads}{}",
        train.nnz(),
        test.nnz(),
        args.k,
        args.lr,
        args.reg,
        if args.adagrad { " adagrad" } else { "" }
    );
    // LIBMF's initialisation: uniform in [0, 1/sqrt(k)).
    let scale = 1.0 / (args.k as f32).sqrt();
    let init = |rows: usize, seed: u64| {
        // On a cluster, each rank draws and scales only the rows it holds.
        let mut a = DistArray::<f32, 2>::random([rows, args.k], seed);
        scale_rows(&mut a, scale);
        a
    };
    let (mut w, mut h) = (
        init(users, args.seed),
        init(items, args.seed.wrapping_add(1)),
    );
    // AdaGrad's squared-gradient sums, two per row (`adagrad_epoch`), start at 1, as
    // LIBMF's do; made only for AdaGrad, in place on a cluster (each rank its rows).
    let mut sums = args.adagrad.then(|| {
        let ones = |rows: usize| {
            let mut a = DistArray::<f32, 2>::zeros([rows, 2]);
            fill(&mut a, 1.0);
            a
        };
        (ones(users), ones(items))
    });
    let mut seconds = 0.0;
    let (mut rmse_train, mut rmse_test) = (f64::NAN, f64::NAN);
    for epoch in 1..=args.epochs {
        let t = Instant::now();
        if let Some((gw, gh)) = sums.as_mut() {
            // LIBMF's first epoch updates the first group of factors only.
            let fast = epoch > 1;
            adagrad_epoch(&train, &mut w, &mut h, gw, gh, args.lr, args.reg, fast);
        } else {
            sgd_epoch(&train, &mut w, &mut h, args.lr, args.reg);
        }
        let dt = t.elapsed().as_secs_f64();
        seconds += dt;
        rmse_train = rmse(&train, &w, &h);
        rmse_test = rmse(&test, &w, &h);
        for (what, value) in [
            ("the training RMSE", rmse_train),
            ("the test RMSE", rmse_test),
        ] {
            if !value.is_finite() {
                let advice = format!(
                    "lower --lr (it is {:?}) or --reg (it is {:?})",
                    args.lr, args.reg
                );
                return Err(cli::diverged(epoch, what, value, &advice).into());
            }
        }
        println!(
            "epoch {epoch:>3}  train_rmse={}  test_rmse={}  epoch_seconds={dt:.3}  seconds={seconds:.3}",
            sig9(rmse_train),
            sig9(rmse_test)
        );
    }
    if let Some(path) = &args.save {
        // LIBMF's `b`: what it predicts for an id it has no row for, the mean rating
        // (summed where the ratings are: on a cluster the driver does not hold them all).
        let mean = rating_sum(&train) / train.nnz().max(1) as f64;
        save::libmf(path, &w, &h, mean as f32)?;
    }
    let processes = cli::processes();
    println!(
        "rmse_train={} rmse_test={} epochs={} seconds={seconds:.3} threads={threads} processes={processes}",
        sig9(rmse_train),
        sig9(rmse_test),
        args.epochs
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, train)
}
