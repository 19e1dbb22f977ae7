//! Memory an array holds only where it has values (docs/design.md, "arrays in parts").
//!
//! A rank of a cluster job keeps an array at its whole shape, so that its views index it
//! as threads do (no translation of indices on the loops' path), but only the parts it
//! holds are backed by memory:
//! - [`zeroed`] reserves the buffer of a number array as zero pages the kernel backs on
//!   first write (`calloc`'s fresh mapping), so rows a rank never receives cost nothing;
//! - [`release`] gives back the pages of parts that now live on another rank (they read
//!   as zero until the parts come home and are written again).
//!
//! Resident memory per rank then follows the parts it holds, which `STRADS_EXPLAIN`'s
//! memory lines report.

use std::alloc::Layout;

/// A buffer of `len` zeros of `T`, reserved without touching its pages, for the element
/// number types (whose zero bits are zero, their `Default`); `None` for other types.
pub(crate) fn zeroed<T: 'static>(len: usize) -> Option<Vec<T>> {
    if !zero_is_default::<T>() {
        return None;
    }
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return Some(Vec::new());
    }
    let layout = Layout::array::<T>(len).ok()?;
    // SAFETY: `layout` has a non-zero size (checked above). The memory comes zeroed, and
    // for the number types `zero_is_default` admits, all-zero bytes are a valid value
    // (their `Default`, zero). `Vec::from_raw_parts` takes a pointer the global allocator
    // gave for `Layout::array::<T>(len)`, with length and capacity `len`: what `Vec`
    // itself would allocate and later free. `release` is called on that whole, live
    // allocation, which nothing references yet; the pages it gives back read as zero,
    // the value they had.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            return None;
        }
        if layout.size() >= UNTOUCHED {
            // The allocator may have cleared reused memory by writing it (glibc's calloc
            // on its heap does, once its mmap threshold has grown): those pages would be
            // resident, as 4 KiB pages, before anyone wrote a value. Give them back, so
            // they cost nothing until written and can come back as huge pages.
            release(ptr, len, 0, len);
        }
        Some(Vec::from_raw_parts(ptr, len, len))
    }
}

/// Buffers of at least this many bytes are given back to the kernel after the allocator
/// zeroed them (see [`zeroed`]).
const UNTOUCHED: usize = 1 << 21;

/// Whether `T` is a primitive number type (those with a wire type), whose zero is
/// all-zero bytes.
pub(crate) fn zero_is_default<T: 'static>() -> bool {
    super::le::wire_size::<T>().is_some()
}

/// The page size the release rounds to.
const PAGE: usize = 4096;

/// Gives back to the kernel the whole pages inside elements `lo..hi` of the `len`
/// elements at `ptr`; they read as zero afterwards. Returns the bytes released.
///
/// # Safety
/// `ptr` must be the start of a live allocation of at least `len` elements of `T`, and
/// no reference to elements `lo..hi` may exist while this runs or be used after it
/// without those elements being written first.
pub(crate) unsafe fn release<T>(ptr: *mut T, len: usize, lo: usize, hi: usize) -> usize {
    let size = std::mem::size_of::<T>();
    let hi = hi.min(len);
    if lo >= hi || size == 0 {
        return 0;
    }
    let start = (ptr as usize + lo * size).next_multiple_of(PAGE);
    let end = (ptr as usize + hi * size) / PAGE * PAGE;
    if end <= start {
        return 0;
    }
    #[cfg(target_os = "linux")]
    {
        let Some(at) = std::ptr::NonNull::new(start as *mut std::ffi::c_void) else {
            return 0;
        };
        // SAFETY: `[start, end)` is whole pages inside elements `lo..hi` of the caller's
        // allocation, which no reference reaches (the caller's contract). On private
        // anonymous memory `MADV_DONTNEED` frees the pages and later reads see zeros: as if
        // the elements had been overwritten with zero bytes, a valid value of every type
        // `zeroed` admits and only ever read again after the elements are rewritten.
        let r = unsafe {
            nix::sys::mman::madvise(at, end - start, nix::sys::mman::MmapAdvise::MADV_DONTNEED)
        };
        if r.is_ok() {
            return end - start;
        }
    }
    0
}

/// Bytes of `v`'s pages the kernel backs now (`mincore`), counted in whole pages; `None`
/// where the kernel does not say (off Linux).
pub(crate) fn resident_bytes<T>(v: &[T]) -> Option<u64> {
    if std::mem::size_of_val(v) == 0 {
        return Some(0);
    }
    #[cfg(target_os = "linux")]
    {
        let start = v.as_ptr() as usize / PAGE * PAGE;
        let end = (v.as_ptr() as usize + std::mem::size_of_val(v)).next_multiple_of(PAGE);
        let mut map = vec![0u8; (end - start) / PAGE];
        // SAFETY: `[start, end)` covers `v`'s pages, all mapped (its allocation); `map` has
        // one byte per page, as `mincore` writes; nothing is read or written in `v`.
        let r = unsafe {
            nix::libc::mincore(
                start as *mut nix::libc::c_void,
                end - start,
                map.as_mut_ptr(),
            )
        };
        if r != 0 {
            return None;
        }
        let pages = map.iter().filter(|&&b| b & 1 == 1).count() as u64;
        Some(pages * PAGE as u64)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resident_pages<T>(v: &[T]) -> usize {
        let pages = resident_bytes(v).expect("mincore answers on Linux") / PAGE as u64;
        pages as usize
    }

    #[test]
    fn numbers_are_reserved_zeroed_and_other_types_are_not() {
        let v = zeroed::<f32>(1000).unwrap();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|&x| x == 0.0));
        assert_eq!(zeroed::<i64>(0).unwrap().len(), 0);
        assert!(zeroed::<String>(3).is_none());
        assert!(zeroed::<(f32, f32)>(3).is_none());
    }

    /// A zeroed buffer the allocator takes from memory it used before (glibc's heap,
    /// once freeing a large block raised its mmap threshold) is not resident either, and
    /// reads as zeros.
    #[test]
    #[cfg(target_os = "linux")]
    fn reused_memory_is_given_back() {
        let big = std::hint::black_box(vec![1u8; 30 << 20]);
        drop(big);
        let dirty = std::hint::black_box(vec![7u8; 12 << 20]);
        drop(dirty);
        let v = zeroed::<f32>(2 << 20).unwrap(); // 8 MiB
        assert!(
            resident_pages(&v) < 64,
            "a reused buffer kept {} pages",
            resident_pages(&v)
        );
        assert!(v.iter().step_by(1000).all(|&x| x == 0.0));
    }

    /// Untouched pages of a zeroed buffer are not backed; written ones are, and a release
    /// gives them back, leaving the elements outside it as they were.
    #[test]
    #[cfg(target_os = "linux")]
    fn untouched_and_released_pages_are_not_resident() {
        let n = 16 << 20; // 64 MiB of f32: 16,384 pages
        let mut v = zeroed::<f32>(n).unwrap();
        assert!(
            resident_pages(&v) < 64,
            "reserving touched {} pages",
            resident_pages(&v)
        );
        let quarter = n / 4;
        for x in &mut v[..quarter] {
            *x = 1.5;
        }
        let written = resident_pages(&v);
        assert!(written >= quarter * 4 / PAGE, "{written} pages");
        // SAFETY: `v`'s own elements; no reference to them is alive across the call.
        let freed = unsafe { release(v.as_mut_ptr(), n, 1, quarter - 1) };
        assert!(freed >= (quarter - 2) * 4 - 2 * PAGE, "{freed}");
        assert!(
            resident_pages(&v) <= written - (quarter * 4 / PAGE - 2),
            "nothing freed"
        );
        assert_eq!(v[0], 1.5);
        assert_eq!(v[quarter - 1], 1.5);
        // A whole released page reads as zero until written again.
        assert_eq!(v[quarter / 2], 0.0);
        v[quarter / 2] = 2.0;
        assert_eq!(v[quarter / 2], 2.0);
        // Nothing outside the buffer's elements is released.
        // SAFETY: as above; an empty or inverted range releases nothing.
        assert_eq!(unsafe { release(v.as_mut_ptr(), n, 5, 5) }, 0);
        // SAFETY: as above; 100 elements span no whole page.
        assert_eq!(unsafe { release(v.as_mut_ptr(), n, 0, 100) }, 0);
    }
}
