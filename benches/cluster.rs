//! The cluster runtime against threads, measured in one run: each example (`sgd_mf` on the
//! generated 10 M-rating set at k = 32, `lda`, `word2vec`, `transe`, `dtw`, `sparse_lr`;
//! on `../shared/data`'s AP, text8 prefix and FB15k-237 when that directory exists, else
//! on generated data of the same shape) as its serial loop (`STRADS_SERIAL=1`), as 2
//! threads in one process, as 2 processes x 1 thread on loopback as the cost model places
//! each call (across the ranks or on the driver's threads) and with every call across
//! (`STRADS_COST=0`), and, with `--netns` (root), the same two in two network namespaces
//! joined by a veth pair shaped to 1 Gbit/s with `tc ... tbf`. Prints one table: the
//! steady epoch time (the
//! median epoch after the first, which carries the data's one-time shipping; the run of
//! median epoch time among `--runs`, taken A B A B), ratios, the first epoch, the driver's
//! bytes sent and received over the whole run and per epoch, the fraction of the training
//! loop's time the
//! driver's worker spent waiting for other ranks (blocks, barriers, the parts coming home),
//! and each rank's peak memory (`VmHWM`).
//!
//! ```text
//! cargo build --release --examples
//! cargo bench --bench cluster                       # loopback
//! cargo bench --bench cluster -- --netns            # also two namespaces (as root)
//! ```
//!
//! The ranks are started here with `STRADS_RANK`, `STRADS_SIZE`, `STRADS_COORDINATOR` and
//! `STRADS_JOB_SECRET_FILE`, as a scheduler would, so each rank's peak memory (`VmHWM`)
//! can be read. Every run is bounded by `--timeout`; the namespaces are removed at the end.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/examples.rs"]
mod examples;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "strads' cluster runtime against threads, one table")]
struct Args {
    /// Runs of each layout (median reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// SGD-MF epochs per run.
    #[arg(long, default_value_t = 5)]
    epochs: usize,
    /// SGD-MF generated ratings (10% held out).
    #[arg(long, default_value_t = 11_200_000)]
    ratings: usize,
    /// Also run two processes in network namespaces joined by a 1 Gbit/s veth (root).
    #[arg(long)]
    netns: bool,
    /// Only these examples (comma-separated: sgd_mf, lda, word2vec, transe, dtw,
    /// sparse_lr).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Seconds before a run is killed.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Directory of the example binaries.
    #[arg(long)]
    examples: Option<PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One layout of one example.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Serial,
    Threads2,
    Loopback2x1,
    /// Every call across the ranks (`STRADS_COST=0`).
    LoopbackAcross,
    Netns2x1,
    NetnsAcross,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Serial => "serial loop",
            Layout::Threads2 => "2 threads",
            Layout::Loopback2x1 => "2 proc x 1 (loopback), placed",
            Layout::LoopbackAcross => "2 proc x 1 (loopback), all across",
            Layout::Netns2x1 => "2 proc x 1 (veth 1 Gbit/s), placed",
            Layout::NetnsAcross => "2 proc x 1 (veth 1 Gbit/s), all across",
        }
    }

    fn processes(self) -> bool {
        !matches!(self, Layout::Serial | Layout::Threads2)
    }

    fn netns(self) -> bool {
        matches!(self, Layout::Netns2x1 | Layout::NetnsAcross)
    }

    fn across(self) -> bool {
        matches!(self, Layout::LoopbackAcross | Layout::NetnsAcross)
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
struct Measure {
    /// Median epoch after the first.
    epoch_s: f64,
    /// The first epoch (the data's one-time shipping included).
    first_s: f64,
    /// The whole training time.
    total_s: f64,
    /// The whole run's wall time (start to exit: data, training, evaluation, shutdown).
    wall_s: f64,
    sent: u64,
    received: u64,
    waited_s: f64,
    /// Of which in the first call (the training data's one-time shipping).
    waited_first_s: f64,
    peak_kib: Vec<u64>,
    summary: String,
}

const NS_A: &str = "strads-a";
const NS_B: &str = "strads-b";
const IP_A: &str = "10.77.0.1";

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let dir = examples::dir(args.examples.as_deref())?;
    let secret = Secret::new()?;
    let _net = if args.netns { Some(Netns::up()?) } else { None };
    let epochs = args.epochs.to_string();
    let ratings = args.ratings.to_string();
    // (example, flags, epochs, its training loop)
    let data = Path::new("../shared/data");
    let shared = data.join("movielens-100k/u.data").exists();
    let path = |p: &str| data.join(p).display().to_string();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let mut workloads: Vec<(&str, Vec<String>, usize, &str)> = vec![(
        "sgd_mf",
        owned(&[
            "--ratings",
            &ratings,
            "--users",
            "200000",
            "--items",
            "40000",
            "--k",
            "32",
            "--epochs",
            &epochs,
        ]),
        args.epochs,
        "sgd_epoch",
    )];
    if shared {
        workloads.extend([
            (
                "lda",
                owned(&[
                    "--data",
                    &path("lda-ap/ap.dat"),
                    "--vocab",
                    &path("lda-ap/vocab.txt"),
                    "--iterations",
                    "20",
                ]),
                20,
                "gibbs",
            ),
            (
                "word2vec",
                owned(&[
                    "--data",
                    &path("text8-prefix/text8_prefix_6877825.txt.gz"),
                    "--epochs",
                    "2",
                ]),
                2,
                "skipgram_epoch",
            ),
            (
                "transe",
                owned(&["--data", &path("kg-fb15k237"), "--epochs", "3"]),
                3,
                "train_adversarial",
            ),
        ]);
    } else {
        workloads.extend([
            ("lda", owned(&["--iterations", "20"]), 20, "gibbs"),
            (
                "word2vec",
                owned(&["--words", "1170000", "--epochs", "2"]),
                2,
                "skipgram_epoch",
            ),
            ("transe", owned(&["--epochs", "3"]), 3, "train_adversarial"),
        ]);
    }
    workloads.extend([
        ("dtw", Vec::new(), 1, "dtw_fill"),
        (
            "sparse_lr",
            owned(&["--samples", "1000000", "--epochs", "5"]),
            5,
            "lr_epoch",
        ),
    ]);
    let mut layouts = vec![
        Layout::Serial,
        Layout::Threads2,
        Layout::Loopback2x1,
        Layout::LoopbackAcross,
    ];
    if args.netns {
        layouts.extend([Layout::Netns2x1, Layout::NetnsAcross]);
    }
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| example | layout | epoch s (median after the first) | x serial | x 2 threads | first epoch s | training s | x 2 threads (training) | run wall s | driver sent MiB | received MiB | MiB moved per epoch | wait % | wait % after the first | peak MiB (rank 0, 1) |"
    );
    let _ = writeln!(
        table,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut port = 29_100u16;
    for (name, flags, epochs, training) in &workloads {
        if !args.only.is_empty() && !args.only.iter().any(|o| o == name) {
            continue;
        }
        let bin = dir.join(name);
        if !bin.exists() {
            return Err(format!(
                "{} is missing: run `cargo build --release --examples` first",
                bin.display()
            ));
        }
        let mut runs: Vec<Vec<Measure>> = vec![Vec::new(); layouts.len()];
        for r in 0..args.runs {
            for (i, &layout) in layouts.iter().enumerate() {
                port += 1;
                let work = Workload {
                    flags,
                    epochs: *epochs,
                    training,
                };
                let m = run_once(&bin, &work, layout, port, &secret.path, args)?;
                eprintln!(
                    "{name} run {r} {}: {:.4} s/epoch (first {:.4})  {}",
                    layout.name(),
                    m.epoch_s,
                    m.first_s,
                    m.summary
                );
                runs[i].push(m);
            }
        }
        let med: Vec<Measure> = runs.iter().map(|ms| median(ms)).collect();
        let serial = med[0].epoch_s;
        let threads = med[1].epoch_s;
        for (layout, m) in layouts.iter().zip(&med) {
            let peak = m
                .peak_kib
                .iter()
                .map(|k| format!("{:.0}", *k as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(", ");
            let procs = layout.processes();
            let mib = |b: f64| format!("{:.1}", b / 1048576.0);
            let or_dash = |v: String| if procs { v } else { "-".into() };
            let _ = writeln!(
                table,
                "| {name} | {} | {:.4} | {:.2}x | {:.2}x | {:.4} | {:.3} | {:.2}x | {:.2} | {} | {} | {} | {} | {} | {peak} |",
                layout.name(),
                m.epoch_s,
                serial / m.epoch_s,
                threads / m.epoch_s,
                m.first_s,
                m.total_s,
                med[1].total_s / m.total_s,
                m.wall_s,
                or_dash(mib(m.sent as f64)),
                or_dash(mib(m.received as f64)),
                or_dash(mib((m.sent + m.received) as f64 / *epochs as f64)),
                or_dash(format!("{:.1}", 100.0 * m.waited_s / m.total_s)),
                if procs && m.total_s > m.first_s {
                    format!(
                        "{:.1}",
                        100.0 * (m.waited_s - m.waited_first_s) / (m.total_s - m.first_s)
                    )
                } else {
                    "-".into()
                },
            );
        }
        if !med.is_empty() {
            let _ = writeln!(
                table,
                "| {name} | result (serial run) | {} |||||||||||||",
                med[0].summary
            );
        }
    }
    println!("{table}");
    Ok(())
}

/// The run with the median epoch time.
fn median(ms: &[Measure]) -> Measure {
    let mut v = ms.to_vec();
    v.sort_by(|a, b| a.epoch_s.total_cmp(&b.epoch_s));
    v[v.len() / 2].clone()
}

/// What one example runs: its flags, its epochs and the name of its training loop.
struct Workload<'a> {
    flags: &'a [String],
    epochs: usize,
    training: &'a str,
}

fn run_once(
    bin: &Path,
    work: &Workload<'_>,
    layout: Layout,
    port: u16,
    secret: &Path,
    args: &Args,
) -> Result<Measure, String> {
    let base = |ns: Option<&str>| {
        let mut c = match ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        c.args(work.flags);
        for (k, _) in std::env::vars() {
            if k.starts_with("STRADS_") {
                c.env_remove(k);
            }
        }
        c.env("STRADS_EXPLAIN", "1");
        c
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.timeout);
    let mut ranks: Vec<Child> = Vec::new();
    match layout {
        Layout::Serial | Layout::Threads2 => {
            let mut c = base(None);
            if layout == Layout::Serial {
                c.env("STRADS_SERIAL", "1").env("STRADS_THREADS", "1");
            } else {
                c.env("STRADS_THREADS", "2");
            }
            ranks.push(spawn(c)?);
        }
        _ => {
            let netns = layout.netns();
            let coordinator = if netns {
                format!("{IP_A}:{port}")
            } else {
                format!("127.0.0.1:{port}")
            };
            for rank in 0..2 {
                let ns = netns.then_some(if rank == 0 { NS_A } else { NS_B });
                let mut c = base(ns);
                c.env("STRADS_THREADS", "1")
                    .env("STRADS_RANK", rank.to_string())
                    .env("STRADS_SIZE", "2")
                    .env("STRADS_COORDINATOR", &coordinator)
                    .env("STRADS_JOB_SECRET_FILE", secret);
                if layout.across() {
                    c.env("STRADS_COST", "0");
                }
                ranks.push(spawn(c)?);
            }
        }
    }
    // Poll each rank's peak memory until it exits; kill everything past the deadline.
    let mut peak = vec![0u64; ranks.len()];
    let mut done = vec![None; ranks.len()];
    while done.iter().any(Option::is_none) {
        for (i, child) in ranks.iter_mut().enumerate() {
            if done[i].is_some() {
                continue;
            }
            if let Some(kib) = vm_hwm(child.id()) {
                peak[i] = peak[i].max(kib);
            }
            if let Ok(Some(status)) = child.try_wait() {
                done[i] = Some(status);
            }
        }
        if Instant::now() > deadline {
            for c in &mut ranks {
                let _ = c.kill();
                let _ = c.wait();
            }
            return Err(format!(
                "{} ({}) took over {} s",
                bin.display(),
                layout.name(),
                args.timeout
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    let mut err = String::new();
    if let Some(o) = ranks[0].stdout.as_mut() {
        let _ = o.read_to_string(&mut out);
    }
    for c in &mut ranks {
        if let Some(e) = c.stderr.as_mut() {
            let _ = e.read_to_string(&mut err);
        }
    }
    for (i, s) in done.iter().enumerate() {
        let s = s.expect("waited");
        if !s.success() {
            return Err(format!(
                "{} ({}) rank {i} exited with {s}:\n{err}",
                bin.display(),
                layout.name()
            ));
        }
    }
    let summary = out
        .lines()
        .rev()
        .find(|l| l.contains("seconds="))
        .ok_or_else(|| format!("{}: no summary line in its output:\n{out}", bin.display()))?
        .to_string();
    let seconds: f64 = field(&summary, "seconds")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no seconds= in `{summary}`"))?;
    // Per-epoch lines (`epoch_seconds=`, LDA's `sweep_seconds=`): the first epoch carries
    // the one-time shipping of the data; the steady state is the median of the others.
    let per: Vec<f64> = out
        .lines()
        .filter_map(|l| field(l, "epoch_seconds").or_else(|| field(l, "sweep_seconds")))
        .filter_map(|v| v.parse().ok())
        .collect();
    let (first_s, epoch_s) = match per.split_first() {
        Some((&f, rest)) if !rest.is_empty() => {
            let mut r = rest.to_vec();
            r.sort_by(f64::total_cmp);
            (f, r[r.len() / 2])
        }
        _ => (seconds / work.epochs as f64, seconds / work.epochs as f64),
    };
    let mut m = Measure {
        epoch_s,
        first_s,
        total_s: seconds,
        peak_kib: peak,
        wall_s: started.elapsed().as_secs_f64(),
        summary: summary
            .split_whitespace()
            .filter(|f| {
                !f.starts_with("seconds=")
                    && !f.starts_with("threads=")
                    && !f.starts_with("processes=")
            })
            .collect::<Vec<_>>()
            .join(" "),
        ..Measure::default()
    };
    // `strads cluster <loop>: N calls across processes; the driver's workers waited W s ..`
    // (the training loop's) and `strads cluster: the driver sent S and received R bytes ..`.
    let after = |line: &str, w: &str| -> Option<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words.iter().position(|x| *x == w)?;
        words.get(i + 1).map(|s| s.to_string())
    };
    if let Some(line) = err
        .lines()
        .find(|l| l.starts_with("strads cluster: the driver sent"))
    {
        m.sent = after(line, "sent")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        m.received = after(line, "received")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
    }
    let prefix = format!("strads cluster {}: ", work.training);
    if let Some(line) = err
        .lines()
        .find(|l| l.starts_with(&prefix) && l.contains("calls across"))
    {
        m.waited_s = after(line, "waited")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0);
        // `.. for other ranks (F s in the first call)`.
        m.waited_first_s = after(line, "ranks")
            .and_then(|s| s.trim_start_matches('(').parse().ok())
            .unwrap_or(0.0);
    }
    Ok(m)
}

fn spawn(mut c: Command) -> Result<Child, String> {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {c:?}: {e}"))
}

/// `key=value` from a summary line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// A process's peak resident memory, KiB.
fn vm_hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The job secret, in a file only this user reads; removed at the end.
struct Secret {
    dir: PathBuf,
    path: PathBuf,
}

impl Secret {
    fn new() -> Result<Secret, String> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = std::env::temp_dir().join(format!("strads-bench-{}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
        let path = dir.join("secret");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        std::io::Write::write_all(&mut f, &bytes).map_err(|e| e.to_string())?;
        Ok(Secret { dir, path })
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Two network namespaces joined by a veth pair, each end shaped to 1 Gbit/s; removed
/// when dropped.
struct Netns;

impl Netns {
    fn up() -> Result<Netns, String> {
        let _ = Netns::down();
        let net = Netns;
        for cmd in [
            vec!["netns", "add", NS_A],
            vec!["netns", "add", NS_B],
            vec![
                "link",
                "add",
                "strads-va",
                "type",
                "veth",
                "peer",
                "name",
                "strads-vb",
            ],
            vec!["link", "set", "strads-va", "netns", NS_A],
            vec!["link", "set", "strads-vb", "netns", NS_B],
            vec![
                "-n",
                NS_A,
                "addr",
                "add",
                "10.77.0.1/24",
                "dev",
                "strads-va",
            ],
            vec![
                "-n",
                NS_B,
                "addr",
                "add",
                "10.77.0.2/24",
                "dev",
                "strads-vb",
            ],
            vec!["-n", NS_A, "link", "set", "lo", "up"],
            vec!["-n", NS_B, "link", "set", "lo", "up"],
            vec!["-n", NS_A, "link", "set", "strads-va", "up"],
            vec!["-n", NS_B, "link", "set", "strads-vb", "up"],
        ] {
            sh("ip", &cmd)?;
        }
        for (ns, dev) in [(NS_A, "strads-va"), (NS_B, "strads-vb")] {
            sh(
                "tc",
                &[
                    "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "1gbit", "burst",
                    "256kb", "latency", "10ms",
                ],
            )?;
        }
        Ok(net)
    }

    fn down() -> Result<(), String> {
        for ns in [NS_A, NS_B] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
        Ok(())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Netns::down();
    }
}

fn sh(prog: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{prog} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}
