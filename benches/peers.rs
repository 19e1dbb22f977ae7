//! SGD matrix factorization against its peers, in one run on the same data: the
//! hand-written serial loop, a hand-written Hogwild loop (lock-free, relaxed atomics),
//! strads (the annotated loop of `examples/sgd_mf.rs`) and LIBMF (the C++ reference for
//! shared-memory SGD-MF, built by `scripts/libmf/build.sh` and run as a child process).
//!
//! ```text
//! cargo bench --bench peers                                # every data set found
//! cargo bench --bench peers -- --data ml100k --epochs 20
//! cargo bench --bench peers -- --data generated --ratings 11200000
//! cargo bench --bench peers -- --no-libmf                  # Rust systems only
//! cargo bench --bench peers -- --rule adagrad --lr 0.1     # LIBMF's update everywhere
//! ```
//!
//! The systems run interleaved epoch by epoch: epoch `e` of every system, then epoch
//! `e + 1` of every system, so the machine's noise falls on all of them alike. LIBMF runs
//! all its epochs inside one library call; its driver (`scripts/libmf/driver.cpp`) pauses
//! it between epochs, timing each epoch inside the child, so it is interleaved as well.
//! All systems start from factors drawn uniform in [0, 1/sqrt(k)) (LIBMF draws its own,
//! the same way) and use the same k, epochs, learning rate and L2 regularisation. LIBMF
//! always scales its learning rate per row with AdaGrad (it has no switch for plain SGD),
//! so it runs twice per thread count: at the same learning rate as the others and at its
//! own default, 0.1 (`--libmf-eta`); `--rule adagrad` gives every Rust system LIBMF's
//! AdaGrad update too. Test ratings whose user or item has no training ratings are
//! predicted by the training mean for every system, as LIBMF's `mf_predict` does.
//! BENCHMARKS.md says what else differs.
//!
//! Hogwild runs on a rayon pool of its own (rayon is a dev-dependency of the `strads`
//! package for this), one contiguous share of the ratings per thread, as a `par_chunks`
//! would make.
//!
//! Prints one table per data set (the final epoch's test RMSE, the median time per epoch
//! over epochs 2.., updates per second), the issue's targets with the measured ratios,
//! writes every epoch's numbers to `target/peers/<data>.csv` and plots test RMSE against
//! epoch and time (plotters, SVG) there or in `--plots DIR` (`docs/peers` for the
//! committed ones).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use clap::Parser;
use rayon::prelude::*;
use strads::prelude::*;

#[path = "../examples/common/fmt.rs"]
mod fmt;
/// The timed loops, shared by the benches.
#[path = "common/sgd.rs"]
mod sgd;
use fmt::sig9;
use sgd::{
    adagrad_epoch, group_scales, init_factors, serial_adagrad_epoch, serial_epoch, sgd_epoch,
    update, update_adagrad,
};

/// A rating as the hand-written loops store it: user, item, value.
type Rating = (u32, u32, f32);

/// The squared-gradient sums of AdaGrad's per-row learning rates, users' and items' (two a
/// row, `[rows, 2]` flat), as Hogwild shares them; whether the epoch updates both groups of
/// factors (LIBMF's first epoch updates the first only); the groups' `group_scales`.
type Sums<'a> = Option<((&'a [AtomicU32], &'a [AtomicU32]), bool, (f32, f32))>;

/// Which update every system runs.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// Plain SGD, one learning rate (the loop of `examples/sgd_mf.rs`).
    Sgd,
    /// SGD with learning rates per row scaled by AdaGrad, LIBMF's own update (two groups
    /// of factors with a sum each, the first epoch on the first group alone;
    /// `examples/sgd_mf.rs --adagrad`): LIBMF then runs the same algorithm.
    Adagrad,
}

/// Largest k the Hogwild loop's stack buffers hold.
const MAX_K: usize = 256;

/// Hogwild (Niu et al. 2011) over one thread's share of the ratings: factors live in
/// `AtomicU32`s holding `f32` bits, read and written with relaxed loads and stores, so
/// threads may race on a row (lost updates are what Hogwild accepts) without undefined
/// behaviour. Each update copies the two rows into local buffers, runs the serial loop's
/// arithmetic on them (the same `dot`, the same expressions) and stores them back, so at
/// one thread it computes exactly what `serial_epoch` computes. k = 32 (the benchmark's)
/// gets a copy of the loop with k known at compile time: atomics are never vectorised,
/// so unrolled scalar loads and stores are the best a safe Hogwild can do.
fn hogwild_part(
    ratings: &[Rating],
    (w, h): (&[AtomicU32], &[AtomicU32]),
    g: Sums<'_>,
    k: usize,
    lr: f32,
    reg: f32,
) {
    match k {
        32 => hogwild_fixed::<32>(ratings, (w, h), g, lr, reg),
        _ => hogwild_any(ratings, (w, h), g, k, lr, reg),
    }
}

/// One rating's update of the rows copied out of the atomics: plain SGD, or AdaGrad with
/// the rows' squared-gradient sums loaded and stored back the same relaxed way.
#[inline(always)]
fn hogwild_update(
    (wu, hi): (&mut [f32], &mut [f32]),
    (u, i, r): (usize, usize, f32),
    g: Sums<'_>,
    lr: f32,
    reg: f32,
) {
    match g {
        None => {
            let err = r - dot(wu, hi);
            update(wu, hi, err, lr, reg);
        }
        Some(((gw, gh), fast, rk)) => {
            let (gwu, ghi) = (&gw[2 * u..2 * u + 2], &gh[2 * i..2 * i + 2]);
            let load =
                |a: &[AtomicU32]| [0, 1].map(|j| f32::from_bits(a[j].load(Ordering::Relaxed)));
            let (mut gu, mut gi) = (load(gwu), load(ghi));
            update_adagrad((wu, hi), (&mut gu, &mut gi), r, (lr, reg, rk), fast);
            for (a, x) in gwu.iter().zip(gu).chain(ghi.iter().zip(gi)) {
                a.store(x.to_bits(), Ordering::Relaxed);
            }
        }
    }
}

fn hogwild_fixed<const K: usize>(
    ratings: &[Rating],
    (w, h): (&[AtomicU32], &[AtomicU32]),
    g: Sums<'_>,
    lr: f32,
    reg: f32,
) {
    let (mut wu, mut hi) = ([0.0f32; K], [0.0f32; K]);
    for &(u, i, r) in ratings {
        let (u, i) = (u as usize, i as usize);
        let wa: &[AtomicU32; K] = w[u * K..(u + 1) * K].try_into().expect("row of K");
        let ha: &[AtomicU32; K] = h[i * K..(i + 1) * K].try_into().expect("row of K");
        for j in 0..K {
            wu[j] = f32::from_bits(wa[j].load(Ordering::Relaxed));
            hi[j] = f32::from_bits(ha[j].load(Ordering::Relaxed));
        }
        hogwild_update((&mut wu, &mut hi), (u, i, r), g, lr, reg);
        for j in 0..K {
            wa[j].store(wu[j].to_bits(), Ordering::Relaxed);
            ha[j].store(hi[j].to_bits(), Ordering::Relaxed);
        }
    }
}

fn hogwild_any(
    ratings: &[Rating],
    (w, h): (&[AtomicU32], &[AtomicU32]),
    g: Sums<'_>,
    k: usize,
    lr: f32,
    reg: f32,
) {
    let (mut wb, mut hb) = ([0.0f32; MAX_K], [0.0f32; MAX_K]);
    let (wu, hi) = (&mut wb[..k], &mut hb[..k]);
    for &(u, i, r) in ratings {
        let (u, i) = (u as usize, i as usize);
        let wa = &w[u * k..(u + 1) * k];
        let ha = &h[i * k..(i + 1) * k];
        for ((x, a), (y, b)) in wu.iter_mut().zip(wa).zip(hi.iter_mut().zip(ha)) {
            *x = f32::from_bits(a.load(Ordering::Relaxed));
            *y = f32::from_bits(b.load(Ordering::Relaxed));
        }
        hogwild_update((wu, hi), (u, i, r), g, lr, reg);
        for ((x, a), (y, b)) in wu.iter().zip(wa).zip(hi.iter().zip(ha)) {
            a.store(x.to_bits(), Ordering::Relaxed);
            b.store(y.to_bits(), Ordering::Relaxed);
        }
    }
}

/// Hogwild on a rayon pool of its own: the ratings cut into one contiguous share per
/// thread (in file order, as the serial loop reads them), each share a rayon task, what a
/// `par_chunks` over the ratings does; the pool lives for the whole data set, so an epoch
/// pays a wake-up, not a thread start.
struct HogwildPool<'a> {
    threads: usize,
    pool: rayon::ThreadPool,
    shares: Vec<&'a [Rating]>,
    w: &'a [AtomicU32],
    h: &'a [AtomicU32],
    g: Option<(&'a [AtomicU32], &'a [AtomicU32])>,
}

impl<'a> HogwildPool<'a> {
    fn new(
        ratings: &'a [Rating],
        (w, h): (&'a [AtomicU32], &'a [AtomicU32]),
        g: Option<(&'a [AtomicU32], &'a [AtomicU32])>,
        threads: usize,
    ) -> Self {
        let share = ratings.len().div_ceil(threads.max(1)).max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("hogwild-{i}"))
            .build()
            .expect("Hogwild's rayon pool");
        HogwildPool {
            threads,
            pool,
            shares: ratings.chunks(share).collect(),
            w,
            h,
            g,
        }
    }

    /// One epoch; `fast`: AdaGrad updates both groups of factors (see [`Sums`]).
    fn epoch(&self, k: usize, lr: f32, reg: f32, fast: bool) {
        let (w, h) = (self.w, self.h);
        let g = self.g.map(|g| (g, fast, group_scales(k)));
        self.pool.install(|| {
            self.shares
                .par_iter()
                .for_each(|part| hogwild_part(part, (w, h), g, k, lr, reg));
        });
    }
}

/// The test ratings, scored the way LIBMF scores them (`mf_predict`): a rating whose user
/// and item both have training ratings is predicted by the model; one whose user or item
/// has none (a row no system ever updates: still its initial values in the Rust systems,
/// NaN in LIBMF's) by the training ratings' mean, LIBMF's `model->b`. The second kind's
/// squared errors are the same for every system and epoch, so they are summed once.
struct TestSet {
    known: Vec<Rating>,
    cold: usize,
    cold_sse: f64,
}

impl TestSet {
    fn new(test: &[Rating], train: &[Rating], [users, items]: [usize; 2]) -> Self {
        let (mut seen_u, mut seen_i) = (vec![false; users], vec![false; items]);
        let mut sum = 0.0f64;
        for &(u, i, r) in train {
            seen_u[u as usize] = true;
            seen_i[i as usize] = true;
            sum += r as f64;
        }
        let mean = (sum / train.len().max(1) as f64) as f32;
        let (known, cold): (Vec<Rating>, Vec<Rating>) = test
            .iter()
            .partition(|&&(u, i, _)| seen_u[u as usize] && seen_i[i as usize]);
        let cold_sse = cold
            .iter()
            .map(|&(_, _, r)| ((r - mean) as f64).powi(2))
            .sum();
        TestSet {
            known,
            cold: cold.len(),
            cold_sse,
        }
    }

    /// Root mean squared error of flat factors (f64 sum, serial, the same code for every
    /// Rust system).
    fn rmse(&self, w: &[f32], h: &[f32], k: usize) -> f64 {
        let sse = sgd::squared_error(&self.known, w, h, k);
        ((sse + self.cold_sse) / (self.known.len() + self.cold).max(1) as f64).sqrt()
    }
}

fn snapshot(a: &[AtomicU32]) -> Vec<f32> {
    a.iter()
        .map(|x| f32::from_bits(x.load(Ordering::Relaxed)))
        .collect()
}

fn atomics(a: &[f32]) -> Vec<AtomicU32> {
    a.iter().map(|x| AtomicU32::new(x.to_bits())).collect()
}

#[derive(Parser, Debug)]
#[command(about = "SGD-MF: serial, Hogwild, strads and LIBMF side by side")]
struct Args {
    /// Data sets: ml100k (ua.base / ua.test), mlsmall (ratings.csv, 10% held out),
    /// generated (low-rank, Zipf-skewed, 10% held out), or all.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    data: Vec<String>,
    /// Folder holding movielens-100k/ and movielens-latest-small/ (default: ../shared/data
    /// beside the workspace).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Generated data: ratings (train and test together; 10% are held out).
    #[arg(long, default_value_t = 11_200_000)]
    ratings: usize,
    /// Generated data: users.
    #[arg(long, default_value_t = 200_000)]
    users: usize,
    /// Generated data: items.
    #[arg(long, default_value_t = 40_000)]
    items: usize,
    /// Latent factors.
    #[arg(long, default_value_t = 32)]
    k: usize,
    /// Epochs (every system runs all of them).
    #[arg(long, default_value_t = 20)]
    epochs: usize,
    /// Learning rate.
    #[arg(long, default_value_t = 0.01)]
    lr: f32,
    /// The update every system runs: `sgd` (one learning rate) or `adagrad` (a rate per
    /// row scaled by AdaGrad, LIBMF's update; try --lr 0.1). The CSV files and plots of an
    /// AdaGrad run are named `<data>-adagrad...`.
    #[arg(long, value_enum, default_value_t = Rule::Sgd)]
    rule: Rule,
    /// L2 regularisation (LIBMF's lambda_p2 = lambda_q2).
    #[arg(long, default_value_t = 0.05)]
    reg: f32,
    /// Seed of the initial factors, the generated data and the holdout split.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Thread counts for strads and LIBMF.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Thread counts for Hogwild (0: no Hogwild).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    hogwild_threads: Vec<usize>,
    /// Skip LIBMF.
    #[arg(long)]
    no_libmf: bool,
    /// LIBMF's learning rates, one LIBMF run per value and thread count (default: --lr,
    /// and 0.1, LIBMF's own default). LIBMF scales it per row with AdaGrad.
    #[arg(long, value_delimiter = ',')]
    libmf_eta: Vec<f32>,
    /// LIBMF's bins per dimension (default: LIBMF's own, 26; at least 2 * threads + 1).
    #[arg(long, default_value_t = 0)]
    libmf_bins: usize,
    /// Where the CSV files and LIBMF's input files go.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the plots go (`<data>-rmse-by-epoch.svg`, `<data>-rmse-by-time.svg`; default:
    /// the --out directory). `--plots docs/peers` refreshes the ones BENCHMARKS.md shows.
    #[arg(long)]
    plots: Option<PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One data set, loaded.
struct Dataset {
    name: &'static str,
    source: String,
    train: SparseArray<f32, 2>,
    test: SparseArray<f32, 2>,
}

fn load(name: &str, args: &Args, shared: &Path) -> Result<Dataset, String> {
    match name {
        "ml100k" => {
            let dir = shared.join("movielens-100k");
            let (base, test) = (dir.join("ua.base"), dir.join("ua.test"));
            if !base.exists() || !test.exists() {
                return Err(format!("{} or ua.test not found", base.display()));
            }
            let (train, test) =
                strads::load::ratings_pair(&base, &test).map_err(|e| e.to_string())?;
            Ok(Dataset {
                name: "ml100k",
                source: format!("{} + ua.test", base.display()),
                train,
                test,
            })
        }
        "mlsmall" => {
            let path = shared.join("movielens-latest-small/ratings.csv");
            if !path.exists() {
                return Err(format!("{} not found", path.display()));
            }
            let all = strads::load::ratings(&path).map_err(|e| e.to_string())?;
            let (train, test) = strads::load::split(&all, 0.1, args.seed);
            Ok(Dataset {
                name: "mlsmall",
                source: format!("{}, 10% held out (seed {})", path.display(), args.seed),
                train,
                test,
            })
        }
        "generated" => {
            let all = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
                users: args.users,
                items: args.items,
                ratings: args.ratings,
                seed: args.seed,
                ..Default::default()
            });
            let (train, test) = strads::load::split(&all, 0.1, args.seed);
            Ok(Dataset {
                name: "generated",
                source: format!(
                    "generated: {} ratings, {} users x {} items, rank 10, Zipf 1.0, 10% held out",
                    args.ratings, args.users, args.items
                ),
                train,
                test,
            })
        }
        other => Err(format!(
            "unknown data set {other:?} (expected ml100k, mlsmall, generated or all)"
        )),
    }
}

fn flat(a: &SparseArray<f32, 2>) -> Vec<Rating> {
    a.iter()
        .map(|([u, i], &r)| (u as u32, i as u32, r))
        .collect()
}

/// Writes ratings in the driver's format: "STRADSMF", i32 m, i32 n, i64 nnz, then
/// {i32 u, i32 v, f32 r} records, little endian, 0-based ids.
fn write_ratings(path: &Path, shape: [usize; 2], data: &[Rating]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(24 + data.len() * 12);
    buf.extend_from_slice(b"STRADSMF");
    buf.extend_from_slice(&(shape[0] as i32).to_le_bytes());
    buf.extend_from_slice(&(shape[1] as i32).to_le_bytes());
    buf.extend_from_slice(&(data.len() as i64).to_le_bytes());
    for &(u, i, r) in data {
        buf.extend_from_slice(&(u as i32).to_le_bytes());
        buf.extend_from_slice(&(i as i32).to_le_bytes());
        buf.extend_from_slice(&r.to_le_bytes());
    }
    std::fs::write(path, buf)
}

/// `key=value` fields of one of the driver's lines.
fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// One LIBMF training run in a child process, paused between epochs.
struct Libmf {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    config: String,
    setup_seconds: f64,
    reg_seconds: f64,
}

impl Libmf {
    fn start(
        driver: &Path,
        (train, test): (&Path, &Path),
        args: &Args,
        (threads, eta): (usize, f32),
    ) -> Result<Self, String> {
        let mut cmd = Command::new(driver);
        cmd.arg("--train")
            .arg(train)
            .arg("--test")
            .arg(test)
            .args(["--k", &args.k.to_string()])
            .args(["--epochs", &args.epochs.to_string()])
            .args(["--lr", &eta.to_string()])
            .args(["--lambda", &args.reg.to_string()])
            .args(["--threads", &threads.to_string()])
            .arg("--step")
            // Idle OpenMP threads sleep instead of spinning on a 2-core machine shared
            // with the other systems (LIBMF only uses OpenMP outside its SGD epochs).
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if args.libmf_bins > 0 {
            cmd.args(["--bins", &args.libmf_bins.to_string()]);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", driver.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut me = Libmf {
            child,
            stdin,
            out,
            config: String::new(),
            setup_seconds: f64::NAN,
            reg_seconds: f64::NAN,
        };
        me.config = me.read_until("libmf config")?;
        let ready = me.read_until("libmf ready")?;
        me.setup_seconds = field(&ready, "setup_seconds").unwrap_or(f64::NAN);
        me.reg_seconds = field(&ready, "reg_seconds").unwrap_or(f64::NAN);
        Ok(me)
    }

    fn read_until(&mut self, prefix: &str) -> Result<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .out
                .read_line(&mut line)
                .map_err(|e| format!("reading LIBMF's driver: {e}"))?;
            if n == 0 {
                let status = self.child.wait().map_err(|e| e.to_string())?;
                return Err(format!(
                    "LIBMF's driver ended ({status}) before printing {prefix:?}"
                ));
            }
            if line.starts_with(prefix) {
                return Ok(line.trim_end().to_string());
            }
            eprint!("  {line}");
        }
    }

    fn go(&mut self) -> Result<(), String> {
        self.stdin
            .write_all(b"go\n")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("LIBMF's driver stopped listening: {e}"))
    }

    /// Runs one epoch: (seconds, raw seconds, test RMSE to 4 decimals as LIBMF prints it).
    fn epoch(&mut self) -> Result<(f64, f64, f64), String> {
        self.go()?;
        let line = self.read_until("libmf epoch=")?;
        let get = |k| field(&line, k).ok_or_else(|| format!("no {k} in {line:?}"));
        Ok((get("seconds")?, get("raw_seconds")?, get("va_rmse")?))
    }

    /// After the last epoch: the driver's final line (LIBMF's test RMSE after exactly the
    /// epochs asked for); the driver then exits.
    fn finish(mut self) -> Result<f64, String> {
        let line = self.read_until("libmf final")?;
        let _ = self.child.wait();
        field(&line, "test_rmse").ok_or_else(|| format!("no test_rmse in {line:?}"))
    }
}

impl Drop for Libmf {
    fn drop(&mut self) {
        // A child still paused (an error elsewhere) is ended; one that finished is reaped.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Which system a run is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Serial,
    Hogwild,
    Strads,
    Libmf,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Serial => "hand-written serial",
            Kind::Hogwild => "Hogwild (relaxed atomics)",
            Kind::Strads => "strads",
            Kind::Libmf => "LIBMF 0.9.2",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Kind::Serial => "serial",
            Kind::Hogwild => "hogwild",
            Kind::Strads => "strads",
            Kind::Libmf => "libmf",
        }
    }
}

/// One epoch's measurements.
#[derive(Debug, Clone, Copy)]
struct Epoch {
    seconds: f64,
    raw_seconds: f64,
    test_rmse: f64,
}

/// One system's run over all epochs.
struct Run {
    kind: Kind,
    threads: usize,
    /// LIBMF's learning rate.
    eta: Option<f32>,
    epochs: Vec<Epoch>,
    /// LIBMF's final RMSE to 9 digits (its per-epoch line has 4 decimals).
    final_rmse: Option<f64>,
    /// Set when the run stopped early.
    failed: Option<String>,
}

impl Run {
    fn new(kind: Kind, threads: usize) -> Self {
        Run {
            kind,
            threads,
            eta: None,
            epochs: Vec::new(),
            final_rmse: None,
            failed: None,
        }
    }
    /// Median time per epoch over epochs 2.. (epoch 1 includes strads' planning and runs
    /// LIBMF on 8 of the k dims), or epoch 1 when there is only one.
    fn epoch_seconds(&self) -> f64 {
        let mut v: Vec<f64> = self.epochs.iter().skip(1).map(|e| e.seconds).collect();
        if v.is_empty() {
            v = self.epochs.iter().map(|e| e.seconds).collect();
        }
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    fn last_rmse(&self) -> f64 {
        self.final_rmse
            .or_else(|| self.epochs.last().map(|e| e.test_rmse))
            .unwrap_or(f64::NAN)
    }
    fn name(&self) -> String {
        match self.eta {
            Some(eta) => format!("{} {}t eta {eta}", self.kind.key(), self.threads),
            None => format!("{} {}t", self.kind.key(), self.threads),
        }
    }
    fn label(&self) -> String {
        match self.eta {
            Some(eta) => format!("{}, eta {eta}", self.kind.label()),
            None => self.kind.label().to_string(),
        }
    }
}

fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// LIBMF's learning rates to run: --libmf-eta, or --lr and LIBMF's default 0.1.
fn libmf_etas(args: &Args) -> Vec<f32> {
    let mut etas = if args.libmf_eta.is_empty() {
        vec![args.lr, 0.1]
    } else {
        args.libmf_eta.clone()
    };
    etas.dedup();
    etas
}

/// Hogwild's model: factors and AdaGrad's sums (empty for plain SGD) as atomics.
struct HogwildModel {
    threads: usize,
    w: Vec<AtomicU32>,
    h: Vec<AtomicU32>,
    gw: Vec<AtomicU32>,
    gh: Vec<AtomicU32>,
}

/// strads' model at one thread count: factors and AdaGrad's sums (empty for plain SGD).
struct StradsModel {
    threads: usize,
    w: DistArray<f32, 2>,
    h: DistArray<f32, 2>,
    gw: DistArray<f32, 2>,
    gh: DistArray<f32, 2>,
}

/// Runs every system on one data set, interleaved epoch by epoch.
fn bench(data: &Dataset, args: &Args, driver: Option<&Path>, out: &Path) -> Vec<Run> {
    let (k, lr, reg) = (args.k, args.lr, args.reg);
    let [users, items] = data.train.shape();
    let (train, test) = (flat(&data.train), flat(&data.test));
    let nnz = train.len();
    println!(
        "\n== {}: {}\n   {users} users x {items} items, {} train / {} test ratings; k = {k}, {:?}, \
         lr = {lr}, L2 = {reg}, {} epochs",
        data.name,
        data.source,
        nnz,
        test.len(),
        args.rule,
        args.epochs
    );
    let scored = TestSet::new(&test, &train, [users, items]);
    println!(
        "   {} of {} test ratings have a user or item without training ratings: predicted by \
         the training mean, as LIBMF does",
        scored.cold,
        test.len()
    );

    // Everyone starts from the same factors, uniform in [0, 1/sqrt(k)) (LIBMF's init).
    let (w0, h0) = (
        init_factors(users, k, args.seed),
        init_factors(items, k, args.seed + 1),
    );

    // AdaGrad's squared-gradient sums, two a row, start at 1 (LIBMF's start); plain SGD has
    // none.
    let adagrad = args.rule == Rule::Adagrad;
    let ones = |n: usize| vec![1.0f32; if adagrad { 2 * n } else { 0 }];
    let mut runs = vec![Run::new(Kind::Serial, 1)];
    let (mut ws, mut hs) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    let (mut gws, mut ghs) = (ones(users), ones(items));
    let hog: Vec<HogwildModel> = args
        .hogwild_threads
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| HogwildModel {
            threads: n,
            w: atomics(w0.as_slice()),
            h: atomics(h0.as_slice()),
            gw: atomics(&ones(users)),
            gh: atomics(&ones(items)),
        })
        .collect();
    runs.extend(hog.iter().map(|m| Run::new(Kind::Hogwild, m.threads)));
    let mut strads: Vec<StradsModel> = args
        .threads
        .iter()
        .map(|&n| StradsModel {
            threads: n,
            w: w0.clone(),
            h: h0.clone(),
            gw: DistArray::from_vec([gws.len() / 2, 2], gws.clone())
                .expect("a vector of its shape"),
            gh: DistArray::from_vec([ghs.len() / 2, 2], ghs.clone())
                .expect("a vector of its shape"),
        })
        .collect();
    runs.extend(strads.iter().map(|m| Run::new(Kind::Strads, m.threads)));

    // LIBMF: write its input, start one paused child per learning rate and thread count.
    let mut libmf: Vec<Option<Libmf>> = Vec::new();
    if let Some(driver) = driver {
        let tr = out.join(format!("{}-train.bin", data.name));
        let te = out.join(format!("{}-test.bin", data.name));
        let written = write_ratings(&tr, [users, items], &train)
            .and_then(|()| write_ratings(&te, [users, items], &test));
        for eta in libmf_etas(args) {
            for &n in &args.threads {
                let mut run = Run::new(Kind::Libmf, n);
                run.eta = Some(eta);
                let child = match &written {
                    Err(e) => Err(format!("cannot write LIBMF's input: {e}")),
                    Ok(()) => Libmf::start(driver, (&tr, &te), args, (n, eta)),
                };
                match child {
                    Ok(c) => {
                        println!(
                            "   {}: {} (set-up {:.3}s; per-epoch regulariser sum subtracted: {:.2} ms)",
                            run.name(),
                            c.config,
                            c.setup_seconds,
                            c.reg_seconds * 1e3
                        );
                        libmf.push(Some(c));
                    }
                    Err(e) => {
                        println!("   {} skipped: {e}", run.name());
                        run.failed = Some(e);
                        libmf.push(None);
                    }
                }
                runs.push(run);
            }
        }
    }
    let libmf_base = runs.len() - libmf.len();

    {
        let pools: Vec<HogwildPool> = hog
            .iter()
            .map(|m| {
                let g = adagrad.then_some((&m.gw[..], &m.gh[..]));
                HogwildPool::new(&train, (&m.w, &m.h), g, m.threads)
            })
            .collect();
        for epoch in 0..args.epochs {
            // LIBMF's first epoch updates AdaGrad's first group of factors only.
            let fast = epoch > 0;
            let mut r = 0;
            let dt = timed(|| {
                if adagrad {
                    serial_adagrad_epoch(
                        &train,
                        (&mut ws, &mut hs),
                        (&mut gws, &mut ghs),
                        k,
                        (lr, reg),
                        fast,
                    )
                } else {
                    serial_epoch(&train, &mut ws, &mut hs, k, lr, reg)
                }
            });
            let e = scored.rmse(&ws, &hs, k);
            runs[r].epochs.push(Epoch {
                seconds: dt,
                raw_seconds: dt,
                test_rmse: e,
            });
            r += 1;
            for pool in &pools {
                let dt = timed(|| pool.epoch(k, lr, reg, fast));
                let e = scored.rmse(&snapshot(pool.w), &snapshot(pool.h), k);
                debug_assert_eq!(runs[r].threads, pool.threads);
                runs[r].epochs.push(Epoch {
                    seconds: dt,
                    raw_seconds: dt,
                    test_rmse: e,
                });
                r += 1;
            }
            for m in &mut strads {
                let StradsModel { w, h, gw, gh, .. } = m;
                let dt = timed(|| {
                    strads::with_threads(m.threads, || {
                        if adagrad {
                            adagrad_epoch(&data.train, w, h, gw, gh, lr, reg, fast)
                        } else {
                            sgd_epoch(&data.train, w, h, lr, reg)
                        }
                    })
                });
                let e = scored.rmse(w.as_slice(), h.as_slice(), k);
                runs[r].epochs.push(Epoch {
                    seconds: dt,
                    raw_seconds: dt,
                    test_rmse: e,
                });
                r += 1;
            }
            for (j, child) in libmf.iter_mut().enumerate() {
                let run = &mut runs[libmf_base + j];
                let Some(c) = child else { continue };
                match c.epoch() {
                    Ok((seconds, raw_seconds, test_rmse)) => run.epochs.push(Epoch {
                        seconds,
                        raw_seconds,
                        test_rmse,
                    }),
                    Err(e) => {
                        run.failed = Some(e);
                        *child = None;
                    }
                }
            }
        }
        drop(pools);
    }
    for (j, child) in libmf.into_iter().enumerate() {
        if let Some(c) = child {
            match c.finish() {
                Ok(x) => runs[libmf_base + j].final_rmse = Some(x),
                Err(e) => runs[libmf_base + j].failed = Some(e),
            }
        }
    }
    if let Some(m) = strads.iter().find(|m| m.threads == 1) {
        let same = m.w.as_slice() == ws.as_slice()
            && m.h.as_slice() == hs.as_slice()
            && m.gw.as_slice() == gws.as_slice()
            && m.gh.as_slice() == ghs.as_slice();
        println!("   strads at 1 thread equals the hand-written serial loop bit for bit: {same}");
    }
    if let Some(m) = hog.iter().find(|m| m.threads == 1) {
        let same = snapshot(&m.w) == ws
            && snapshot(&m.h) == hs
            && snapshot(&m.gw) == gws
            && snapshot(&m.gh) == ghs;
        println!("   Hogwild at 1 thread equals the hand-written serial loop bit for bit: {same}");
    }
    report(data, &runs, nnz, args);
    // An AdaGrad run's files sit beside the plain SGD run's.
    let tag = match args.rule {
        Rule::Sgd => data.name.to_string(),
        Rule::Adagrad => format!("{}-adagrad", data.name),
    };
    let csv = out.join(format!("{tag}.csv"));
    match std::fs::write(&csv, to_csv(data.name, &runs, nnz, args.lr)) {
        Ok(()) => println!("   every epoch: {}", csv.display()),
        Err(e) => println!("   cannot write {}: {e}", csv.display()),
    }
    let plots = args.plots.as_deref().unwrap_or(out);
    for by_time in [false, true] {
        match plot(&tag, &runs, plots, by_time) {
            Ok(path) => println!("   plot: {}", path.display()),
            Err(e) => println!("   cannot plot {}: {e}", data.name),
        }
    }
    runs
}

/// Test RMSE of every run against epoch (`by_time` false) or against cumulative training
/// seconds, as an SVG in `dir`; the RMSE axis is logarithmic, since first epochs and
/// final ones differ by up to 10x.
fn plot(
    name: &str,
    runs: &[Run],
    dir: &Path,
    by_time: bool,
) -> Result<PathBuf, Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(
        "{name}-rmse-by-{}.svg",
        if by_time { "time" } else { "epoch" }
    ));
    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .filter(|r| !r.epochs.is_empty())
        .map(|r| {
            let mut t = 0.0;
            let points = r
                .epochs
                .iter()
                .enumerate()
                .map(|(e, ep)| {
                    t += ep.seconds;
                    (if by_time { t } else { (e + 1) as f64 }, ep.test_rmse)
                })
                .filter(|p| p.1.is_finite())
                .collect();
            (format!("{} {}t", r.label(), r.threads), points)
        })
        .collect();
    let all = series.iter().flat_map(|s| s.1.iter());
    let (mut x_max, mut y_lo, mut y_hi) = (0.0f64, f64::INFINITY, 0.0f64);
    for &(x, y) in all {
        x_max = x_max.max(x);
        y_lo = y_lo.min(y);
        y_hi = y_hi.max(y);
    }
    if series.is_empty() || !(y_lo > 0.0 && y_hi >= y_lo) {
        return Err("no finite, positive RMSE values to plot".into());
    }
    let root = SVGBackend::new(&path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{name}: test RMSE against {}",
                if by_time { "training time" } else { "epoch" }
            ),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max * 1.02, (y_lo * 0.98..y_hi * 1.02).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(if by_time {
            "seconds (cumulative)"
        } else {
            "epoch"
        })
        .y_desc("test RMSE (log scale)")
        .y_labels(16)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()?;
    for (i, (label, points)) in series.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    drop(chart);
    drop(root);
    Ok(path)
}

fn to_csv(name: &str, runs: &[Run], nnz: usize, lr: f32) -> String {
    let mut s = String::from(
        "data,system,threads,lr,epoch,epoch_seconds,raw_seconds,cumulative_seconds,mupdates_per_s,test_rmse\n",
    );
    for run in runs {
        let mut cum = 0.0;
        for (e, ep) in run.epochs.iter().enumerate() {
            cum += ep.seconds;
            let _ = writeln!(
                s,
                "{name},{},{},{},{},{:.6},{:.6},{:.6},{:.3},{}",
                run.kind.key(),
                run.threads,
                run.eta.unwrap_or(lr),
                e + 1,
                ep.seconds,
                ep.raw_seconds,
                cum,
                nnz as f64 / ep.seconds / 1e6,
                sig9(ep.test_rmse)
            );
        }
    }
    s
}

/// Relative difference of each epoch's test RMSE of `a` from `b`'s, in percent: positive
/// where `a` is behind (higher).
fn epoch_diffs(a: &Run, b: &Run) -> Vec<f64> {
    a.epochs
        .iter()
        .zip(&b.epochs)
        .map(|(x, y)| (x.test_rmse - y.test_rmse) / y.test_rmse * 100.0)
        .collect()
}

/// The largest of `diffs` and its epoch (1-based); `(0.0, 0)` when none is above 0.
fn max_at(diffs: impl IntoIterator<Item = f64>) -> (f64, usize) {
    diffs
        .into_iter()
        .enumerate()
        .fold((0.0, 0), |m, (e, d)| if d > m.0 { (d, e + 1) } else { m })
}

/// How far `a`'s per-epoch test RMSE is behind `b`'s at most, and where.
fn max_behind(a: &Run, b: &Run) -> (f64, usize) {
    max_at(epoch_diffs(a, b))
}

/// Largest |difference| of per-epoch test RMSE between two runs, and where.
fn max_epoch_diff(a: &Run, b: &Run) -> (f64, usize) {
    max_at(epoch_diffs(a, b).into_iter().map(f64::abs))
}

fn report(data: &Dataset, runs: &[Run], nnz: usize, args: &Args) {
    let serial = &runs[0];
    let base = serial.epoch_seconds();
    println!(
        "\n   {:<26} {:>3} {:>9} {:>9} {:>8} {:>9} {:>12} {:>9} {:>10}",
        "system",
        "thr",
        "first_s",
        "epoch_s",
        "speedup",
        "Mupd/s",
        "test_rmse",
        "vs serial",
        "max |d|/ep"
    );
    for run in runs {
        if run.epochs.is_empty() {
            println!(
                "   {:<26} {:>3}  skipped: {}",
                run.label(),
                run.threads,
                run.failed.as_deref().unwrap_or("no epochs")
            );
            continue;
        }
        let t = run.epoch_seconds();
        let rm = run.last_rmse();
        println!(
            "   {:<26} {:>3} {:>9.4} {:>9.4} {:>8.3} {:>9.1} {:>12} {:>8.3}% {:>9.3}%",
            run.label(),
            run.threads,
            run.epochs[0].seconds,
            t,
            base / t,
            nnz as f64 / t / 1e6,
            sig9(rm),
            (rm - serial.last_rmse()) / serial.last_rmse() * 100.0,
            max_epoch_diff(run, serial).0
        );
        if let Some(e) = &run.failed {
            println!("   {:<26}      stopped early: {e}", "");
        }
    }
    println!(
        "   epoch_s: median over epochs 2..{} (first_s: epoch 1, with strads' planning; LIBMF's epoch 1, \
         and every system's with --rule adagrad, updates only 8 of the k dims); speedup = serial epoch_s / epoch_s;\n   test_rmse after epoch {}; \
         max |d|/ep: largest per-epoch test RMSE difference from serial",
        args.epochs, args.epochs
    );

    // The issue's targets, with the measured ratios.
    let find = |kind: Kind, n: usize| {
        runs.iter()
            .find(|r| r.kind == kind && r.threads == n && !r.epochs.is_empty())
    };
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("\n   targets (issue 5) on {}:", data.name);
    if let Some(s1) = find(Kind::Strads, 1) {
        let ratio = s1.epoch_seconds() / base;
        println!(
            "   - strads 1t time / serial time = {ratio:.3}x (target <= 1.03x): {}",
            verdict(ratio <= 1.03)
        );
    }
    if let Some(s2) = find(Kind::Strads, 2) {
        let speedup = base / s2.epoch_seconds();
        println!(
            "   - serial time / strads 2t time = {speedup:.3}x (target >= 1.85x): {}",
            verdict(speedup >= 1.85)
        );
    }
    for l in runs
        .iter()
        .filter(|r| r.kind == Kind::Libmf && !r.epochs.is_empty())
    {
        let n = l.threads;
        let Some(s) = find(Kind::Strads, n) else {
            continue;
        };
        let ratio = s.epoch_seconds() / l.epoch_seconds();
        let drmse = (s.last_rmse() - l.last_rmse()) / l.last_rmse() * 100.0;
        println!(
            "   - strads {n}t time / {} time = {ratio:.3}x (target <= 1x): {}; strads' test RMSE {:+.2}% vs \
             LIBMF's after {} epochs (target within 1%): {}",
            l.name(),
            verdict(ratio <= 1.0),
            drmse,
            args.epochs,
            if drmse < -1.0 {
                "met (strads' is lower)"
            } else {
                verdict(drmse <= 1.0)
            }
        );
    }
    for run in runs.iter().skip(1) {
        if run.epochs.is_empty() || run.kind == Kind::Libmf {
            continue;
        }
        let (d, at) = max_epoch_diff(run, serial);
        // Behind serial is what the target guards against; ahead of it is not a miss.
        let (behind, behind_at) = max_behind(run, serial);
        let behind_text = if behind_at == 0 {
            "never behind".to_string()
        } else {
            format!("at most {behind:.3}% behind (epoch {behind_at})")
        };
        let target = if run.kind == Kind::Strads {
            format!(
                "; {behind_text} (target: at most 0.5% behind): {}",
                verdict(behind <= 0.5)
            )
        } else {
            format!("; {behind_text} (shown for comparison)")
        };
        let tail = epoch_diffs(run, serial)
            .iter()
            .skip(4)
            .fold(0.0, |m: f64, &x| m.max(x.abs()));
        let at = if at == 0 {
            String::new()
        } else {
            format!(" (epoch {at})")
        };
        println!(
            "   - {} per-epoch test RMSE vs serial: max |diff| {d:.3}%{at}{target}; max from epoch 5 on \
             {tail:.3}%",
            run.name()
        );
    }
}

fn main() {
    let args = Args::parse();
    assert!(args.k <= MAX_K, "--k at most {MAX_K}");
    assert!(args.epochs >= 1, "--epochs at least 1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = args
        .shared
        .clone()
        .unwrap_or_else(|| root.join("../shared/data"));
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| root.join("target/peers"));
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("cannot create {}: {e}", out.display());
        std::process::exit(1);
    }
    let names: Vec<&str> = if args.data.iter().any(|d| d == "all") {
        vec!["ml100k", "mlsmall", "generated"]
    } else {
        args.data.iter().map(String::as_str).collect()
    };

    println!(
        "peers: k = {}, {} epochs, rule = {:?}, lr = {}, L2 = {}, strads/LIBMF threads {:?}, Hogwild threads {:?}, {} cores",
        args.k,
        args.epochs,
        args.rule,
        args.lr,
        args.reg,
        args.threads,
        args.hogwild_threads,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let driver = if args.no_libmf {
        println!("LIBMF skipped: --no-libmf");
        None
    } else {
        build_libmf(root)
    };

    for name in names {
        let t = Instant::now();
        match load(name, &args, &shared) {
            Ok(data) => {
                println!("{name}: loaded in {:.1}s", t.elapsed().as_secs_f64());
                bench(&data, &args, driver.as_deref(), &out);
            }
            Err(e) => println!("\n== {name} skipped: {e}"),
        }
    }
}

/// Runs `scripts/libmf/build.sh` (downloads and builds once, then only checks); the
/// driver's path, or None (saying why).
fn build_libmf(root: &Path) -> Option<PathBuf> {
    let script = root.join("scripts/libmf/build.sh");
    let output = match Command::new("bash").arg(&script).output() {
        Ok(o) => o,
        Err(e) => {
            println!("LIBMF skipped: cannot run {}: {e}", script.display());
            return None;
        }
    };
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let why = log
            .lines()
            .rev()
            .find(|l| l.starts_with("libmf build:"))
            .unwrap_or("scripts/libmf/build.sh failed");
        println!("LIBMF skipped: {why}");
        return None;
    }
    // The script builds into LIBMF_DIR when set, else target/libmf.
    let dir =
        std::env::var_os("LIBMF_DIR").map_or_else(|| root.join("target/libmf"), PathBuf::from);
    let driver = dir.join("libmf_driver");
    let info = std::fs::read_to_string(dir.join("BUILD_INFO")).unwrap_or_default();
    println!(
        "LIBMF: {} ({})",
        driver.display(),
        info.lines().collect::<Vec<_>>().join("; ")
    );
    Some(driver)
}
