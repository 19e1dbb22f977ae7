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
pub mod plan;
mod plankey;
mod pool;
mod prefetch;
mod record;
mod reduce;
mod rng;
pub mod skew;
mod space;
mod sync;
pub mod testing;
mod text;
mod trace;
mod view;

pub use access::{ArrayMut, ArrayRef};
pub use array::{DenseIter, DistArray, RandomValue, SparseArray, SparseIter, SparseIterMut};
pub use buffer::{Buffered, CopyView};
pub use capture::{Capture, CaptureByCopy, CaptureByRef};
pub use error::{Error, Result};
pub use exec::{Block, Call, LoopState, Planned, serial_env};
pub use itermut::{KeyBuckets, Keys};
pub use linalg::{axpy, dot};
pub use plankey::capture_key;
pub use pool::{current_threads, default_threads, with_threads};
pub use record::{RecordView, Recording};
pub use reduce::{Parts, Reduce};
pub use rng::IterRng;
pub use space::{BoxBlocks, Buckets, GridSpace, RangeDim, RangeSpace, Space};
pub use sync::{Lender, Parked};
pub use view::{Named, SharedMut, ViewMut};
