//! Starting ranks as processes: copies of this program (`STRADS_PROCESSES`) or of any
//! program (`strads run`), with their rank in the environment, their standard output
//! discarded and each line of their standard error prefixed `[rank r] `.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How to start one rank.
#[derive(Debug, Clone)]
pub struct RankCommand<'a> {
    pub program: &'a OsStr,
    pub args: &'a [OsString],
    pub rank: usize,
    pub size: usize,
    pub coordinator: &'a str,
    pub secret: &'a Path,
    /// `STRADS_THREADS` for it, when given.
    pub threads: Option<usize>,
    /// Its standard output and error go to ours unchanged (the driver of `strads run`);
    /// otherwise its output is discarded and its error lines prefixed.
    pub inherit: bool,
    /// With `inherit`, its standard output comes through a pipe (`Child::stdout`) instead:
    /// a launcher that may restart the job passes it on without the lines printed already.
    pub pipe_stdout: bool,
    /// It resumes from the job's checkpoint (`STRADS_RESUME=1`): a restarted job.
    pub resume: bool,
    /// Started on another host over ssh instead of here.
    pub remote: Option<Remote<'a>>,
}

/// Where and how a rank starts on another host.
#[derive(Debug, Clone)]
pub struct Remote<'a> {
    /// The ssh program and its options, e.g. `["ssh", "-o", "BatchMode=yes"]`; the host
    /// and a shell command line follow them.
    pub ssh: &'a [String],
    pub host: &'a str,
    /// The directory the rank runs in when it exists there (the launcher's).
    pub cwd: &'a Path,
    /// Other `STRADS_*` settings the rank gets.
    pub settings: &'a [(String, String)],
}

/// `s` quoted for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The shell command line a remote rank runs: it reads the job secret (`secret_len`
/// bytes) from its standard input into a new file only the user can read, runs the
/// program with its place in the job, removes the file and exits with the program's
/// status.
pub fn remote_script(
    c: &RankCommand<'_>,
    r: &Remote<'_>,
    secret_len: usize,
) -> Result<String, String> {
    let text = |s: &OsStr, what: &str| {
        s.to_str()
            .map(quote)
            .ok_or_else(|| format!("{what} {s:?} is not UTF-8: it cannot go to another host"))
    };
    let mut env = vec![
        format!("STRADS_RANK={}", c.rank),
        format!("STRADS_SIZE={}", c.size),
        format!("STRADS_COORDINATOR={}", quote(c.coordinator)),
        "STRADS_JOB_SECRET_FILE=\"$d/secret\"".to_string(),
    ];
    if let Some(t) = c.threads {
        env.push(format!("STRADS_THREADS={t}"));
    }
    for (k, v) in r.settings {
        env.push(format!("{k}={}", quote(v)));
    }
    if c.resume {
        env.push("STRADS_RESUME=1".into());
    }
    let mut program = vec![text(c.program, "the program")?];
    for a in c.args {
        program.push(text(a, "the argument")?);
    }
    let cwd = text(r.cwd.as_os_str(), "the directory")?;
    Ok(format!(
        "umask 077 && d=$(mktemp -d \"${{TMPDIR:-/tmp}}/strads-job.XXXXXX\") && \
         head -c {secret_len} > \"$d/secret\" && {{ cd {cwd} 2>/dev/null; {} {} </dev/null; \
         s=$?; rm -rf \"$d\"; exit $s; }}",
        env.join(" "),
        program.join(" ")
    ))
}

/// A spawn request: the command, and where its child goes back.
type SpawnRequest = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Starts `cmd` from a thread that lives as long as this process. A child's death signal
/// (`PR_SET_PDEATHSIG`) fires when the *thread* that forked it ends, not the process: a
/// program whose first call runs on a thread it spawned would lose its workers when that
/// thread ended.
pub(crate) fn spawn_kept(cmd: Command) -> std::io::Result<Child> {
    use std::sync::{Mutex, OnceLock, mpsc};
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        // The sender stays in the static, so the loop never ends: the thread lives until
        // the process exits.
        let started = std::thread::Builder::new()
            .name("strads-spawner".into())
            .spawn(move || {
                for (mut cmd, back) in rx {
                    let _ = back.send(cmd.spawn());
                }
            });
        if let Err(e) = started {
            crate::log::say!(
                Error,
                "strads: cannot start the thread that starts workers: {e}"
            );
        }
        Mutex::new(tx)
    });
    let (back, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, back))
        .map_err(|_| std::io::Error::other("the thread that starts workers is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the thread that starts workers is gone"))?
}

/// Starts one rank; returns the child and the thread relaying its standard error.
pub fn spawn_rank(c: &RankCommand<'_>) -> Result<(Child, Option<JoinHandle<()>>), String> {
    let mut cmd;
    let mut secret = None;
    if let Some(r) = &c.remote {
        let (ssh, opts) = r.ssh.split_first().ok_or("an empty ssh command")?;
        let bytes = std::fs::read(c.secret)
            .map_err(|e| format!("cannot read the job secret {}: {e}", c.secret.display()))?;
        cmd = Command::new(ssh);
        cmd.args(opts)
            .arg(r.host)
            .arg(remote_script(c, r, bytes.len())?)
            .stdin(Stdio::piped());
        secret = Some(bytes);
    } else {
        cmd = Command::new(c.program);
        cmd.args(c.args)
            .env_remove("STRADS_PROCESSES")
            .env("STRADS_RANK", c.rank.to_string())
            .env("STRADS_SIZE", c.size.to_string())
            .env("STRADS_COORDINATOR", c.coordinator)
            .env("STRADS_JOB_SECRET_FILE", c.secret)
            .stdin(Stdio::null());
        if let Some(t) = c.threads {
            cmd.env("STRADS_THREADS", t.to_string());
        }
        if c.resume {
            cmd.env("STRADS_RESUME", "1");
        }
    }
    if !c.inherit {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    } else if c.pipe_stdout {
        cmd.stdout(Stdio::piped());
    }
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // `prctl(PR_SET_PDEATHSIG)`, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let what = match &c.remote {
        Some(r) => format!(
            "{} on {} through {}",
            Path::new(c.program).display(),
            r.host,
            r.ssh.join(" ")
        ),
        None => Path::new(c.program).display().to_string(),
    };
    let mut child =
        spawn_kept(cmd).map_err(|e| format!("cannot start rank {} ({what}): {e}", c.rank))?;
    if let (Some(bytes), Some(mut stdin)) = (secret, child.stdin.take()) {
        // The secret goes through ssh's encrypted channel; a rank that does not get it
        // fails to join, which the launcher reports.
        let _ = stdin.write_all(&bytes);
    }
    let relay = child.stderr.take().map(|err| {
        let rank = c.rank;
        std::thread::Builder::new()
            .name(format!("strads-stderr-{rank}"))
            .spawn(move || relay(rank, err))
            .expect("a thread for a rank's standard error")
    });
    Ok((child, relay))
}

/// Copies `from` to our standard error line by line, each prefixed `[rank r] `.
fn relay(rank: usize, from: impl std::io::Read) {
    let mut r = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                let mut out = std::io::stderr().lock();
                let _ = write!(out, "[rank {rank}] ");
                let _ = out.write_all(&line);
            }
        }
    }
}

/// How a process ended, in words.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// The exit code that reports `status` (128 + the signal for a signal).
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Ranks this process started; every one still running is killed and reaped on drop.
#[derive(Debug, Default)]
pub struct Workers {
    children: Vec<(usize, Child)>,
    relays: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts ranks `1..processes` as copies of this program with its arguments.
    pub fn spawn(processes: usize, coordinator: &str, secret: &Path) -> Result<Workers, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this program's file to start workers: {e}"))?;
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        let mut w = Workers::default();
        for rank in 1..processes {
            w.add(
                rank,
                spawn_rank(&RankCommand {
                    program: exe.as_os_str(),
                    args: &args,
                    rank,
                    size: processes,
                    coordinator,
                    secret,
                    threads: None,
                    inherit: false,
                    pipe_stdout: false,
                    resume: false,
                    remote: None,
                })?,
            );
        }
        Ok(w)
    }

    /// Adds a started rank.
    pub fn add(&mut self, rank: usize, (child, relay): (Child, Option<JoinHandle<()>>)) {
        self.children.push((rank, child));
        self.relays.extend(relay);
    }

    /// The process ids, by rank.
    pub fn pids(&self) -> Vec<(usize, u32)> {
        self.children.iter().map(|(r, c)| (*r, c.id())).collect()
    }

    /// A rank that ended with failure, if any (without waiting).
    pub fn try_failed(&mut self) -> Option<(usize, ExitStatus)> {
        self.children
            .iter_mut()
            .find_map(|(r, c)| match c.try_wait() {
                Ok(Some(s)) if !s.success() => Some((*r, s)),
                _ => None,
            })
    }

    /// Waits up to `timeout` for every rank to end; their statuses, or `None` for those
    /// still running.
    pub fn wait_all(&mut self, timeout: Duration) -> Vec<(usize, Option<ExitStatus>)> {
        let end = Instant::now() + timeout;
        loop {
            let st: Vec<(usize, Option<ExitStatus>)> = self
                .children
                .iter_mut()
                .map(|(r, c)| (*r, c.try_wait().ok().flatten()))
                .collect();
            if st.iter().all(|(_, s)| s.is_some()) || Instant::now() >= end {
                return st;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills every rank still running and reaps them all.
    pub fn kill_all(&mut self) {
        for (_, c) in &mut self.children {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
        for r in self.relays.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.kill_all();
    }
}
