//! Every `STRADS_*` environment setting, read and checked in one place, once.
//!
//! | variable | accepted values | default |
//! |---|---|---|
//! | `STRADS_THREADS` | a whole number from 1 to [`MAX_THREADS`] | the available cores |
//! | `STRADS_SERIAL` | a boolean | off |
//! | `STRADS_EXPLAIN` | a boolean | off |
//! | `STRADS_SPLIT` | a boolean | on |
//! | `STRADS_COST` | a boolean: off always runs the plan instead of the serial loop when the plan cannot pay | on |
//! | `STRADS_AFFINITY` | a boolean | on |
//! | `STRADS_PARTITION` | `balanced` (also `histogram`) or `uniform` | `balanced` |
//! | `STRADS_PROCESSES` | a whole number from 1 to [`MAX_PROCESSES`]: run as that many processes on this machine | 1 |
//! | `STRADS_RANK`, `STRADS_SIZE` | this process's rank in a cluster job, and the job's size (both or neither) | from the launcher |
//! | `STRADS_COORDINATOR` | `host:port` where rank 0 listens | from the launcher |
//! | `STRADS_JOB_SECRET_FILE` | a file only the user can read, holding the job's secret | made by the launcher |
//! | `STRADS_CHECKPOINT` | a directory: checkpoints after calls go there ([`crate::resume`]) | none |
//! | `STRADS_CHECKPOINT_SECONDS` | seconds (a number, 0 or more) at least between two checkpoints | 60 |
//! | `STRADS_RESUME` | a boolean: resume from the newest complete checkpoint in `STRADS_CHECKPOINT` | off |
//! | `STRADS_RESTARTS` | a whole number from 0 to [`MAX_RESTARTS`]: how often a job whose rank died restarts from its checkpoint | 3 |
//!
//! A boolean is one of `1`, `true`, `yes`, `on` (on) or `0`, `false`, `no`, `off` (off),
//! in any case. Surrounding whitespace is ignored, and an unset or empty variable means
//! its default. Anything else is an error naming the variable, its value and what is
//! accepted: [`check`] returns it (call it first thing in `main` to report it like the
//! program's other errors); a loop that meets a bad setting without that check prints the
//! same message to stderr once and ends the process with exit status 2, rather than
//! guess a default or panic inside the pool.
//!
//! A `STRADS_` variable that is none of these (a misspelling such as `STRADS_THREAD`) is
//! not an error, but the first [`check`] or [`get`] prints one warning to stderr naming it
//! and listing the known ones ([`unknown_warning`]).
//!
//! ```
//! // With no STRADS_* variables set (or valid ones), the check passes.
//! # if std::env::vars().all(|(k, _)| !k.starts_with("STRADS_")) {
//! strads_runtime::config::check()?;
//! assert!(strads_runtime::config::get().split);
//! # }
//! # Ok::<(), strads_runtime::Error>(())
//! ```

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::sync::{Once, OnceLock};

use crate::error::{Error, Result};

/// The most worker threads `STRADS_THREADS` (and the examples' `--threads`) may ask for.
pub const MAX_THREADS: usize = 1024;

/// The most processes `STRADS_PROCESSES` (and `strads run -n`) may ask for.
pub const MAX_PROCESSES: usize = 4096;

/// The most restarts `STRADS_RESTARTS` may allow.
pub const MAX_RESTARTS: usize = 1000;

/// What a boolean setting accepts, for error messages.
pub const BOOLEAN: &str = "1, true, yes, on (on) or 0, false, no, off (off), in any case; \
     empty or unset for the default";

/// How sparse iteration spaces are cut into partitions (`STRADS_PARTITION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitioning {
    /// Histogram boundaries: equal iteration counts per partition (the default).
    Balanced,
    /// Equal id ranges, for comparisons.
    Uniform,
}

/// The checked `STRADS_*` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `STRADS_THREADS`: the worker count asked for, `None` for the available cores.
    pub threads: Option<usize>,
    /// `STRADS_SERIAL`: run every annotated loop as the original serial loop.
    pub serial: bool,
    /// `STRADS_EXPLAIN`: print each loop's plan once to stderr.
    pub explain: bool,
    /// `STRADS_SPLIT`: reconnaissance may split components too large for one worker.
    pub split: bool,
    /// `STRADS_COST`: a call whose plan cannot beat the serial loop runs the serial loop
    /// (`exec::cost`).
    pub cost: bool,
    /// `STRADS_AFFINITY`: strads may keep its pool threads off the caller's core.
    pub affinity: bool,
    /// `STRADS_PARTITION`: how sparse spaces are partitioned.
    pub partition: Partitioning,
    /// `STRADS_PROCESSES`: processes to run as on this machine (the cluster's launcher).
    pub processes: Option<usize>,
    /// `STRADS_RANK` and `STRADS_SIZE`: this process's place in a cluster job.
    pub rank: Option<(usize, usize)>,
    /// `STRADS_COORDINATOR`: `host:port` of rank 0.
    pub coordinator: Option<String>,
    /// `STRADS_JOB_SECRET_FILE`: the job's secret.
    pub job_secret_file: Option<std::path::PathBuf>,
    /// `STRADS_CHECKPOINT`: where checkpoints go (none: no checkpoints).
    pub checkpoint: Option<std::path::PathBuf>,
    /// `STRADS_CHECKPOINT_SECONDS`: the least time between two checkpoints.
    pub checkpoint_every: std::time::Duration,
    /// `STRADS_RESUME`: resume from the newest complete checkpoint.
    pub resume: bool,
    /// `STRADS_RESTARTS`: restarts of a job whose rank died, with checkpoints on.
    pub restarts: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: None,
            serial: false,
            explain: false,
            split: true,
            cost: true,
            affinity: true,
            partition: Partitioning::Balanced,
            processes: None,
            rank: None,
            coordinator: None,
            job_secret_file: None,
            checkpoint: None,
            checkpoint_every: std::time::Duration::from_secs(60),
            resume: false,
            restarts: 3,
        }
    }
}

impl Config {
    /// Reads the settings through `var` (a variable's value, `None` when unset); the first
    /// bad one, in the order of the table above, is the error.
    ///
    /// ```
    /// use strads_runtime::config::Config;
    /// let c = Config::from_lookup(|name| (name == "STRADS_THREADS").then(|| "3".into())).unwrap();
    /// assert_eq!(c.threads, Some(3));
    /// let e = Config::from_lookup(|name| (name == "STRADS_SERIAL").then(|| "maybe".into()));
    /// assert!(e.unwrap_err().to_string().starts_with("invalid setting STRADS_SERIAL=\"maybe\""));
    /// ```
    pub fn from_lookup(var: impl Fn(&str) -> Option<OsString>) -> Result<Config> {
        let d = Config::default();
        let value = |name: &str| -> Option<(String, String)> {
            let raw = var(name)?;
            let text = raw.to_string_lossy().into_owned();
            let trimmed = text.trim().to_owned();
            (!trimmed.is_empty()).then_some((text, trimmed))
        };
        let bad = |name: &str, value: String, expected: &str| Error::Setting {
            name: name.to_owned(),
            value,
            expected: expected.to_owned(),
        };
        let boolean = |name: &str, default: bool| -> Result<bool> {
            let Some((text, v)) = value(name) else {
                return Ok(default);
            };
            match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(bad(name, text, BOOLEAN)),
            }
        };
        let threads = match value("STRADS_THREADS") {
            None => None,
            Some((text, v)) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_THREADS).contains(&n) => Some(n),
                _ => {
                    return Err(bad(
                        "STRADS_THREADS",
                        text,
                        &format!(
                            "a whole number of worker threads from 1 to {MAX_THREADS}; empty \
                             or unset for the available cores"
                        ),
                    ));
                }
            },
        };
        let serial = boolean("STRADS_SERIAL", d.serial)?;
        let explain = boolean("STRADS_EXPLAIN", d.explain)?;
        let split = boolean("STRADS_SPLIT", d.split)?;
        let cost = boolean("STRADS_COST", d.cost)?;
        let affinity = boolean("STRADS_AFFINITY", d.affinity)?;
        let partition = match value("STRADS_PARTITION") {
            None => d.partition,
            Some((text, v)) => match v.to_ascii_lowercase().as_str() {
                "balanced" | "histogram" => Partitioning::Balanced,
                "uniform" => Partitioning::Uniform,
                _ => {
                    return Err(bad(
                        "STRADS_PARTITION",
                        text,
                        "balanced (or histogram: equal iteration counts, the default) or \
                         uniform (equal id ranges), in any case; empty or unset for the default",
                    ));
                }
            },
        };
        let whole = |name: &str, lo: usize, hi: usize, what: &str| -> Result<Option<usize>> {
            match value(name) {
                None => Ok(None),
                Some((text, v)) => match v.parse::<usize>() {
                    Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                    _ => Err(bad(name, text, what)),
                },
            }
        };
        let processes = whole(
            "STRADS_PROCESSES",
            1,
            MAX_PROCESSES,
            &format!(
                "a whole number of processes from 1 to {MAX_PROCESSES}; empty or unset for one"
            ),
        )?;
        let rank = whole(
            "STRADS_RANK",
            0,
            MAX_PROCESSES - 1,
            "this process's rank in the job, a whole number from 0 to STRADS_SIZE - 1",
        )?;
        let size = whole(
            "STRADS_SIZE",
            1,
            MAX_PROCESSES,
            &format!("the job's number of processes, from 1 to {MAX_PROCESSES}"),
        )?;
        let rank = match (rank, size) {
            (None, None) => None,
            (Some(r), Some(n)) if r < n => Some((r, n)),
            (Some(r), Some(n)) => {
                return Err(bad(
                    "STRADS_RANK",
                    r.to_string(),
                    &format!("a rank below STRADS_SIZE={n}"),
                ));
            }
            (Some(r), None) => {
                return Err(bad(
                    "STRADS_RANK",
                    r.to_string(),
                    "a rank together with STRADS_SIZE (both or neither)",
                ));
            }
            (None, Some(n)) => {
                return Err(bad(
                    "STRADS_SIZE",
                    n.to_string(),
                    "a size together with STRADS_RANK (both or neither)",
                ));
            }
        };
        let coordinator = match value("STRADS_COORDINATOR") {
            None => None,
            Some((text, v)) => {
                let ok = v
                    .rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
                if !ok {
                    return Err(bad(
                        "STRADS_COORDINATOR",
                        text,
                        "host:port of rank 0 (a host name or address, a port from 1 to 65535)",
                    ));
                }
                Some(v)
            }
        };
        let job_secret_file = value("STRADS_JOB_SECRET_FILE").map(|(_, v)| v.into());
        let checkpoint = value("STRADS_CHECKPOINT").map(|(_, v)| v.into());
        let checkpoint_every = match value("STRADS_CHECKPOINT_SECONDS") {
            None => d.checkpoint_every,
            Some((text, v)) => match v.parse::<f64>() {
                Ok(s) if s.is_finite() && (0.0..=1e9).contains(&s) => {
                    std::time::Duration::from_secs_f64(s)
                }
                _ => {
                    return Err(bad(
                        "STRADS_CHECKPOINT_SECONDS",
                        text,
                        "the least seconds between two checkpoints, a number from 0 (after \
                         every call that changed arrays) to 1e9; empty or unset for 60",
                    ));
                }
            },
        };
        let resume = boolean("STRADS_RESUME", d.resume)?;
        let restarts = whole(
            "STRADS_RESTARTS",
            0,
            MAX_RESTARTS,
            &format!("a whole number of restarts from 0 to {MAX_RESTARTS}; empty or unset for 3"),
        )?
        .unwrap_or(d.restarts);
        Ok(Config {
            threads,
            serial,
            explain,
            split,
            cost,
            affinity,
            partition,
            processes,
            rank,
            coordinator,
            job_secret_file,
            checkpoint,
            checkpoint_every,
            resume,
            restarts,
        })
    }
}

/// Every `STRADS_*` variable strads reads.
pub const KNOWN: [&str; 16] = [
    "STRADS_THREADS",
    "STRADS_SERIAL",
    "STRADS_EXPLAIN",
    "STRADS_SPLIT",
    "STRADS_COST",
    "STRADS_AFFINITY",
    "STRADS_PARTITION",
    "STRADS_PROCESSES",
    "STRADS_RANK",
    "STRADS_SIZE",
    "STRADS_COORDINATOR",
    "STRADS_JOB_SECRET_FILE",
    "STRADS_CHECKPOINT",
    "STRADS_CHECKPOINT_SECONDS",
    "STRADS_RESUME",
    "STRADS_RESTARTS",
];

/// The warning for the variables among `names` that start with `STRADS_` but are not in
/// [`KNOWN`] (misspellings, which would otherwise be ignored without a word), naming them
/// in sorted order and listing the known ones; `None` when there are none.
///
/// ```
/// use strads_runtime::config::unknown_warning;
/// let w = unknown_warning(["PATH", "STRADS_THREAD", "STRADS_SERIAL"]).unwrap();
/// assert!(w.starts_with("warning: unknown setting STRADS_THREAD is ignored; the known"));
/// assert_eq!(unknown_warning(["STRADS_THREADS", "HOME"]), None);
/// ```
pub fn unknown_warning<S: AsRef<OsStr>>(names: impl IntoIterator<Item = S>) -> Option<String> {
    let mut unknown: Vec<String> = names
        .into_iter()
        .map(|n| n.as_ref().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("STRADS_") && !KNOWN.contains(&n.as_str()))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    unknown.sort();
    unknown.dedup();
    let (noun, verb) = if unknown.len() == 1 {
        ("setting", "is")
    } else {
        ("settings", "are")
    };
    Some(format!(
        "warning: unknown {noun} {} {verb} ignored; the known settings are {}",
        unknown.join(", "),
        KNOWN.join(", ")
    ))
}

/// The settings of this process, read from the environment on first use (when the
/// environment also holds unknown `STRADS_*` variables, warning about them once).
fn cell() -> &'static Result<Config> {
    static CONFIG: OnceLock<Result<Config>> = OnceLock::new();
    CONFIG.get_or_init(|| {
        if let Some(w) = unknown_warning(std::env::vars_os().map(|(k, _)| k)) {
            // Straight to the stream, as in `get`: a test harness's capture would drop it.
            let _ = writeln!(std::io::stderr(), "{w}");
        }
        Config::from_lookup(|name| std::env::var_os(name))
    })
}

/// Checks every `STRADS_*` setting of this process (read once; later calls return the
/// same answer).
///
/// # Errors
/// [`Error::Setting`] for the first bad setting, naming the variable, its value and what
/// is accepted.
pub fn check() -> Result<()> {
    match cell() {
        Ok(_) => Ok(()),
        Err(Error::Setting {
            name,
            value,
            expected,
        }) => Err(Error::Setting {
            name: name.clone(),
            value: value.clone(),
            expected: expected.clone(),
        }),
        Err(e) => unreachable!("settings fail only with Error::Setting: {e}"),
    }
}

/// Set once this process became a cluster job's worker rank (`cluster::job`).
static WORKER_RANK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This process is a cluster job's worker rank from now on: it prints no plan, cost or
/// cluster lines under `STRADS_EXPLAIN` (the driver prints them for the job).
pub(crate) fn set_worker_rank() {
    WORKER_RANK.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process prints the explain lines of its loops: `STRADS_EXPLAIN` is on and
/// the process is not a worker rank.
pub(crate) fn explains() -> bool {
    (get().explain || crate::log::explain_wanted())
        && !WORKER_RANK.load(std::sync::atomic::Ordering::Relaxed)
}

/// The settings of this process. With a bad setting (see [`check`]) this prints
/// `error: <the error>` to stderr once and exits with status 2.
pub fn get() -> &'static Config {
    match cell() {
        Ok(c) => c,
        Err(e) => {
            static REPORTED: Once = Once::new();
            // Straight to the stream, not `eprintln!`: a test harness captures the macros'
            // output per test and would drop it when the process exits here.
            REPORTED.call_once(|| {
                let _ = writeln!(std::io::stderr(), "error: {e}");
            });
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests;
