//! Each kind of plan end to end, bit for bit against the serial replay of its recorded
//! order: buffers and their application points, reductions, `ordered` loops, reconnaissance
//! and its plan keys, split components, wavefronts, `iter_mut()`, nested pools, the cost
//! model, and the data-parallel modes.

mod buffers;
mod cost_model;
mod hybrid;
mod iter_mut;
mod max_delay;
mod nested_pools;
mod ordered_exact;
mod ordered_recon;
mod plan_key;
mod reconnaissance;
mod reductions;
mod split;
mod ssp;
mod sync_mode;
mod wavefront;
