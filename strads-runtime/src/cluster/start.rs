//! Starting this process's part of a cluster job: who it is (`launch`), the job secret,
//! the transport (`net`), and for `STRADS_PROCESSES` the worker processes.

#[cfg(feature = "cluster")]
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::launch::{self, Children, Role, Workers};
use super::session::Session;
#[cfg(feature = "cluster")]
use super::{
    launch::SecretFile,
    net::{self, NetConfig},
};

/// The workers of `STRADS_PROCESSES`.
struct Spawned {
    workers: Workers,
}

impl Children for Spawned {
    fn kill_all(&mut self) {
        self.workers.kill_all();
    }

    fn wait_all(&mut self, timeout: Duration) -> bool {
        self.workers
            .wait_all(timeout)
            .iter()
            .all(|(_, s)| s.is_some())
    }

    fn failed(&mut self) -> Option<(usize, String)> {
        self.workers
            .try_failed()
            .map(|(rank, s)| (rank, format!("its process {}", launch::spawn::describe(s))))
    }
}

#[cfg(feature = "cluster")]
fn resolve(coordinator: &str) -> Result<SocketAddr, String> {
    coordinator
        .to_socket_addrs()
        .map_err(|e| format!("STRADS_COORDINATOR {coordinator:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("STRADS_COORDINATOR {coordinator:?} resolves to no address"))
}

/// The session of this process: `None` when it runs alone.
pub(crate) fn start() -> Result<Option<Session>, String> {
    // A bad setting is the program's to report (`config::check`, or its first loop):
    // nothing starts.
    if crate::config::check().is_err() {
        return Ok(None);
    }
    let cfg = crate::config::get();
    let role = launch::detect(cfg, &|name| std::env::var(name).ok())?;
    let threads = crate::pool::current_threads();
    match role {
        Role::Single => Ok(None),
        #[cfg(not(feature = "cluster"))]
        other => Err(without_cluster(&other)),
        #[cfg(feature = "cluster")]
        Role::Spawner { processes } => {
            if cfg.checkpoint.is_some() {
                // A lost rank restarts the job: its output is counted from here on.
                super::restart::watch_output();
            }
            let secret_file = SecretFile::create()?;
            let secret = launch::read_secret(secret_file.path())?;
            let coordinator: SocketAddr = "127.0.0.1:0".parse().expect("an address");
            let listening =
                net::listen(NetConfig::new(0, processes, coordinator, *secret.bytes()))?;
            let at = listening.local_addr().to_string();
            let mut workers = Workers::spawn(processes, &at, secret_file.path())?;
            let net = match listening.join() {
                Ok(n) => n,
                Err(e) => {
                    // Say how the workers ended, if they did.
                    let ended: Vec<String> = workers
                        .wait_all(Duration::from_millis(200))
                        .into_iter()
                        .filter_map(|(r, s)| {
                            s.map(|s| format!("rank {r} {}", launch::spawn::describe(s)))
                        })
                        .collect();
                    workers.kill_all();
                    return Err(if ended.is_empty() {
                        e
                    } else {
                        format!("{e}; {}", ended.join(", "))
                    });
                }
            };
            // Every worker has read the secret and connected with it: the file goes now
            // (the session lives until the process exits, and would never drop it).
            drop(secret_file);
            let children = Spawned { workers };
            Ok(Some(Session::new(
                0,
                processes,
                threads,
                Box::new(net),
                Some(Box::new(children)),
            )))
        }
        #[cfg(feature = "cluster")]
        Role::Member(layout) => {
            let path = cfg.job_secret_file.as_ref().ok_or(
                "this process is one rank of a job, but STRADS_JOB_SECRET_FILE is not set: \
                 give every rank the same secret file (only you may read it), e.g. \
                 `head -c 32 /dev/urandom > ~/.strads-secret; chmod 600 ~/.strads-secret`",
            )?;
            let secret = launch::read_secret(path)?;
            let coordinator = resolve(&layout.coordinator)?;
            let net = net::listen(NetConfig::new(
                layout.rank,
                layout.size,
                coordinator,
                *secret.bytes(),
            ))?
            .join()?;
            if layout.rank != 0 {
                discard_stdout();
            }
            Ok(Some(Session::new(
                layout.rank,
                layout.size,
                threads,
                Box::new(net),
                None,
            )))
        }
    }
}

/// Built without the feature `cluster`: what asked for a job, and how to enable it.
#[cfg_attr(feature = "cluster", allow(dead_code))]
fn without_cluster(role: &Role) -> String {
    let what = match role {
        Role::Spawner { processes } => {
            format!("STRADS_PROCESSES={processes} asks for a job of {processes} processes")
        }
        _ => "this process is one rank of a cluster job (a launcher or scheduler set its rank)"
            .into(),
    };
    format!(
        "{what}, but this program was built with strads' threads-only build: enable strads' \
         `cluster` feature (on by default; with `default-features = false`, add \
         `features = [\"cluster\"]` to strads in Cargo.toml), or unset the cluster settings to \
         run on this machine's threads"
    )
}

/// A worker's standard output is discarded: the program's output is the driver's.
#[cfg(feature = "cluster")]
fn discard_stdout() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = std::io::Write::flush(&mut std::io::stdout());
        // SAFETY: `dup2` on two descriptors this process owns (its stdout and a file it
        // just opened); it replaces descriptor 1 atomically.
        let _ = unsafe { nix::libc::dup2(null.as_raw_fd(), 1) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_setting_in_a_threads_only_build_says_how_to_enable_the_feature() {
        let e = without_cluster(&Role::Spawner { processes: 2 });
        assert!(
            e.starts_with("STRADS_PROCESSES=2 asks for a job of 2 processes"),
            "{e}"
        );
        assert!(e.contains("enable strads' `cluster` feature"), "{e}");
        assert!(e.contains("features = [\"cluster\"]"), "{e}");
    }
}
