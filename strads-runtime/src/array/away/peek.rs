//! Serial code's reads and writes of elements by value
//! ([`DistArray::value`](crate::DistArray::value), [`set`](crate::DistArray::set)). A write
//! of an element another rank holds is set there (`Away::write_through`), where it stays.
//! A read:
//! an element another rank holds comes as a copy of the elements away in the window of
//! whole rows around it ([`Copied`]), kept in a bounded cache ([`Peeked`]) instead of
//! written into the array, so that reading elements at random over an array in parts
//! holds at most [`PEEKED_BYTES`] of other ranks' parts on the driver (or one window, when
//! a row alone is larger), however many it reads.
//!
//! A copy is current while its elements stay away: the parts change only in a call that
//! lends the array mutably, which claims the cell (forgetting the copies, as does anything
//! that sets a new fetch or brings the array home), and serial code that writes an
//! element takes its window home first (`Away::take_range`, which forgets them too). An
//! element here (the driver's own, read home, or written home) is read where it is, before
//! any copy is looked at. Elements no rank has made yet (an array created in place that
//! no call has written) are copied from the array's recipe (`Recipe::copy`), and the array
//! stays unmade.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::Away;

/// The most bytes of copies kept: 4 MiB (64 windows of about 64 KiB).
pub(crate) const PEEKED_BYTES: usize = 4 << 20;

/// A copy of the elements away in a window: the window, the ranges copied (in order,
/// inside it) and their elements' little-endian bytes one range after another.
#[derive(Debug, Default)]
pub(crate) struct Copied {
    pub window: (u64, u64),
    pub ranges: Vec<(u64, u64)>,
    pub bytes: Vec<u8>,
}

impl Copied {
    /// Element `o`'s `size` bytes, when this copy holds it.
    fn element(&self, o: u64, size: usize) -> Option<&[u8]> {
        let mut at = 0u64;
        for &(lo, hi) in &self.ranges {
            if lo <= o && o < hi {
                let start = usize::try_from((at + o - lo).checked_mul(size as u64)?).ok()?;
                return self.bytes.get(start..start.checked_add(size)?);
            }
            at += hi - lo;
        }
        None
    }
}

/// The copies kept, the least recently read first, and their bytes.
#[derive(Default)]
pub(super) struct Peeked {
    copies: VecDeque<Copied>,
    bytes: usize,
}

impl Peeked {
    /// Forgets every copy.
    pub(super) fn clear(&mut self) {
        self.copies.clear();
        self.bytes = 0;
    }

    /// Element `o`'s `size` bytes from the copy of the window that holds it, which becomes
    /// the most recently read.
    fn find(&mut self, o: u64, size: usize) -> Option<&[u8]> {
        let k = self
            .copies
            .iter()
            .rposition(|c| c.window.0 <= o && o < c.window.1)?;
        if k + 1 != self.copies.len()
            && let Some(c) = self.copies.remove(k)
        {
            self.copies.push_back(c);
        }
        self.copies.back()?.element(o, size)
    }

    /// Keeps `copy` as the most recently read, letting the least recently read go beyond
    /// [`PEEKED_BYTES`] (the newest always stays).
    fn insert(&mut self, copy: Copied) {
        self.bytes += copy.bytes.len();
        self.copies.push_back(copy);
        while self.bytes > PEEKED_BYTES && self.copies.len() > 1 {
            if let Some(c) = self.copies.pop_front() {
                self.bytes -= c.bytes.len();
            }
        }
    }

    /// Bytes of the copies kept.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Away {
    /// Element `o` (of `size` bytes on the wire) of an array with parts away, by value,
    /// when another rank holds it: `decode` reads its bytes from a copy of the window
    /// around it (fetched once, kept among the last [`PEEKED_BYTES`] of copies, never
    /// written into the array). `None` when the element is here (home, or read home), or
    /// the fetch cannot copy it: the caller reads it as serial code reads an element.
    #[cold]
    #[inline(never)]
    pub(crate) fn peek<R>(
        &self,
        o: usize,
        size: usize,
        decode: impl FnOnce(&[u8]) -> Option<R>,
    ) -> Option<R> {
        let mut cell = self.unleased();
        if !self.away.load(Ordering::Acquire) || cell.read.covers(o, o + 1) {
            return None;
        }
        let super::Cell {
            fetch,
            peeked,
            read,
            ..
        } = &mut *cell;
        let fetch = fetch.as_ref()?;
        if !fetch.away_within(o, o + 1) {
            return None;
        }
        if peeked.find(o as u64, size).is_none() {
            let copy = fetch.peek(o, o + 1, read)?;
            copy.element(o as u64, size)?;
            peeked.insert(copy);
        }
        peeked.find(o as u64, size).and_then(decode)
    }
}

impl Away {
    /// Serial code writes elements by value (`DistArray::set`; the array borrowed mutably,
    /// now at `version`): those of `items` (offset, little-endian bytes) that another rank
    /// holds are set there, where they stay, and removed from `items`; the others (here,
    /// read home, or in parts no rank made yet) are left for the caller to write here.
    pub(crate) fn write_through(&mut self, items: &mut Vec<(usize, Vec<u8>)>, version: u64) {
        if !*self.away.get_mut() {
            return;
        }
        let cell = self.fetch.get_mut().unwrap_or_else(|e| e.into_inner());
        let super::Cell {
            fetch,
            read,
            peeked,
            ..
        } = cell;
        let Some(fetch) = fetch.as_mut() else {
            return;
        };
        let (mut away, here): (Vec<_>, Vec<_>) = std::mem::take(items)
            .into_iter()
            .partition(|(o, _)| fetch.away_within(*o, *o + 1) && !read.covers(*o, *o + 1));
        if !away.is_empty() {
            // Copies of what is written are stale.
            peeked.clear();
            fetch.write_through(&mut away, version);
        }
        *items = here;
        items.extend(away);
    }
}

#[cfg(test)]
impl Away {
    /// Bytes of the copies kept.
    pub(crate) fn peeked_bytes(&self) -> usize {
        self.lock().peeked.bytes()
    }
}
