//! Runs a bench's own binary as the program under test, as one process of 2 threads or as
//! P processes of one thread (`STRADS_PROCESSES`, with `STRADS_EXPLAIN`'s memory lines),
//! and reads what it printed: the benches that compare memory per rank across layouts.

use std::process::{Command, Stdio};

/// The program's standard output and each rank's peak resident memory in MiB (the
/// driver's from its `driver_peak_kib=` field, the workers' from their memory lines), run
/// with `env` as `procs` processes (1: one process of 2 threads).
pub(crate) fn run_ranks(env: &[(&str, &str)], procs: usize) -> Result<(String, Vec<f64>), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied()).stdin(Stdio::null());
    if procs == 1 {
        cmd.env("STRADS_THREADS", "2");
    } else {
        cmd.env("STRADS_PROCESSES", procs.to_string())
            .env("STRADS_THREADS", "1")
            .env("STRADS_EXPLAIN", "1");
    }
    let out = cmd.output().map_err(|e| format!("cannot run: {e}"))?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if !out.status.success() {
        return Err(format!("{procs} processes failed:\n{stdout}\n{stderr}"));
    }
    let mut peaks = vec![field(&stdout, "driver_peak_kib").unwrap_or(0.0) / 1024.0];
    for r in 1..procs {
        let needle = format!("strads memory rank {r}: peak resident ");
        let mib = stderr
            .lines()
            .find_map(|l| {
                let at = l.find(&needle)? + needle.len();
                l[at..].split_whitespace().next()?.parse::<f64>().ok()
            })
            .ok_or_else(|| format!("no memory line of rank {r}:\n{stderr}"))?;
        peaks.push(mib);
    }
    Ok((stdout, peaks))
}

/// The number after `key=` in `text`, if any.
pub(crate) fn field(text: &str, key: &str) -> Option<f64> {
    let at = text.find(&format!("{key}="))? + key.len() + 1;
    text[at..].split_whitespace().next()?.parse().ok()
}

/// The line of `text` that starts with `result `.
pub(crate) fn result_line(text: &str) -> Result<String, String> {
    text.lines()
        .find(|l| l.starts_with("result "))
        .map(str::to_owned)
        .ok_or_else(|| format!("no result line:\n{text}"))
}

/// This process's peak resident memory (`VmHWM`), in KiB.
pub(crate) fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
}
