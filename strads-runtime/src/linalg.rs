//! Small dense kernels written so the compiler vectorises them.

/// The dot product of two equally long slices.
///
/// Eight independent partial sums let the compiler keep them in SIMD lanes; the order of
/// the additions is fixed, so the result is the same on every run and every thread count.
///
/// # Panics
/// When the lengths differ.
///
/// ```
/// assert_eq!(strads_runtime::dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
/// ```
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of slices of different lengths");
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
