//! What a call sends a rank of its own, and what the rank sends back: whole arrays, an
//! `iter_mut()` call's values, the blocks of the space it runs, a recorded call's trace.

use super::{Core, Msg, Outgoing};

impl Core {
    /// Worker: a whole array of call `seq` that arrived (`array` indexes the call's).
    pub fn take_array(&mut self, seq: u64, array: usize) -> Option<Vec<u8>> {
        let i = self
            .arrays
            .iter()
            .position(|(s, a, _)| *s == seq && *a == array)?;
        Some(self.arrays.swap_remove(i).2)
    }

    /// Sends the values of `iter_mut()` call `seq` to rank `to`.
    pub fn send_values(&mut self, seq: u64, to: usize, data: Vec<u8>) {
        self.send(Outgoing::Block {
            to,
            msg: Msg::Values { seq },
            data: data.into(),
        });
    }

    /// Driver: sends rank `to` the blocks of call `seq`'s space that it runs.
    pub fn send_blocks(&mut self, seq: u64, to: usize, data: Vec<u8>) {
        self.send(Outgoing::Block {
            to,
            msg: Msg::Blocks { seq },
            data: data.into(),
        });
    }

    /// Worker: the blocks of call `seq`'s space the driver sent, once here.
    pub fn take_blocks(&mut self, seq: u64) -> Option<Vec<u8>> {
        let i = self.blocks.iter().position(|(s, _)| *s == seq)?;
        Some(self.blocks.swap_remove(i).1)
    }

    /// Worker: sends the driver what its workers ran in recorded call `seq`.
    pub fn send_trace(&mut self, seq: u64, data: Vec<u8>) {
        self.send(Outgoing::Block {
            to: 0,
            msg: Msg::Trace { seq },
            data: data.into(),
        });
    }

    /// Driver: the trace of recorded call `seq` that rank `from` sent, once here.
    pub fn take_trace(&mut self, seq: u64, from: usize) -> Option<Vec<u8>> {
        let i = self
            .traces
            .iter()
            .position(|(s, f, _)| *s == seq && *f == from)?;
        Some(self.traces.swap_remove(i).2)
    }

    /// The values of `iter_mut()` call `seq` that rank `from` sent, once here.
    pub fn take_values(&mut self, seq: u64, from: usize) -> Option<Vec<u8>> {
        let i = self
            .values
            .iter()
            .position(|(s, f, _)| *s == seq && *f == from)?;
        Some(self.values.swap_remove(i).2)
    }
}
