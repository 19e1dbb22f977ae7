//! Software prefetch of the rows the next iterations will touch.
//!
//! A loop over a sparse array reaches rows of other arrays through the entry's key
//! (`w.row_mut(u)`, `h.row_mut(i)` for the rating at `[u, i]`): random rows, usually out of
//! cache, whose latency the serial loop waits for rating after rating (the profile of
//! issue 5: 5.8 L1 misses per rating, LIBMF 2.0). The key of the entry a few places ahead
//! is known, so the rows it will need can be requested now. A prefetch is only a hint: it
//! reads nothing the program sees and changes no result.

/// How many entries ahead rows are requested: far enough for a miss to DRAM to finish
/// before the entry runs (16 measured best of 4, 16 in `benches/sgd_mf.rs --only variants`).
pub(crate) const AHEAD: usize = 16;

/// Rows are prefetched only when the arrays they come from hold this much together: below
/// it they stay in a core's L2 (1–2 MiB on the server cores we target), where the hints
/// only cost instructions. On ml-100k (factor arrays of 120 and 215 KiB) prefetching cost
/// about 1.5% of an SGD-MF epoch and 7% of an AdaGrad one (BENCHMARKS.md). The sum decides
/// whether a loop prefetches at all (two arrays of 600 KiB do not fit in L2 together);
/// [`MIN_ARRAY_BYTES`] decides which of its arrays.
pub(crate) const MIN_BYTES: usize = 1 << 20;

/// Arrays under this size are left out of a prefetching loop's streams: they stay in L2
/// beside the rows that are streamed (AdaGrad's per-row sums, a small user or item side).
pub(crate) const MIN_ARRAY_BYTES: usize = 256 << 10;

/// The streams worth prefetching of a block's (see [`MIN_BYTES`], [`MIN_ARRAY_BYTES`]):
/// none when the arrays hold under `MIN_BYTES` together, else those of `MIN_ARRAY_BYTES`
/// or more.
pub(crate) fn worth_it(mut streams: Vec<RowStream>) -> Vec<RowStream> {
    if streams.iter().map(|s| s.array_bytes).sum::<usize>() < MIN_BYTES {
        streams.clear();
    }
    streams.retain(|s| s.array_bytes >= MIN_ARRAY_BYTES);
    streams
}

/// Cache lines requested per row at most (a 128-byte row spans three).
const MAX_LINES: usize = 4;

/// One array whose row `key[dim]` each iteration touches: where its rows are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowStream {
    pub(crate) base: usize,
    pub(crate) row_bytes: usize,
    /// The whole array's size.
    pub(crate) array_bytes: usize,
    /// The key component that picks the row.
    pub(crate) dim: usize,
}

impl RowStream {
    /// Requests the cache lines of the row for `key` (a key of `stride` components).
    #[inline(always)]
    pub(crate) fn fetch(&self, key: &[u32]) {
        let start = self
            .base
            .wrapping_add((key[self.dim] as usize).wrapping_mul(self.row_bytes));
        let first = start & !63;
        let end = start.wrapping_add(self.row_bytes);
        let mut line = first;
        let mut n = 0;
        while line < end && n < MAX_LINES {
            read_hint(line as *const u8);
            line += 64;
            n += 1;
        }
    }
}

/// Asks the processor to bring the cache line at `p` in for reading.
#[inline(always)]
pub(crate) fn read_hint(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint: it never faults, whatever the address (it is not
    // dereferenced in the language's sense), and changes no memory. SSE, the feature it
    // needs, is part of every x86_64 processor (the target's baseline).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_change_nothing_even_off_the_end() {
        let rows: Vec<f32> = (0..40).map(|x| x as f32).collect();
        let s = RowStream {
            base: rows.as_ptr() as usize,
            row_bytes: 4 * 4,
            array_bytes: 40 * 4,
            dim: 1,
        };
        // Rows inside the array, then far outside it (a prefetch never faults).
        for key in [[0u32, 3], [7, 9], [0, u32::MAX]] {
            s.fetch(&key);
        }
        read_hint(std::ptr::null());
        assert_eq!(rows[39], 39.0);
    }

    #[test]
    fn small_arrays_together_are_not_prefetched() {
        let stream = |array_bytes| RowStream {
            base: 0,
            row_bytes: 128,
            array_bytes,
            dim: 0,
        };
        let kept = |v: Vec<usize>| -> Vec<usize> {
            worth_it(v.into_iter().map(stream).collect())
                .iter()
                .map(|s| s.array_bytes)
                .collect()
        };
        assert!(kept(vec![]).is_empty());
        // ml-100k's factors: 120 and 215 KiB, in L2 together.
        assert!(kept(vec![120 << 10, 215 << 10]).is_empty());
        // The sum counts: two arrays of 600 KiB are both streamed.
        assert_eq!(kept(vec![600 << 10, 600 << 10]), [600 << 10, 600 << 10]);
        // The 10 M set with AdaGrad's sums: the item sums (160 KiB) stay out.
        assert_eq!(
            kept(vec![25 << 20, 5 << 20, 800 << 10, 160 << 10]),
            [25 << 20, 5 << 20, 800 << 10]
        );
        // ml-latest-small: only the 1.2 MiB item factors are streamed.
        assert_eq!(
            kept(vec![78 << 10, 1245 << 10, 3 << 10, 39 << 10]),
            [1245 << 10]
        );
    }
}
