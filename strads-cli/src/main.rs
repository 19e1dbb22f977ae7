//! `strads`: the launcher of strads programs.
//!
//! ```text
//! strads run -n 4 [--threads 2] -- ./target/release/examples/sgd_mf --data u.data
//! ```
//!
//! starts ranks 0..N of the program on this machine with `STRADS_RANK`, `STRADS_SIZE`,
//! `STRADS_COORDINATOR` (a free loopback port) and `STRADS_JOB_SECRET_FILE` (a new
//! secret, removed at the end) in their environment. With `--hosts a,b` or `--hostfile F`
//! each rank starts on its host through `--ssh` (default `ssh -o BatchMode=yes`): the
//! secret goes through ssh's standard input into a file only the user can read on that
//! host (removed when the rank ends), the rank runs in the launcher's directory when it
//! exists there, with this launcher's other `STRADS_*` settings, and rank 0 listens on
//! the first host at `--port` (default: derived from the launcher's process id). Rank 0,
//! the driver, writes to this terminal as the program would alone; the other ranks'
//! standard output is discarded and each line of their standard error is prefixed
//! `[rank r]`. When a rank fails, the
//! others get `--grace` seconds to stop by themselves (they do: a strads job is
//! fail-stop), then are killed; the launcher exits with rank 0's status when it failed,
//! else with the first failure's (128 + the signal for a signal). Every rank dies with the
//! launcher.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicU64, Ordering};

use strads_runtime::cluster::launch::{
    self, RankCommand, Remote, SecretFile, Workers, output, spawn,
};
use strads_runtime::cluster::restart::EXIT_RESUMABLE;

mod hosts;

#[derive(Parser, Debug)]
#[command(
    name = "strads",
    version,
    about = "Runs strads programs as cluster jobs"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Runs a program as N processes (ranks) of one job.
    Run(Run),
}

#[derive(Parser, Debug)]
struct Run {
    /// Number of processes (ranks), from 1.
    #[arg(short = 'n', long = "processes", value_parser = clap::value_parser!(u64).range(1..=4096))]
    n: u64,
    /// Worker threads per process (`STRADS_THREADS`; default: each process's cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: Option<u64>,
    /// Hosts to run the ranks on, comma-separated, started over ssh (rank r on host
    /// r mod the number of hosts; rank 0, the driver, on the first).
    #[arg(long, value_delimiter = ',', conflicts_with = "hostfile")]
    hosts: Vec<String>,
    /// A file of hosts, one per line, each optionally followed by `slots=K` (K ranks
    /// before the next host's turn); `#` starts a comment.
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// The ssh command that starts a rank on a host (its words, then the host and a shell
    /// command line).
    #[arg(long, default_value = "ssh -o BatchMode=yes")]
    ssh: String,
    /// The port rank 0 listens on, on the first host (default: one derived from this
    /// launcher's process id, in 20000..40000).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Seconds the other ranks get to stop by themselves after one failed.
    #[arg(long, default_value_t = 30)]
    grace: u64,
    /// The program and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    program: Vec<OsString>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Run(r) => match run(r) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("strads: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// Waits for a job's ranks: all end, or one fails and the others get `grace` seconds to
/// stop by themselves before they are killed; each rank's status (`None`: killed here).
fn wait_job(ranks: &mut Workers, grace: u64) -> Vec<(usize, Option<std::process::ExitStatus>)> {
    let mut failed_at: Option<Instant> = None;
    loop {
        let st = ranks.wait_all(Duration::from_millis(100));
        if st.iter().all(|(_, s)| s.is_some()) {
            return st;
        }
        let failed = st.iter().any(|(_, s)| s.is_some_and(|s| !s.success()));
        if failed && failed_at.is_none() {
            failed_at = Some(Instant::now());
        }
        if failed_at.is_some_and(|t| t.elapsed() > Duration::from_secs(grace)) {
            let st = ranks.wait_all(Duration::ZERO);
            for (rank, s) in &st {
                if s.is_none() {
                    eprintln!("strads: rank {rank} did not stop within {grace} s: killed");
                }
            }
            ranks.kill_all();
            // Those still running at this point were killed by us: the ranks that failed
            // are the others.
            return st;
        }
    }
}

fn run(r: Run) -> Result<u8, String> {
    let n = r.n as usize;
    let hosts = match (&r.hostfile, r.hosts.is_empty()) {
        (Some(f), _) => Some(hosts::from_file(f)?),
        (None, false) => Some(hosts::from_list(&r.hosts)?),
        (None, true) => None,
    };
    let ssh: Vec<String> = r.ssh.split_whitespace().map(String::from).collect();
    if ssh.is_empty() {
        return Err("--ssh: an empty command".into());
    }
    let secret = SecretFile::create()?;
    let placed = hosts.as_ref().map(|h| hosts::place(h, n));
    let coordinator = match &placed {
        Some(placed) => {
            let port = r
                .port
                .unwrap_or_else(|| launch::port_of(&std::process::id().to_string()));
            // `user@host` is ssh's: the other ranks reach the host itself.
            hosts::coordinator(placed[0], port)
        }
        None => {
            let port = match r.port {
                Some(p) => p,
                None => std::net::UdpSocket::bind("127.0.0.1:0")
                    .and_then(|s| s.local_addr())
                    .map_err(|e| format!("no free loopback port: {e}"))?
                    .port(),
            };
            format!("127.0.0.1:{port}")
        }
    };
    // The settings remote ranks get besides their place in the job.
    let settings: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("STRADS_")
                && ![
                    "STRADS_PROCESSES",
                    "STRADS_RANK",
                    "STRADS_SIZE",
                    "STRADS_COORDINATOR",
                    "STRADS_JOB_SECRET_FILE",
                    "STRADS_THREADS",
                ]
                .contains(&k.as_str())
        })
        .collect();
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let (program, args) = r.program.split_first().expect("clap requires the program");
    // With checkpoints, a job that loses a rank restarts from its checkpoint (up to
    // STRADS_RESTARTS times), and the driver's output is passed on without the lines the
    // lost runs printed already.
    let config = strads_runtime::config::get();
    let recover = config.checkpoint.is_some();
    let mut printed = 0u64;
    let mut attempt = 0usize;
    let statuses = loop {
        let coordinator = match (&placed, attempt) {
            (None, a) if a > 0 && r.port.is_none() => std::net::UdpSocket::bind("127.0.0.1:0")
                .and_then(|s| s.local_addr())
                .map(|a| format!("127.0.0.1:{}", a.port()))
                .map_err(|e| format!("no free loopback port: {e}"))?,
            _ => coordinator.clone(),
        };
        let mut ranks = Workers::default();
        let mut output = None;
        for rank in 0..n {
            let remote = placed.as_ref().map(|p| Remote {
                ssh: &ssh,
                host: p[rank],
                cwd: &cwd,
                settings: &settings,
            });
            let (mut child, relay) = launch::spawn_rank(&RankCommand {
                program,
                args,
                rank,
                size: n,
                coordinator: &coordinator,
                secret: secret.path(),
                threads: r.threads.map(|t| t as usize),
                inherit: rank == 0,
                pipe_stdout: rank == 0 && recover,
                resume: attempt > 0,
                remote,
            })?;
            if let Some(from) = child.stdout.take() {
                let skip = printed;
                output = Some(std::thread::spawn(move || {
                    let counted = AtomicU64::new(0);
                    output::forward_after(from, std::io::stdout(), false, skip, &counted);
                    counted.load(Ordering::Relaxed)
                }));
            }
            ranks.add(rank, (child, relay));
        }
        let statuses = wait_job(&mut ranks, r.grace);
        if let Some(o) = output {
            printed = printed.max(o.join().unwrap_or(0));
        }
        let lost = statuses.iter().any(|(rank, s)| match s {
            Some(s) if !s.success() => {
                *rank != 0 || s.signal().is_some() || s.code() == Some(EXIT_RESUMABLE)
            }
            _ => false,
        });
        if !(recover && lost && attempt < config.restarts) {
            break statuses;
        }
        attempt += 1;
        for (rank, s) in &statuses {
            if let Some(s) = s.filter(|s| !s.success()) {
                eprintln!("strads: rank {rank} {}", spawn::describe(s));
            }
        }
        eprintln!(
            "strads: restarting every rank from the newest checkpoint in {} (restart {attempt} \
             of {})",
            config.checkpoint.as_ref().expect("recover").display(),
            config.restarts
        );
    };
    let mut code = 0u8;
    for (rank, s) in &statuses {
        match s {
            Some(s) if s.success() => {}
            Some(s) => {
                eprintln!("strads: rank {rank} {}", spawn::describe(*s));
                let c = spawn::exit_code(*s).clamp(1, 255) as u8;
                if *rank == 0 || code == 0 {
                    code = c;
                }
            }
            // Killed after the grace period: not the cause.
            None => {}
        }
    }
    Ok(code)
}
