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
    if std::env::var(role_var).as_deref() == Ok("program") {
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

pub(crate) fn run_self(
    role_var: &str,
    role: &str,
    env: &[(&str, &str)],
) -> Result<(String, String), String> {
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
    let out = cmd.output().map_err(|e| format!("cannot run: {e}"))?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if !out.status.success() {
        return Err(format!(
            "{env:?} failed ({}):\n{stdout}\n{stderr}",
            out.status
        ));
    }
    Ok((stdout, stderr))
}
