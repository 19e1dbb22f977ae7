//! Thread pools: one owned rayon pool per worker count, made on first use; the calling
//! thread is a loop's worker 0, the pool's threads the others.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};

thread_local! {
    static THREADS: Cell<Option<usize>> = const { Cell::new(None) };
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// The worker count from `STRADS_THREADS`, or the machine's available cores.
pub fn default_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| match threads_from_env() {
        Ok(Some(n)) => n,
        Ok(None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Err(e) => panic!("{e}"),
    })
}

fn threads_from_env() -> Result<Option<usize>> {
    let Ok(v) = std::env::var("STRADS_THREADS") else {
        return Ok(None);
    };
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(Error::Setting {
            name: "STRADS_THREADS".into(),
            value: v,
            expected: "a whole number of threads, at least 1".into(),
        }),
    }
}

/// The worker count parallel loops started from this thread use now.
pub fn current_threads() -> usize {
    THREADS.with(|t| t.get()).unwrap_or_else(default_threads)
}

/// Runs `f` with parallel loops started from this thread using `n` workers (at least 1),
/// whatever `STRADS_THREADS` says.
///
/// ```
/// let n = strads_runtime::with_threads(3, strads_runtime::current_threads);
/// assert_eq!(n, 3);
/// ```
pub fn with_threads<R>(n: usize, f: impl FnOnce() -> R) -> R {
    let prev = THREADS.with(|t| t.replace(Some(n.max(1))));
    let _restore = Restore(move || THREADS.with(|t| t.set(prev)));
    f()
}

/// Runs a closure on drop, so thread-local settings come back even after a panic.
pub(crate) struct Restore<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for Restore<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// A pool of `n` threads and the lock its users take turns with.
type Pool = (rayon::ThreadPool, Mutex<()>);

/// Runs `f` on the pool with `n` threads, alone: a parallel loop's workers wait for one
/// another (ring, pipeline, barriers), so two loops interleaving their jobs on the same
/// threads, in different orders per thread, could wait for each other forever.
pub(crate) fn with_pool<R>(n: usize, f: impl FnOnce(&rayon::ThreadPool) -> R) -> R {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<Pool>>>> = OnceLock::new();
    let pool = {
        let mut pools = POOLS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        pools
            .entry(n)
            .or_insert_with(|| {
                let threads = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    // The caller is worker 0 (see `broadcast`).
                    .thread_name(|i| format!("strads-worker-{}", i + 1))
                    .build()
                    .unwrap_or_else(|e| panic!("strads: cannot start {n} worker threads: {e}"));
                Arc::new((threads, Mutex::new(())))
            })
            .clone()
    };
    let _turn = pool.1.lock().unwrap_or_else(|e| e.into_inner());
    f(&pool.0)
}

/// Runs `f(w)` for every worker `w` in `0..n` at once: worker 0 on the calling thread,
/// the others one each on the `n - 1` threads of a pool, which the call has alone (see
/// [`with_pool`]). The caller works instead of waiting, so a call wakes `n - 1` threads,
/// not `n`, and the caller's core is never left idle while two woken workers share the
/// other (what `perf sched` showed for short MovieLens epochs). Results in worker order; a
/// panic in any worker reaches the caller once every worker has returned.
pub(crate) fn broadcast<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    if n <= 1 {
        return vec![f(0)];
    }
    with_pool(n - 1, |pool| {
        let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
        pool.in_place_scope(|s| {
            s.spawn_broadcast(|_, ctx| {
                let w = ctx.index() + 1;
                let r = f(w);
                *slots[w].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
            let r = f(0);
            *slots[0].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        });
        slots
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every worker returned")
            })
            .collect()
    })
}

/// Whether this thread is running a parallel loop's block (a loop called from inside
/// another loop's body then runs on this worker alone).
pub(crate) fn in_worker() -> bool {
    IN_WORKER.with(|w| w.get())
}

/// Marks this thread as a worker while `f` runs.
pub(crate) fn as_worker<R>(f: impl FnOnce() -> R) -> R {
    let prev = IN_WORKER.with(|w| w.replace(true));
    let _restore = Restore(move || IN_WORKER.with(|w| w.set(prev)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_threads_nests_and_restores() {
        let outer = current_threads();
        with_threads(2, || {
            assert_eq!(current_threads(), 2);
            with_threads(0, || assert_eq!(current_threads(), 1));
            assert_eq!(current_threads(), 2);
        });
        assert_eq!(current_threads(), outer);
    }
}
