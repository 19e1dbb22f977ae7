//! Serial code's reads of elements by value ([`DistArray::value`](crate::DistArray::value)):
//! an element another rank holds comes as a copy of the window of whole rows around it,
//! kept in a bounded cache ([`Peeked`]) instead of written into the array, so that reading
//! elements at random over an array in parts holds at most [`PEEKED_BYTES`] of other
//! ranks' parts on the driver, however many it reads. The copies are current until the
//! parts change, which only a call that lends the array mutably does: it claims the cell,
//! which forgets them, as does anything that replaces the fetch or brings the array home.
//! An element here (the driver's own, or read or written home) is read where it is.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::Away;

/// The most bytes of copies kept: 4 MiB (64 windows of about 64 KiB).
pub(crate) const PEEKED_BYTES: usize = 4 << 20;

/// Copies of ranges of elements away, the least recently read first: `(lo, hi, their
/// little-endian bytes)`.
#[derive(Default)]
pub(super) struct Peeked {
    ranges: VecDeque<(u64, u64, Vec<u8>)>,
    bytes: usize,
}

impl Peeked {
    /// Forgets every copy.
    pub(super) fn clear(&mut self) {
        self.ranges.clear();
        self.bytes = 0;
    }

    /// Where element `o` is among the copies; that copy becomes the most recently read.
    fn find(&mut self, o: u64) -> bool {
        let Some(k) = self
            .ranges
            .iter()
            .rposition(|&(lo, hi, _)| lo <= o && o < hi)
        else {
            return false;
        };
        if k + 1 != self.ranges.len()
            && let Some(r) = self.ranges.remove(k)
        {
            self.ranges.push_back(r);
        }
        true
    }

    /// Element `o`'s `size` bytes from the most recently read copy, which holds it.
    fn newest(&self, o: u64, size: usize) -> Option<&[u8]> {
        let (lo, _, bytes) = self.ranges.back()?;
        let at = usize::try_from(o - lo).ok()?.checked_mul(size)?;
        bytes.get(at..at.checked_add(size)?)
    }

    /// Keeps a copy of elements `lo..hi`, letting the least recently read go beyond
    /// [`PEEKED_BYTES`] (the newest always stays).
    fn insert(&mut self, lo: u64, hi: u64, bytes: Vec<u8>) {
        self.bytes += bytes.len();
        self.ranges.push_back((lo, hi, bytes));
        while self.bytes > PEEKED_BYTES && self.ranges.len() > 1 {
            if let Some((_, _, b)) = self.ranges.pop_front() {
                self.bytes -= b.len();
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
    /// the fetch cannot copy it (parts made nowhere yet): the caller reads it as serial
    /// code reads an element.
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
        let super::Cell { fetch, peeked, .. } = &mut *cell;
        let fetch = fetch.as_ref()?;
        if !fetch.away_within(o, o + 1) {
            return None;
        }
        if !peeked.find(o as u64) {
            // The range that holds `o` is kept last: the newest, which stays.
            let (holding, others): (Vec<_>, Vec<_>) = fetch
                .peek(o, o + 1)?
                .into_iter()
                .partition(|&(lo, hi, _)| lo <= o as u64 && (o as u64) < hi);
            for (lo, hi, bytes) in others.into_iter().chain(holding) {
                peeked.insert(lo, hi, bytes);
            }
            if !peeked.find(o as u64) {
                return None;
            }
        }
        peeked.newest(o as u64, size).and_then(decode)
    }
}

#[cfg(test)]
impl Away {
    /// Bytes of the copies kept.
    pub(crate) fn peeked_bytes(&self) -> usize {
        self.lock().peeked.bytes()
    }
}
