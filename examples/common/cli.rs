//! What the examples share around their command lines: flag value parsers whose errors
//! say what a flag expects (clap names the flag and the value), the check of the `STRADS_*`
//! settings, and a memory check before a model is allocated. Compiled into each example
//! through `#[path]`.

#![allow(dead_code)] // each example uses some of these

use std::process::ExitCode;

/// The worker threads the example's loops run on: 1 under `STRADS_SERIAL=1` (the serial
/// loops), else the current setting.
pub(crate) fn threads_used() -> usize {
    if strads::serial_mode() {
        1
    } else {
        strads::current_threads()
    }
}

/// The processes the program runs as: the cluster job's ranks, 1 alone (final lines say
/// it beside `threads=`, which counts each process's threads).
pub(crate) fn processes() -> usize {
    strads::cluster::rank_and_size().1
}

/// A whole number, at least 1.
pub(crate) fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number, at least 1".to_owned()),
    }
}

/// A number of rows, columns, features or words: 1 to 2^32 (indices are `u32`).
pub(crate) fn dim(s: &str) -> Result<usize, String> {
    let max = strads::generate::MAX_DIM;
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from 1 to {max}")),
    }
}

/// A seed: any whole number from 0 to 2^64 - 1.
pub(crate) fn seed(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a whole number from 0 to {}", u64::MAX))
}

/// A whole number, 0 or more.
pub(crate) fn whole(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| "expected a whole number, 0 or more".to_owned())
}

/// A number of worker threads: 1 to `strads::config::MAX_THREADS`.
pub(crate) fn threads(s: &str) -> Result<usize, String> {
    let max = strads::config::MAX_THREADS;
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of threads from 1 to {max}"
        )),
    }
}

fn number<T: std::str::FromStr + Copy + Into<f64>>(
    s: &str,
    ok: impl Fn(f64) -> bool,
    expected: &str,
) -> Result<T, String> {
    match s.trim().parse::<T>() {
        Ok(x) if ok(x.into()) => Ok(x),
        _ => Err(format!("expected {expected}")),
    }
}

/// A finite `f32` above 0 (learning rates).
pub(crate) fn positive_f32(s: &str) -> Result<f32, String> {
    number(s, |x| x.is_finite() && x > 0.0, "a finite number above 0")
}

/// A finite `f32`, 0 or more (regularisation, decay).
pub(crate) fn non_negative_f32(s: &str) -> Result<f32, String> {
    number(
        s,
        |x| x.is_finite() && x >= 0.0,
        "a finite number, 0 or more",
    )
}

/// A finite `f64`, 0 or more (sampling thresholds).
pub(crate) fn non_negative_f64(s: &str) -> Result<f64, String> {
    number(
        s,
        |x| x.is_finite() && x >= 0.0,
        "a finite number, 0 or more",
    )
}

/// A finite `f64` above 0 (priors, lengths).
pub(crate) fn positive_f64(s: &str) -> Result<f64, String> {
    number(s, |x| x.is_finite() && x > 0.0, "a finite number above 0")
}

/// An example's `main`: checks the `STRADS_*` settings (a bad one: exit status 2), parses
/// the flags (a bad one: clap's message, exit status 2), runs `train` on the worker threads
/// `threads` names (else `STRADS_THREADS`', or every core), and prints its error as
/// `error: ...` with exit status 1.
pub(crate) fn main<A: clap::Parser, E: std::fmt::Display>(
    threads: impl Fn(&A) -> Option<usize>,
    train: impl FnOnce(&A) -> Result<(), E>,
) -> ExitCode {
    if let Err(code) = check_settings() {
        return code;
    }
    let args = A::parse();
    let result = match threads(&args) {
        Some(n) => strads::with_threads(n, || train(&args)),
        None => train(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `STRADS_*` settings, checked before anything else: a bad one is printed like the
/// program's other errors and the program ends with status 2 (as for a bad flag).
fn check_settings() -> Result<(), ExitCode> {
    strads::config::check().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// Checks that `count` elements of `elem` bytes each can be allocated for `what` (a
/// reservation that is let go at once, untouched), so that a size beyond the machine is
/// an error instead of an abort.
pub(crate) fn check_memory(what: &str, count: Option<usize>, elem: usize) -> Result<(), String> {
    let bytes = count.and_then(|n| n.checked_mul(elem));
    let fail = || match bytes {
        Some(b) => format!("cannot allocate {b} bytes for {what}"),
        None => format!("cannot allocate {what}: its size overflows"),
    };
    let n = bytes
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(fail)?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(n).map_err(|_| fail())
}

/// The error of a training run whose `what` is not finite after `epoch`.
pub(crate) fn diverged(epoch: usize, what: &str, value: f64, advice: &str) -> String {
    format!("training diverged at epoch {epoch}: {what} is {value}; {advice}")
}
