//! strads' runtime: arrays, data loaders, plans and the executors that run
//! `#[strads::parallel_for]` loops. Users reach it through the `strads` facade crate.

mod array;
mod bucket;
pub mod checkpoint;
pub mod cluster;
pub mod config;
mod data;
mod error;
mod exec;
mod itermut;
mod log;
mod memory;
pub mod plan;
mod plankey;
mod pool;
pub mod resume;
mod space;
mod sync;
pub mod testing;
mod trace;

pub use data::{corpus, generate, load, permute};
#[doc(hidden)]
pub use linkme;

pub use array::access::{ArrayMut, ArrayRef};
pub use array::bridge;
pub use array::buffer::{Average, Buffered, CopyView, Relaxed, SharedCopyView, merge};
pub use array::capture::{Capture, CaptureByCopy, CaptureByRef};
pub use array::linalg::{axpy, dot, dots};
pub use array::reduce::{Parts, Reduce, Terms};
pub use array::rng::IterRng;
pub use array::view::{Named, SharedMut, ViewMut};
pub use array::{
    DenseIter, DistArray, RandomValue, SparseArray, SparseIter, SparseIterMut, SparseValuesIter,
};
pub use error::{Error, Result};
pub use exec::{Block, Call, LoopState, Planned, Ran, SerialRun, Survey, SurveyView, serial_env};
pub use itermut::{KeyBuckets, Keys, ProbeValuesNone, ProbeValuesSerde, ValuesCodec, ValuesProbe};
pub use plankey::capture_key;
pub use pool::{current_threads, default_threads, with_threads};
pub use space::{BoxBlocks, Buckets, GridSpace, RangeDim, RangeSpace, Space};
pub use sync::{Lender, Parked};
