//! Small dense kernels written so the compiler vectorises them.

/// The dot product of two equally long slices.
///
/// Eight independent partial sums, `acc[j]` over the elements `8c + j`, let the compiler keep
/// them in SIMD lanes; they are summed as `((acc0 + acc4) + (acc1 + acc5)) + ((acc2 + acc6) +
/// (acc3 + acc7))`, then the tail. The order of the additions is fixed, so the result is the
/// same on every run and every thread count.
///
/// The sums are held as two groups of four (`acc[0..4]`, `acc[4..8]`), the halves of a
/// chunk of eight: each group is one 128-bit register, filled by plain loads, and the final
/// sum starts with the two groups added lane by lane. (Written as one array of eight, the
/// compiler kept the lanes in even/odd order and shuffled every product into place: four
/// shuffles per eight elements.)
///
/// # Panics
/// When the lengths differ.
///
/// ```
/// assert_eq!(strads_runtime::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// ```
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of slices of different lengths");
    const W: usize = 8;
    const H: usize = W / 2;
    let (mut lo, mut hi) = ([0.0f32; H], [0.0f32; H]);
    let (ca, cb) = (a.chunks_exact(W), b.chunks_exact(W));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..H {
            lo[j] += x[j] * y[j];
            hi[j] += x[H + j] * y[H + j];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    // The compiler must not see how the lanes are combined below: it would lay the sums
    // out in the order of the final additions (even/odd lanes) and shuffle every product
    // into that order inside the loop. `black_box` costs two stores and loads per call.
    let (lo, hi) = (std::hint::black_box(lo), std::hint::black_box(hi));
    let s: [f32; H] = std::array::from_fn(|j| lo[j] + hi[j]);
    ((s[0] + s[1]) + (s[2] + s[3])) + tail
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
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "axpy of slices of different lengths");
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

    #[test]
    fn dot_is_bit_identical_to_the_reference_order() {
        // Values whose sums round differently in every other order.
        let mut x = 0x1234_5678u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32 - 0.5) * 1e3
        };
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
