//! Runs the calling test binary again as the program under test (`role_var=role`, with
//! `env` and `STRADS_EXPLAIN=1`, no `STRADS_*` of the caller's): its output and its explain
//! lines, or an error with both; and such a test's `main` (`main_of`) and the digest of
//! the bits it prints. Shared by the harness-less cluster tests.

use std::process::{Command, ExitCode, Stdio};

/// A harness-less test's `main`: the program under test when `role_var` is `program`,
/// else `check`, whose error is printed after `name`.
#[allow(dead_code)]
pub(crate) fn main_of(
    role_var: &str,
    name: &str,
    program: fn(),
    check: fn() -> Result<(), String>,
) -> ExitCode {
    main_of_roles(role_var, name, &[("program", program)], check)
}

/// A harness-less test's `main` with several programs: the one `role_var` names among
/// `roles`, else `check`, whose error is printed after `name`.
#[allow(dead_code)]
pub(crate) fn main_of_roles(
    role_var: &str,
    name: &str,
    roles: &[(&str, fn())],
    check: fn() -> Result<(), String>,
) -> ExitCode {
    let role = std::env::var(role_var).unwrap_or_default();
    if let Some((_, program)) = roles.iter().find(|(r, _)| *r == role) {
        program();
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check() {
        eprintln!("{name}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Bits of several values, as one number.
#[allow(dead_code)]
pub(crate) fn digest(parts: &[Vec<u64>]) -> u64 {
    parts
        .iter()
        .flatten()
        .fold(0u64, |s, &b| s.wrapping_mul(1_000_003).wrapping_add(b))
}

/// Runs this binary as `role` (see the module docs): its exit code (`None` when a signal
/// ended it), output and error; an error only when it cannot run or runs past [`LIMIT`]
/// (it is then killed).
#[allow(dead_code)]
pub(crate) fn run_self_status(
    role_var: &str,
    role: &str,
    env: &[(&str, &str)],
) -> Result<(Option<i32>, String, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    // What crosses is under test: every call runs its plan (small calls of a debug build
    // would otherwise be measured slower than the serial loop and run on the driver).
    cmd.env("STRADS_COST", "0")
        .env(role_var, role)
        .env("STRADS_EXPLAIN", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run: {e}"))?;
    // Both streams drain on threads of their own, so a child that fills a pipe never
    // blocks; the wait is bounded, and a child past it is killed (its worker ranks die
    // with it: they are started with the parent-death signal).
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let deadline = std::time::Instant::now() + LIMIT;
    let status = loop {
        match child.try_wait().map_err(|e| format!("cannot wait: {e}"))? {
            Some(status) => break Some(status),
            None if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Some(status) => Ok((status.code(), stdout, stderr)),
        None => Err(format!(
            "{env:?} ran past {} s and was killed:\n{stdout}\n{stderr}",
            LIMIT.as_secs()
        )),
    }
}

/// [`run_self_status`], an error naming `env` unless the run succeeds: its output and
/// error.
#[allow(dead_code)]
pub(crate) fn run_self(
    role_var: &str,
    role: &str,
    env: &[(&str, &str)],
) -> Result<(String, String), String> {
    match run_self_status(role_var, role, env)? {
        (Some(0), stdout, stderr) => Ok((stdout, stderr)),
        (code, stdout, stderr) => Err(format!("{env:?} failed ({code:?}):\n{stdout}\n{stderr}")),
    }
}

/// How long one run of the program may take (debug builds on 2 cores take seconds).
const LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `role` as `procs` processes of `threads` threads and as that many threads in one
/// process, each with `env` besides: an error unless both print the same `lines` lines;
/// the processes' error output (their explain lines) otherwise.
#[allow(dead_code)]
pub(crate) fn same_as_threads(
    role_var: &str,
    role: &str,
    (procs, threads): (usize, usize),
    env: &[(&str, &str)],
    lines: usize,
) -> Result<String, String> {
    let (p, t, workers) = (
        procs.to_string(),
        threads.to_string(),
        (procs * threads).to_string(),
    );
    let one_env: Vec<(&str, &str)> = [("STRADS_THREADS", workers.as_str())]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    let (one, _) = run_self(role_var, role, &one_env)?;
    let many_env: Vec<(&str, &str)> = [("STRADS_PROCESSES", p.as_str()), ("STRADS_THREADS", &t)]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    let (many, explain) = run_self(role_var, role, &many_env)?;
    if one.lines().count() != lines || many != one {
        return Err(format!(
            "{procs} x {threads}: processes print\n{many}\n{workers} threads print\n{one}"
        ));
    }
    Ok(explain)
}

/// The number after `prefix` on a line of `text`, if any.
#[allow(dead_code)]
pub(crate) fn figure(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// This process's peak resident memory (`VmHWM`), as `/proc` says it (kB).
#[allow(dead_code)]
pub(crate) fn peak_kb() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or("0")
        .to_string()
}
