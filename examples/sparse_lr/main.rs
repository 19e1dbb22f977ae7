//! Sparse logistic regression by SGD on LIBSVM data (a9a) or a generated set of the same
//! shape. The weights are reached through feature ids read from the data
//! (`w[features[k] as usize]`), which no static analysis can prove disjoint: strads runs
//! the loop once in recording mode (reconnaissance), groups the samples that share no
//! feature, and runs the groups in parallel.
//!
//! ```text
//! cargo run --release --example sparse_lr                     # generated a9a-shaped data
//! cargo run --release --example sparse_lr -- --data ../shared/data/libsvm-a9a/a9a \
//!     --test ../shared/data/libsvm-a9a/a9a.t
//! STRADS_SERIAL=1 cargo run --release --example sparse_lr     # the original serial loop
//! STRADS_EXPLAIN=1 cargo run --release --example sparse_lr    # shows the plan
//! cargo run --release --example sparse_lr -- --sync bsp       # data-parallel replicas
//! ```
//!
//! Prints each epoch's train and test accuracy and log loss, then one line
//! `acc_train=<f> acc_test=<f> logloss_test=<f> epochs=<n> seconds=<f> threads=<n> processes=<n>`
//! (and ` sync=bsp` with `--sync bsp`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use strads::load::LibSvm;
use strads::prelude::*;

mod model;
use model::{evaluate, lr_epoch, lr_epoch_bsp};

#[path = "../common/cli.rs"]
mod cli;
#[path = "../common/fmt.rs"]
mod fmt;
#[path = "../common/progress.rs"]
mod progress;
use fmt::sig9;

/// A training run's errors: strads' own, and the program's (as text).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Accuracy and mean log loss of the model on `data`.
fn metrics(data: &LibSvm, w: &DistArray<f32, 1>) -> (f64, f64) {
    let n = data.samples();
    let (correct, loss) = evaluate(
        &data.labels,
        &data.offsets,
        &data.features,
        &data.values,
        w,
        n,
    );
    let n = n.max(1) as f64;
    (correct as f64 / n, loss / n)
}

#[derive(Parser, Debug)]
#[command(about = "Sparse logistic regression by SGD with strads")]
struct Args {
    /// Training file in LIBSVM format (`label index:value ...`, labels +1/-1 or 1/0).
    /// Without it, an a9a-shaped set is generated.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Test file in LIBSVM format (e.g. `a9a.t`); without it 20% of the data is held out.
    #[arg(long, requires = "data")]
    test: Option<PathBuf>,
    /// Generated data: training samples.
    #[arg(long, default_value_t = 32_561, value_parser = cli::at_least_one)]
    samples: usize,
    /// Generated data: test samples.
    #[arg(long, default_value_t = 16_281, value_parser = cli::at_least_one)]
    test_samples: usize,
    /// Generated data: features.
    #[arg(long, default_value_t = 123, value_parser = cli::dim)]
    features: usize,
    /// Generated data: active features per sample.
    #[arg(long, default_value_t = 14, value_parser = cli::at_least_one)]
    active: usize,
    /// Passes over the training samples.
    #[arg(long, default_value_t = 10, value_parser = cli::at_least_one)]
    epochs: usize,
    /// Learning rate of the first epoch; epoch `e` (from 0) uses `lr / (1 + e * decay)`.
    #[arg(long, default_value_t = 0.03, value_parser = cli::positive_f32)]
    lr: f32,
    /// Learning rate decay per epoch.
    #[arg(long, default_value_t = 0.5, value_parser = cli::non_negative_f32)]
    decay: f32,
    /// L2 regularisation of the weights a sample touches.
    #[arg(long, default_value_t = 1e-4, value_parser = cli::non_negative_f32)]
    reg: f32,
    /// Seed of the generated data and the holdout split.
    #[arg(long, default_value_t = 1, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
    /// `bsp`: train with the data-parallel loop (replicas of the weights averaged after
    /// every batch of 1024 samples per worker) instead of reconnaissance's conflict-free
    /// groups.
    #[arg(long, value_enum)]
    sync: Option<SyncMode>,
}

/// `--sync`: the data-parallel modes the example offers.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SyncMode {
    /// Bulk synchronous: replicas merge after every batch.
    Bsp,
}

/// Splits `data` into a training and a test set: every sample goes to the test set with
/// probability `test_fraction`, deterministically for `seed`.
fn holdout(data: &LibSvm, test_fraction: f64, seed: u64) -> (LibSvm, LibSvm) {
    // splitmix64 of (seed, sample): a fixed, well-mixed coin per sample.
    let coin = |s: u64| {
        let mut z = seed.wrapping_add(s.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let (test, train): (Vec<usize>, Vec<usize>) =
        (0..data.samples()).partition(|&s| coin(s as u64) < test_fraction);
    (subset(data, &train), subset(data, &test))
}

/// The given samples of `data`, in that order.
fn subset(data: &LibSvm, samples: &[usize]) -> LibSvm {
    let (mut labels, mut offsets, mut features, mut values) =
        (Vec::new(), vec![0u32], Vec::new(), Vec::new());
    for &s in samples {
        let (y, f, v) = data.sample(s);
        labels.push(y);
        features.extend_from_slice(f);
        values.extend_from_slice(v);
        offsets.push(features.len() as u32);
    }
    LibSvm::from_parts(labels, offsets, features, values, data.n_features)
        .expect("samples of a data set fit together")
}

fn load(args: &Args) -> Result<(LibSvm, LibSvm)> {
    if args.data.is_none() {
        // A generated set holds one entry per active feature and sample, in u32 offsets.
        let per_sample = args.active.min(args.features) as u64;
        let max = u64::from(u32::MAX) / per_sample.max(1);
        for (flag, n) in [
            ("--samples", args.samples),
            ("--test-samples", args.test_samples),
        ] {
            if n as u64 > max {
                return Err(format!(
                    "{flag} {n} is too many: at most {max} samples with {per_sample} active \
                     features each (a set holds at most {} entries)",
                    u32::MAX
                )
                .into());
            }
        }
    }
    let (train, test) = match (&args.data, &args.test) {
        (Some(train), Some(test)) => strads::load::libsvm_pair(train, test)?,
        (Some(path), None) => holdout(&strads::load::libsvm(path)?, 0.2, args.seed),
        (None, _) => strads::generate::try_libsvm_like(&strads::generate::LibSvmConfig {
            train: args.samples,
            test: args.test_samples,
            features: args.features,
            active: args.active,
            seed: args.seed,
            ..Default::default()
        })?,
    };
    if args.test.is_none() && (train.samples() == 0 || test.samples() == 0) {
        // Too few to hold 20% out: train on all of them, and test on them too.
        let all = if train.samples() == 0 { test } else { train };
        eprintln!(
            "warning: {} samples are too few to hold 20% out for testing: training on all of \
             them, and the test figures are the training set's (give more, or a --test file)",
            all.samples()
        );
        return Ok((all.clone(), all));
    }
    Ok((train, test))
}

fn train(args: &Args) -> Result<()> {
    // A spinner on a terminal when reading or making the data takes over 2 s.
    let bar = progress::Bar::spinner("reading the data");
    let (train, test) = load(args)?;
    // On a cluster the loaders keep each rank's samples where it read or drew them; this
    // program's loops read the whole sets on the driver (the epoch's reconnaissance
    // surveys every sample there, and `features[k]` at `k` read from `offsets` is read
    // whole), so they come home once here rather than in the first epoch.
    train.gather();
    test.gather();
    bar.finish();
    cli::check_memory(
        &format!("the weights of {} features", train.n_features),
        Some(train.n_features),
        4,
    )?;
    let source = match &args.data {
        Some(p) => p.display().to_string(),
        None => "generated".to_string(),
    };
    let threads = cli::threads_used();
    println!(
        "data={source} train={} test={} features={} nnz={} positives={:.3} lr={} decay={} reg={} threads={threads}",
        train.samples(),
        test.samples(),
        train.n_features,
        train.nnz(),
        train.positives() as f64 / train.samples().max(1) as f64,
        args.lr,
        args.decay,
        args.reg
    );
    let mut w = DistArray::<f32, 1>::zeros([train.n_features]);
    let mut seconds = 0.0;
    let (mut acc_train, mut acc_test, mut loss_test) = (f64::NAN, f64::NAN, f64::NAN);
    for epoch in 0..args.epochs {
        let lr = args.lr / (1.0 + epoch as f32 * args.decay);
        let t = Instant::now();
        let epoch_loop = match args.sync {
            None => lr_epoch,
            Some(SyncMode::Bsp) => lr_epoch_bsp,
        };
        epoch_loop(
            &train.labels,
            &train.offsets,
            &train.features,
            &train.values,
            &mut w,
            train.samples(),
            lr,
            args.reg,
        );
        let dt = t.elapsed().as_secs_f64();
        seconds += dt;
        let (acc, loss_train) = metrics(&train, &w);
        acc_train = acc;
        (acc_test, loss_test) = metrics(&test, &w);
        for (what, value) in [
            ("the training log loss", loss_train),
            ("the test log loss", loss_test),
        ] {
            if !value.is_finite() {
                let advice = format!(
                    "lower --lr (it is {:?}) or --reg (it is {:?})",
                    args.lr, args.reg
                );
                return Err(cli::diverged(epoch + 1, what, value, &advice).into());
            }
        }
        println!(
            "epoch {:>3}  lr={}  train_acc={acc_train:.6}  train_logloss={}  test_acc={acc_test:.6}  \
             test_logloss={}  epoch_seconds={dt:.4}  seconds={seconds:.4}",
            epoch + 1,
            sig9(f64::from(lr)),
            sig9(loss_train),
            sig9(loss_test)
        );
    }
    let processes = cli::processes();
    println!(
        "acc_train={acc_train:.6} acc_test={acc_test:.6} logloss_test={} epochs={} seconds={seconds:.4} \
         threads={threads} processes={processes}{}",
        sig9(loss_test),
        args.epochs,
        if args.sync.is_some() { " sync=bsp" } else { "" }
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, train)
}
