//! strads' runtime: arrays, data loaders, plans and the executors that run
//! `#[strads::parallel_for]` loops. Users reach it through the `strads` facade crate.

mod access;
mod array;
mod buffer;
mod cache;
mod capture;
pub mod config;
pub mod corpus;
mod error;
mod exec;
pub mod generate;
mod itermut;
mod linalg;
pub mod load;
mod plankey;
mod pool;
mod prefetch;
mod record;
mod reduce;
mod rng;
pub mod skew;
mod space;
pub mod testing;
mod text;
mod view;
mod wavefront;

pub use access::{ArrayMut, ArrayRef};
pub use array::{DenseIter, DistArray, RandomValue, SparseArray, SparseIter, SparseIterMut};
pub use buffer::{Buffered, CopyView};
pub use capture::{Capture, CaptureByCopy, CaptureByRef};
pub use error::{Error, Result};
pub use exec::{
    Block, Lender, LoopState, Parked, ReplayBlock, ReplayIds, ReplayRound, replay_blocks,
    replay_blocks_buffered, replay_ids, replay_ids_buffered, replay_workers, run, run_buffered,
    run_recorded, run_recorded_buffered, serial_env,
};
pub use itermut::{KeyBuckets, Keys, run_mut, run_mut_buffered};
pub use linalg::{axpy, dot};
pub use plankey::capture_key;
pub use pool::{current_threads, default_threads, with_threads};
pub use record::{RecordView, Recording};
pub use reduce::{Parts, Reduce};
pub use rng::IterRng;
pub use space::{BoxBlocks, Buckets, GridSpace, RangeDim, RangeSpace, Space};
pub use view::{Named, SharedMut, ViewMut};
