//! The sans-I/O protocol core (the `quinn-proto` shape): what ranks say to each other
//! during a call, as data and state machines, with no sockets, threads or clocks.
//!
//! - `region`: regions of arrays as flat element ranges; the region a window covers.
//! - `itinerary`: [`Itinerary`], every transfer, remote wait and barrier of a call, computed
//!   alike on every rank from the [`Schedule`](crate::plan::Schedule).
//! - `msg`: the messages and their checked decoding.
//! - `core`: [`Core`], one rank's protocol state: fed frames and time, it returns frames
//!   to send and its next timeout.
//! - `directory`: [`Directory`], the driver's record of which rank holds which part of
//!   which array at which version, and how an array travels in a call.
//! - `collective`: data operations between calls that every rank runs at once (a data
//!   set made in parts, histograms, entries traded), their rounds and answers.
//! - `sim`: the simulated network that runs many ranks' cores in virtual time.
//! - `verify`: a call plan run on tags of last writers, for tests.

pub mod collected;
pub mod collective;
pub mod core;
pub mod directory;
mod inputs;
pub mod itinerary;
pub mod msg;
pub mod outputs;
pub mod region;
mod rows;
pub mod sim;
pub mod verify;

#[cfg(test)]
mod squeeze_tests;
#[cfg(test)]
mod tests;

pub use core::{Arrival, Core, Failure, Micros, Outgoing, Part, Want};
pub use directory::Directory;
pub use itinerary::{Itinerary, MADE, NotShippable, PlanArray, TaskId, Transfer};
pub use msg::{ArrayMeta, CallMsg, Elem, Msg};
pub use region::Region;

pub use crate::array::made::Recipe;
