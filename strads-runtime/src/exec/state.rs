//! What strads keeps about one loop: its spec, its analysis and its cached plans.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use strads_analysis::{Analysis, LoopSpec, Subscript, analyze};

/// Plans kept per loop, at most; the oldest goes first.
const MAX_PLANS: usize = 32;

/// What a cached plan was made for. Two calls with equal keys get the same plan.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    /// The iteration space's identity (its contents while it lives).
    pub(crate) space: String,
    /// Workers.
    pub(crate) workers: usize,
    /// The arrays' shapes.
    pub(crate) shapes: Vec<Vec<usize>>,
    /// Reconnaissance: the `(id, version)` of every array whose contents the plan depends
    /// on, and a hash of the captured values that steer the accesses (compared whole
    /// before the plan is used).
    pub(crate) contents: Option<(Vec<(u64, u64)>, u64)>,
}

/// Everything strads keeps about one `#[parallel_for]` loop: its spec, its analysis and its
/// plans. The macro puts one in a `static` inside the generated function.
pub struct LoopState {
    spec: LoopSpec,
    /// Per array, the iteration dim whose index picks the row the body touches, if one
    /// does (`w.row_mut(u)`, `ndk[[d, k]]`): what blocks prefetch.
    row_dims: OnceLock<Vec<Option<usize>>>,
    analysis: OnceLock<Analysis>,
    plans: Mutex<Vec<(PlanKey, Arc<dyn Any + Send + Sync>)>>,
    explained: AtomicBool,
    /// Whether the cluster line was printed.
    cluster_explained: AtomicBool,
    /// Whether `explain_kept` said its line.
    kept_explained: AtomicBool,
    /// What the cost model measured and chose for the loop's calls.
    cost: super::cost::Cost,
}

impl std::fmt::Debug for LoopState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopState")
            .field("loop", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl LoopState {
    /// State for the loop `spec`, for a `static`.
    pub const fn new(spec: LoopSpec) -> Self {
        LoopState {
            spec,
            row_dims: OnceLock::new(),
            analysis: OnceLock::new(),
            plans: Mutex::new(Vec::new()),
            explained: AtomicBool::new(false),
            cluster_explained: AtomicBool::new(false),
            kept_explained: AtomicBool::new(false),
            cost: super::cost::Cost::new(),
        }
    }

    /// The loop's cost model.
    pub(crate) fn cost(&self) -> &super::cost::Cost {
        &self.cost
    }

    /// The loop's spec.
    pub fn spec(&self) -> &LoopSpec {
        &self.spec
    }

    /// The loop's analysis, computed on first use.
    pub fn analysis(&self) -> &Analysis {
        self.analysis.get_or_init(|| analyze(&self.spec))
    }

    /// Under `STRADS_EXPLAIN=1`, says once that this loop runs its original serial loop.
    pub fn explain_serial(&self) {
        self.explain_once(|| {
            "serial (the original loop: STRADS_SERIAL=1 or the `serial` feature)".to_string()
        });
    }

    /// Under `STRADS_EXPLAIN=1`, prints the loop's plan line once (on the driver: a
    /// cluster's worker ranks run the driver's plans and say nothing).
    pub(crate) fn explain_once(&self, line: impl FnOnce() -> String) {
        if crate::config::explains() && !self.explained.swap(true, Ordering::Relaxed) {
            crate::log::say!(Explain, "strads plan {}: {}", self.spec.name, line());
        }
    }

    /// Under `STRADS_EXPLAIN=1` in a cluster job, says once how the loop's calls use the
    /// processes: `strads cluster <fn>: <line>`.
    pub(crate) fn explain_cluster(&self, line: impl FnOnce() -> String) {
        if crate::config::explains() && !self.cluster_explained.swap(true, Ordering::Relaxed) {
            crate::log::say!(Explain, "strads cluster {}: {}", self.spec.name, line());
        }
    }

    /// Under `STRADS_EXPLAIN=1`, says once that a call of this `iter_mut()` loop found its
    /// values where the last call left them, on the ranks that run their entries.
    pub(crate) fn explain_kept(&self) {
        if crate::config::explains() && !self.kept_explained.swap(true, Ordering::Relaxed) {
            crate::log::say!(
                Explain,
                "strads cluster {}: its values stay on the ranks that run their entries \
                 between calls (a call with the same entries on every rank sends none)",
                self.spec.name
            );
        }
    }

    /// Says once (`STRADS_EXPLAIN`) that the loop's `iter_mut()` calls run where its
    /// array's parts are.
    pub(crate) fn explain_in_parts(&self) {
        if crate::config::explains() && !self.kept_explained.swap(true, Ordering::Relaxed) {
            crate::log::say!(
                Explain,
                "strads cluster {}: runs where its array's parts are: each rank holds the \
                 entries and values of the blocks its workers run, and keeps them between \
                 calls of the same grid (the driver never holds the others')",
                self.spec.name
            );
        }
    }

    /// Per array, the dim whose index is the first subscript of one of its accesses
    /// (coefficient 1, no constant): the row an iteration reaches by its key.
    pub(crate) fn row_dims(&self) -> &[Option<usize>] {
        self.row_dims.get_or_init(|| {
            (0..self.spec.arrays.len())
                .map(|a| {
                    self.spec
                        .accesses
                        .iter()
                        .filter(|acc| acc.array == a)
                        .find_map(|acc| match acc.subscripts.first() {
                            Some(Subscript::Affine(f)) if f.constant == 0 => {
                                let mut dims = f.dims();
                                let d = dims.next()?;
                                (dims.next().is_none() && f.coeffs[d] == 1).then_some(d)
                            }
                            _ => None,
                        })
                })
                .collect()
        })
    }

    /// Whether a plan under `key` that `accept` takes is cached.
    pub(crate) fn cached<P: Send + Sync + 'static>(
        &self,
        key: &PlanKey,
        accept: impl Fn(&P) -> bool,
    ) -> bool {
        let plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        plans
            .iter()
            .filter(|(k, _)| k == key)
            .filter_map(|(_, plan)| plan.downcast_ref::<P>())
            .any(accept)
    }

    /// The plan cached under `key` that `accept` takes, or a new one from `make`.
    pub(crate) fn plan<P: Send + Sync + 'static>(
        &self,
        key: PlanKey,
        accept: impl Fn(&P) -> bool,
        make: impl FnOnce() -> P,
    ) -> Arc<P> {
        {
            let plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
            let found = plans
                .iter()
                .find(|(k, _)| *k == key)
                .and_then(|(_, plan)| Arc::clone(plan).downcast::<P>().ok())
                .filter(|plan| accept(plan));
            if let Some(plan) = found {
                return plan;
            }
        }
        let plan = Arc::new(make());
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        plans.retain(|(k, _)| *k != key);
        // A space named `base@version` (a sparse array's values, which its blocks copy):
        // plans of its other versions are stale, and would keep their copies alive.
        if let Some((base, _)) = key.space.split_once('@') {
            plans.retain(|(k, _)| k.space.split_once('@').is_none_or(|(b, _)| b != base));
        }
        if plans.len() >= MAX_PLANS {
            plans.remove(0);
        }
        plans.push((key, plan.clone() as Arc<dyn Any + Send + Sync>));
        plan
    }
}
