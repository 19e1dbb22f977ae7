//! Transparent huge pages for large arrays.
//!
//! A loop that reaches rows of a large array at random (SGD-MF's factors, LDA's counts)
//! misses the TLB on most accesses with 4 KiB pages: 25 MB of factors span 6,400 pages
//! against a second-level TLB of about 2,000 entries. Where the kernel leaves transparent
//! huge pages to the program (`/sys/kernel/mm/transparent_hugepage/enabled` set to
//! `madvise`, the default of several distributions), an array's buffer asks for them when
//! it is reserved, before its pages are touched, so the first touch maps 2 MiB pages.
//! Nothing changes where huge pages are always on or never, or off Linux.

/// Buffers smaller than this are left alone (a huge page is 2 MiB; the advice covers only
/// the whole huge pages inside the buffer).
const AT_LEAST: usize = 4 << 20;

/// Advises the kernel to back `v`'s reserved memory with huge pages, when it is large.
pub(crate) fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < AT_LEAST {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let end = (start + bytes) / HUGE * HUGE;
        if end <= first {
            return;
        }
        let Some(ptr) = std::ptr::NonNull::new(first as *mut std::ffi::c_void) else {
            return;
        };
        // SAFETY: `[first, end)` lies inside `v`'s allocation (its capacity), which `v`
        // keeps alive during the call. `MADV_HUGEPAGE` only changes how the kernel backs
        // those pages; it neither frees nor changes their contents, so no Rust reference
        // into the buffer is invalidated. A refusal (a kernel without the advice) is
        // ignored: the buffer keeps its small pages.
        let _ = unsafe {
            nix::sys::mman::madvise(ptr, end - first, nix::sys::mman::MmapAdvise::MADV_HUGEPAGE)
        };
    }
}

#[cfg(test)]
mod tests {
    /// The advised range shows in the kernel's map of this process (`hg` among the flags
    /// of the mapping holding it), and the buffer holds what was written to it.
    #[test]
    fn large_buffers_ask_for_huge_pages() {
        let n = 16 << 20;
        let mut v: Vec<u8> = Vec::with_capacity(n);
        super::advise(&v);
        v.extend((0..n).map(|i| (i % 251) as u8));
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            let at = (v.as_ptr() as usize).next_multiple_of(2 << 20);
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let mut inside = false;
            let mut flags = None;
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ')
                    && let Some((a, b)) = range.split_once('-')
                    && let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= at && at < b;
                } else if inside && let Some(f) = line.strip_prefix("VmFlags:") {
                    flags = Some(f.to_string());
                }
            }
            let flags = flags.expect("the buffer's mapping is in /proc/self/smaps");
            assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        }
    }

    /// Small buffers are left alone.
    #[test]
    fn small_buffers_are_left_alone() {
        let v: Vec<u8> = Vec::with_capacity(1 << 20);
        super::advise(&v);
        let v2: Vec<u64> = Vec::new();
        super::advise(&v2);
    }
}
