//! Serial code's walks over an array with parts away: windows in a row, after which the
//! rest comes home at once.

/// Windows in a row, each next to the one before and each holding elements that were
/// away, after which serial code is taken to walk the whole array: the rest comes home at
/// once (about 1 MiB of 64 KiB windows).
/// Serial code that reads or writes an array element after element would otherwise take
/// the slow path of an array partly away at every access.
pub(super) const WALK: u32 = 16;

/// The windows serial code brought home last, and how many in a row were each next to
/// the one before.
#[derive(Default)]
pub(super) struct Walk {
    last: Option<(usize, usize)>,
    run: u32,
}

impl Walk {
    /// Window `a..b` came home: whether the walk has gone on long enough to bring the
    /// rest. The same window again changes nothing.
    pub(super) fn step(&mut self, a: usize, b: usize) -> bool {
        match self.last {
            Some(last) if last == (a, b) => return false,
            Some((lo, hi)) if hi == a || lo == b => self.run += 1,
            _ => self.run = 1,
        }
        self.last = Some((a, b));
        self.run >= WALK
    }
}
