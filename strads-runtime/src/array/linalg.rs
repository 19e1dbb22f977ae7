//! Small dense kernels written so the compiler vectorises them.

/// Panics, at the caller's line, when the rows `helper` was given differ in length.
#[inline(always)]
#[track_caller]
fn same_lengths(helper: &str, a: usize, b: usize) {
    if a != b {
        panic!(
            "strads::{helper} of slices of different lengths ({a} and {b}): pass rows of the \
             same length, such as `w.row(u)` and `h.row(i)` of two arrays with as many columns"
        );
    }
}

/// The dot product of two equally long slices.
///
/// Eight independent partial sums, `acc[j]` over the elements `8c + j`, let the compiler keep
/// them in SIMD lanes; they are summed as `((acc0 + acc4) + (acc1 + acc5)) + ((acc2 + acc6) +
/// (acc3 + acc7))`, then the tail. The order of the additions is fixed, so the result is the
/// same on every run and every thread count.
///
/// On x86_64 the sums are two SSE registers, `acc[0..4]` and `acc[4..8]` (the halves of each
/// chunk of eight, filled by plain loads), and the final sum starts with the two added lane
/// by lane. Written in portable Rust, the compiler laid the sums out in even/odd lanes to
/// suit the final pairs and shuffled every product into that order inside the loop (four
/// shuffles per eight elements), and a barrier against that (`black_box`) put a store and a
/// load on the path from one update to the next dot product of the same row.
///
/// # Panics
/// When the lengths differ.
///
/// ```
/// assert_eq!(strads_runtime::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// ```
#[inline(always)]
#[track_caller]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    same_lengths("dot", a.len(), b.len());
    const W: usize = 8;
    let (ca, cb) = (a.chunks_exact(W), b.chunks_exact(W));
    let mut tail = 0.0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    dot_chunks(ca, cb) + tail
}

/// `((acc0 + acc4) + (acc1 + acc5)) + ((acc2 + acc6) + (acc3 + acc7))` over whole chunks of
/// eight, with SSE (part of every x86_64 CPU).
#[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
#[inline(always)]
fn dot_chunks(ca: std::slice::ChunksExact<'_, f32>, cb: std::slice::ChunksExact<'_, f32>) -> f32 {
    use std::arch::x86_64::{_mm_add_ps, _mm_loadu_ps, _mm_mul_ps, _mm_setzero_ps};
    // SAFETY: SSE is enabled for this build (the `cfg` above; every x86_64 CPU has it), so
    // the intrinsics may run. Each chunk `x`, `y` holds exactly 8 `f32`s (`chunks_exact`),
    // so the unaligned 4-lane loads at offsets 0 and 4 read inside them. Tested bit for bit
    // against the portable order (`dot_is_bit_identical_to_the_reference_order`).
    unsafe {
        let (mut lo, mut hi) = (_mm_setzero_ps(), _mm_setzero_ps());
        for (x, y) in ca.zip(cb) {
            let (x, y) = (x.as_ptr(), y.as_ptr());
            lo = _mm_add_ps(lo, _mm_mul_ps(_mm_loadu_ps(x), _mm_loadu_ps(y)));
            hi = _mm_add_ps(
                hi,
                _mm_mul_ps(_mm_loadu_ps(x.add(4)), _mm_loadu_ps(y.add(4))),
            );
        }
        halves_sum(lo, hi)
    }
}

/// The eight partial sums of two SSE registers, in `dot`'s order: `s = [acc0 + acc4, acc1
/// + acc5, acc2 + acc6, acc3 + acc7]`; `t = s + [s1, s0, s3, s2]` holds `s0 + s1` in lane
/// 0 and `s2 + s3` in lane 2; their sum is the result.
#[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
#[inline(always)]
fn halves_sum(lo: std::arch::x86_64::__m128, hi: std::arch::x86_64::__m128) -> f32 {
    use std::arch::x86_64::{_mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps};
    // SAFETY: SSE is enabled for this build (the `cfg` above); the intrinsics work on
    // registers only.
    unsafe {
        let s = _mm_add_ps(lo, hi);
        let t = _mm_add_ps(s, _mm_shuffle_ps::<0b10_11_00_01>(s, s));
        _mm_cvtss_f32(_mm_add_ss(t, _mm_movehl_ps(t, t)))
    }
}

/// The same sums in portable Rust, for other targets.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
#[inline(always)]
fn dot_chunks(ca: std::slice::ChunksExact<'_, f32>, cb: std::slice::ChunksExact<'_, f32>) -> f32 {
    let mut acc = [0.0f32; 8];
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let s01 = (acc[0] + acc[4]) + (acc[1] + acc[5]);
    let s23 = (acc[2] + acc[6]) + (acc[3] + acc[7]);
    s01 + s23
}

/// `[a . b, a . a, b . b]` in one pass over the two slices, each bit for bit what [`dot`]
/// gives (the same eight partial sums, added in the same order): the three products an
/// AdaGrad step needs of a user's and an item's factors, for the loads of one.
///
/// # Panics
/// When the lengths differ.
///
/// ```
/// let (a, b) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);
/// assert_eq!(strads_runtime::dots(&a, &b), [32.0, 14.0, 77.0]);
/// ```
#[inline(always)]
#[track_caller]
pub fn dots(a: &[f32], b: &[f32]) -> [f32; 3] {
    same_lengths("dots", a.len(), b.len());
    const W: usize = 8;
    let (ca, cb) = (a.chunks_exact(W), b.chunks_exact(W));
    let mut tail = [0.0f32; 3];
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail[0] += x * y;
        tail[1] += x * x;
        tail[2] += y * y;
    }
    let c = dots_chunks(ca, cb);
    [c[0] + tail[0], c[1] + tail[1], c[2] + tail[2]]
}

/// [`dot_chunks`] three times over, in one loop.
#[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
#[inline(always)]
fn dots_chunks(
    ca: std::slice::ChunksExact<'_, f32>,
    cb: std::slice::ChunksExact<'_, f32>,
) -> [f32; 3] {
    use std::arch::x86_64::{_mm_add_ps, _mm_loadu_ps, _mm_mul_ps, _mm_setzero_ps};
    // SAFETY: as in `dot_chunks`: SSE is enabled for this build, and each chunk holds
    // exactly 8 `f32`s, so the 4-lane loads at offsets 0 and 4 read inside it. Tested bit
    // for bit against three `dot`s (`dots_equal_three_dots`).
    unsafe {
        let z = _mm_setzero_ps();
        let (mut ab, mut aa, mut bb) = ([z, z], [z, z], [z, z]);
        for (x, y) in ca.zip(cb) {
            let (x, y) = (x.as_ptr(), y.as_ptr());
            for (h, off) in [(0, 0), (1, 4)] {
                let (xv, yv) = (_mm_loadu_ps(x.add(off)), _mm_loadu_ps(y.add(off)));
                ab[h] = _mm_add_ps(ab[h], _mm_mul_ps(xv, yv));
                aa[h] = _mm_add_ps(aa[h], _mm_mul_ps(xv, xv));
                bb[h] = _mm_add_ps(bb[h], _mm_mul_ps(yv, yv));
            }
        }
        [
            halves_sum(ab[0], ab[1]),
            halves_sum(aa[0], aa[1]),
            halves_sum(bb[0], bb[1]),
        ]
    }
}

/// The same sums in portable Rust, for other targets.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
#[inline(always)]
fn dots_chunks(
    ca: std::slice::ChunksExact<'_, f32>,
    cb: std::slice::ChunksExact<'_, f32>,
) -> [f32; 3] {
    [
        dot_chunks(ca.clone(), cb.clone()),
        dot_chunks(ca.clone(), ca),
        dot_chunks(cb.clone(), cb),
    ]
}

/// `y += alpha * x`, element by element.
///
/// # Panics
/// When the lengths differ.
///
/// ```
/// let mut y = [1.0, 1.0];
/// strads_runtime::axpy(2.0, &[1.0, 3.0], &mut y);
/// assert_eq!(y, [3.0, 7.0]);
/// ```
#[inline]
#[track_caller]
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    if x.len() != y.len() {
        panic!(
            "strads::axpy of slices of different lengths ({} and {}): `x` and `y` must be \
             rows of the same length",
            x.len(),
            y.len()
        );
    }
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eight-accumulator dot product as it was first written (one array of eight): the
    /// reference the current one must equal bit for bit.
    fn dot_reference(a: &[f32], b: &[f32]) -> f32 {
        const W: usize = 8;
        let mut acc = [0.0f32; W];
        let (ca, ra) = a.split_at(a.len() / W * W);
        let (cb, rb) = b.split_at(ca.len());
        for (x, y) in ca.chunks_exact(W).zip(cb.chunks_exact(W)) {
            for k in 0..W {
                acc[k] += x[k] * y[k];
            }
        }
        let mut tail = 0.0f32;
        for (x, y) in ra.iter().zip(rb) {
            tail += x * y;
        }
        let s01 = (acc[0] + acc[4]) + (acc[1] + acc[5]);
        let s23 = (acc[2] + acc[6]) + (acc[3] + acc[7]);
        (s01 + s23) + tail
    }

    /// Values in (-500, 500) whose sums round differently in every other order.
    fn values(seed: u32) -> impl FnMut() -> f32 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32 - 0.5) * 1e3
        }
    }

    #[test]
    fn dots_equal_three_dots() {
        let mut next = values(0x2468_ace1);
        for n in [0, 1, 7, 8, 9, 16, 24, 31, 32, 33, 100] {
            for _ in 0..50 {
                let a: Vec<f32> = (0..n).map(|_| next()).collect();
                let b: Vec<f32> = (0..n).map(|_| next()).collect();
                let want = [dot(&a, &b), dot(&a, &a), dot(&b, &b)].map(f32::to_bits);
                assert_eq!(dots(&a, &b).map(f32::to_bits), want, "n = {n}");
            }
        }
    }

    #[test]
    fn dot_is_bit_identical_to_the_reference_order() {
        let mut next = values(0x1234_5678);
        for n in [0, 1, 5, 8, 13, 16, 31, 32, 33, 64, 100] {
            for _ in 0..50 {
                let a: Vec<f32> = (0..n).map(|_| next()).collect();
                let b: Vec<f32> = (0..n).map(|_| next()).collect();
                assert_eq!(
                    dot(&a, &b).to_bits(),
                    dot_reference(&a, &b).to_bits(),
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn dot_matches_naive_on_integers() {
        for n in [0, 1, 7, 8, 9, 32, 33] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&a, &b), naive, "n = {n}");
        }
    }
}
