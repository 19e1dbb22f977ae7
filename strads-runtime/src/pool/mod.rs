//! Thread pools: one owned rayon pool per worker count, made on first use; the calling
//! thread is a loop's worker 0, the pool's threads the others.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) mod prefetch;

thread_local! {
    static THREADS: Cell<Option<usize>> = const { Cell::new(None) };
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
    static LEASE: Cell<u64> = const { Cell::new(0) };
}

/// The worker count from `STRADS_THREADS`, or the machine's available cores (a bad
/// `STRADS_THREADS` ends the process with its message: see [`crate::config`]).
pub fn default_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| crate::config::get().threads.unwrap_or_else(cores))
}

/// The cores this process may run on (read once: the standard library asks the kernel and
/// the cgroup each time).
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
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

/// A pool of threads, the lock its users take turns with (guarding where its threads
/// were last told to run) and the threads' kernel ids.
struct Pool {
    threads: rayon::ThreadPool,
    turn: Mutex<affinity::Affinity>,
    tids: Arc<[AtomicI32]>,
}

/// Runs `f` on the pool with `n` threads, alone: a parallel loop's workers wait for one
/// another (ring, pipeline, barriers), so two loops interleaving their jobs on the same
/// threads, in different orders per thread, could wait for each other forever. Before
/// `f`, the pool's threads are kept off the caller's core (see [`affinity`]).
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
                let tids: Arc<[AtomicI32]> = (0..n).map(|_| AtomicI32::new(0)).collect();
                let ids = Arc::clone(&tids);
                let threads = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    // The caller is worker 0 (see `broadcast`).
                    .thread_name(|i| format!("strads-worker-{}", i + 1))
                    .start_handler(move |i| ids[i].store(affinity::thread_id(), Ordering::Release))
                    .build()
                    .unwrap_or_else(|e| panic!("strads: cannot start {n} worker threads: {e}"));
                // The first call places the threads too: wait until each has said its id.
                #[cfg(target_os = "linux")]
                while tids.iter().any(|t| t.load(Ordering::Acquire) == 0) {
                    std::thread::yield_now();
                }
                Arc::new(Pool {
                    threads,
                    turn: Mutex::new(affinity::Affinity::default()),
                    tids,
                })
            })
            .clone()
    };
    let mut affinity = pool.turn.lock().unwrap_or_else(|e| e.into_inner());
    affinity.keep_off_caller(&pool.tids);
    f(&pool.threads)
}

/// Runs `f(w)` for every worker `w` in `0..n` at once: worker 0 on the calling thread,
/// the others one each on the `n - 1` threads of a pool, which the call has alone (see
/// [`with_pool`]). The caller works instead of waiting, so a call wakes `n - 1` threads,
/// not `n`, and the caller's core is never left idle while two woken workers share the
/// other (what `perf sched` showed for short MovieLens epochs). Results in worker order; a
/// panic in any worker reaches the caller once every worker has returned.
///
/// Called from a thread of a rayon pool (a `par_iter` or `install` whose closure calls a
/// loop), worker 0 runs on a thread of its own instead, while the caller waits without
/// taking part in its pool: waiting for the workers inside rayon would let the caller
/// steal another job of its pool, which may call a loop on this same pool and wait for
/// the lock this call holds, forever.
pub(crate) fn broadcast<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    if n <= 1 {
        return vec![f(0)];
    }
    if rayon::current_thread_index().is_some() {
        return std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("strads-worker-0".into())
                .spawn_scoped(s, || broadcast_here(n, &f))
                .unwrap_or_else(|e| panic!("strads: cannot start a thread for worker 0: {e}"))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
    }
    broadcast_here(n, &f)
}

/// [`broadcast`] with the calling thread, outside any rayon pool, as worker 0.
fn broadcast_here<R: Send>(n: usize, f: &(impl Fn(usize) -> R + Sync)) -> Vec<R> {
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

/// Where a pool's threads may run: anywhere the caller may, except the caller's core.
///
/// The caller is worker 0 and starts its block as soon as it has woken the others. If the
/// kernel places a woken worker on the caller's core (it prefers the core a thread last ran
/// on, and the caller moves between calls), the two share that core while another idles,
/// until the load balancer moves one, which takes longer than a millisecond's loop call:
/// `peers` on ml-100k showed such calls taking the serial loop's time, in runs of several
/// epochs. So before each call, when the caller's core differs from the one the pool was
/// last kept off, every pool thread's affinity is set to the caller's allowed cores minus
/// the caller's own (one `sched_setaffinity` per thread; nothing when the core is the same).
/// With as many workers as allowed cores or more, the threads may run anywhere the caller
/// may. `STRADS_AFFINITY=0` leaves the threads' affinity alone. Linux only; elsewhere a
/// no-op.
pub(crate) mod affinity {
    #[cfg(target_os = "linux")]
    use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
    #[cfg(target_os = "linux")]
    use nix::unistd::Pid;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// Whether `STRADS_AFFINITY` lets strads set its pool threads' affinity (default yes).
    pub(crate) fn enabled() -> bool {
        crate::config::get().affinity
    }

    /// This thread's kernel id (0 where there is none to set an affinity by).
    pub(crate) fn thread_id() -> i32 {
        #[cfg(target_os = "linux")]
        {
            nix::unistd::gettid().as_raw()
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    }

    /// What a pool's threads were last told: the caller's core they keep off.
    #[derive(Debug, Default)]
    pub(crate) struct Affinity {
        /// The core excluded, or `None` before the first placement (or after one that
        /// could not be completed).
        pub(crate) off: Option<usize>,
        /// Set when the kernel refused an affinity (a sandbox without the call, say):
        /// the pool is not placed again, rather than paying the refused calls each time.
        pub(crate) refused: bool,
    }

    impl Affinity {
        /// Keeps the threads `tids` off the calling thread's current core (see the module).
        pub(crate) fn keep_off_caller(&mut self, tids: &[AtomicI32]) {
            #[cfg(target_os = "linux")]
            {
                if self.refused || !enabled() {
                    return;
                }
                let Ok(cpu) = sched_getcpu() else { return };
                if self.off == Some(cpu) {
                    return;
                }
                self.off = None;
                let Ok(allowed) = sched_getaffinity(Pid::from_raw(0)) else {
                    return;
                };
                let cores = (0..CpuSet::count())
                    .filter(|&c| allowed.is_set(c).unwrap_or(false))
                    .count();
                let mut mask = allowed;
                // With fewer cores than workers, some must share; let the kernel choose.
                if cores > tids.len() && mask.unset(cpu).is_err() {
                    return;
                }
                for t in tids {
                    let tid = t.load(Ordering::Acquire);
                    // A thread not started yet: place the pool again at the next call.
                    if tid == 0 {
                        return;
                    }
                    if sched_setaffinity(Pid::from_raw(tid), &mask).is_err() {
                        self.refused = true;
                        return;
                    }
                }
                self.off = Some(cpu);
            }
            #[cfg(not(target_os = "linux"))]
            let _ = tids;
        }
    }
}

/// Whether this thread is running a parallel loop's block (a loop called from inside
/// another loop's body then runs on this worker alone).
pub(crate) fn in_worker() -> bool {
    IN_WORKER.with(|w| w.get())
}

/// Marks this thread as a worker of a call holding lease `lease` (0: none) while `f`
/// runs.
pub(crate) fn as_worker<R>(lease: u64, f: impl FnOnce() -> R) -> R {
    let prev = IN_WORKER.with(|w| w.replace(true));
    let prev_lease = LEASE.with(|l| l.replace(lease));
    let _restore = Restore(move || {
        IN_WORKER.with(|w| w.set(prev));
        LEASE.with(|l| l.set(prev_lease));
    });
    f()
}

/// This thread works for the call holding lease `lease` until the guard drops (the
/// driver's thread, which sends the parts of leased arrays it holds).
pub(crate) fn enter_lease(lease: u64) -> Restore<impl FnMut()> {
    let prev = LEASE.with(|l| l.replace(lease));
    Restore(move || LEASE.with(|l| l.set(prev)))
}

/// The lease of the call whose worker this thread is now (0: none): a call across
/// processes that reads an array with parts away holds one (`array::away`).
pub(crate) fn current_lease() -> u64 {
    LEASE.with(|l| l.get())
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

    /// Worker 1 of a two-worker call may run on every core the caller may except one, the
    /// caller's (checked from inside the call, so the mask is the one the call ran with).
    #[cfg(target_os = "linux")]
    #[test]
    fn pool_threads_keep_off_the_callers_core() {
        use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu};
        use nix::unistd::Pid;
        let cores = |m: &CpuSet| -> Vec<usize> {
            (0..CpuSet::count())
                .filter(|&c| m.is_set(c).unwrap_or(false))
                .collect()
        };
        let allowed = cores(&sched_getaffinity(Pid::from_raw(0)).unwrap());
        if allowed.len() < 2 || !affinity::enabled() {
            return;
        }
        for _ in 0..20 {
            let seen = broadcast(2, |_| {
                let mask = sched_getaffinity(Pid::from_raw(0)).unwrap();
                (cores(&mask), sched_getcpu().unwrap())
            });
            let (worker, on) = &seen[1];
            let off: Vec<usize> = allowed
                .iter()
                .copied()
                .filter(|c| !worker.contains(c))
                .collect();
            assert_eq!(
                off.len(),
                1,
                "worker 1 may run on {worker:?} of {allowed:?}"
            );
            assert!(worker.iter().all(|c| allowed.contains(c)));
            assert_ne!(*on, off[0], "worker 1 ran on the core it was kept off");
        }
    }

    /// A refused affinity (here: a thread id that does not exist) stops the placement for
    /// good instead of repeating the refused calls at every loop call.
    #[cfg(target_os = "linux")]
    #[test]
    fn refused_affinity_is_not_retried() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores < 2 || !affinity::enabled() {
            return;
        }
        let mut p = affinity::Affinity::default();
        let ghost = [AtomicI32::new(i32::MAX)];
        p.keep_off_caller(&ghost);
        assert!(p.refused);
        assert_eq!(p.off, None);
        // A real thread now: nothing is set, since the pool was given up on.
        let me = [AtomicI32::new(affinity::thread_id())];
        p.keep_off_caller(&me);
        assert_eq!(p.off, None);
    }
}
