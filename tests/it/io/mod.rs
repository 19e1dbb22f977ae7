//! Outside the process: malformed data files and settings (a clear error, never a panic),
//! and the examples run as several processes (the cluster), which print what threads print.

mod cluster;
mod features;
mod malformed;
