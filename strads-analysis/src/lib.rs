//! strads' compiler half: the loop IR, dependence vectors, parallelization strategies and
//! schedules. It does no I/O and knows no syn: the macro feeds it a [`LoopSpec`] and the
//! runtime reads the same spec back from a generated constant.

mod dep;
mod groups;
mod ir;
mod report;
mod schedule;
mod strategy;
#[cfg(test)]
mod testutil;
mod unimodular;

pub use dep::{DepVector, Dist, dependence_pairs, dependence_vectors, format_dist};
pub use groups::{Accesses, Batch, GroupPlan, MAX_PIECES, Piece, plan_groups, plan_groups_with};
pub use ir::{
    Access, AccessKind, Affine, ApplySpec, ArrayId, ArraySpec, BufferSpec, DimId, List, LoopSpec,
    Name, ReduceOp, ReductionSpec, SpaceKind, Subscript,
};
pub use report::{SyncReport, buffers_report, reductions_report, report};
pub use schedule::{Partition, Unordered2d};
pub use strategy::{
    Align, Analysis, Candidate, Placement, Strategy, StrategyKind, alignments, analyze,
    buffer_hint, choose, choose_for, describe, fallback_note, place, tile_axes, tile_bounded,
};
pub use unimodular::{apply as apply_skew, is_identity, skew, skewed};
