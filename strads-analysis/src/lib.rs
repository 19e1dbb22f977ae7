//! strads' compiler half: the loop IR, dependence vectors, parallelization strategies and
//! schedules. It does no I/O and knows no syn: the macro feeds it a [`LoopSpec`] and the
//! runtime reads the same spec back from a generated constant.

mod ir;

pub use ir::{
    Access, AccessKind, Affine, ArrayId, ArraySpec, DimId, List, LoopSpec, Name, Space, Subscript,
};
