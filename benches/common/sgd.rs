//! The SGD-MF loop the benches time (the loop of `examples/sgd_mf.rs`, k factors per row,
//! learning rate and L2 as arguments) and its hand-written serial counterpart; compiled into
//! each bench through `#[path]`, so every bench times the same code.

use strads::prelude::*;

/// One SGD-MF epoch over every rating: the loop of `examples/sgd_mf.rs`, annotated.
#[strads::parallel_for]
pub(crate) fn sgd_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - reg * wk);
            hi[k] += lr * (err * wk - reg * hi[k]);
        }
    }
}

/// The update of one rating's two rows, given its error: the arithmetic of
/// `examples/sgd_mf.rs`, shared by the hand-written loops here.
#[inline(always)]
pub(crate) fn update(wu: &mut [f32], hi: &mut [f32], err: f32, lr: f32, reg: f32) {
    for k in 0..wu.len() {
        let wk = wu[k];
        wu[k] += lr * (err * hi[k] - reg * wk);
        hi[k] += lr * (err * wk - reg * hi[k]);
    }
}

/// The two rows one rating updates, of flat `[rows, k]` factor matrices.
#[inline(always)]
pub(crate) fn rows<'a>(
    w: &'a mut [f32],
    h: &'a mut [f32],
    k: usize,
    (u, i): (u32, u32),
) -> (&'a mut [f32], &'a mut [f32]) {
    let (u, i) = (u as usize, i as usize);
    (&mut w[u * k..(u + 1) * k], &mut h[i * k..(i + 1) * k])
}

/// What a user would write without strads: flat factor matrices, the same arithmetic.
#[inline(never)]
pub(crate) fn serial_epoch(
    ratings: &[(u32, u32, f32)],
    w: &mut [f32],
    h: &mut [f32],
    k: usize,
    lr: f32,
    reg: f32,
) {
    for &(u, i, r) in ratings {
        let (wu, hi) = rows(w, h, k, (u, i));
        let err = r - dot(wu, hi);
        update(wu, hi, err, lr, reg);
    }
}

#[path = "../../examples/common/adagrad.rs"]
mod adagrad;
#[allow(unused_imports)]
pub(crate) use adagrad::{SLOW, group_scales, update_adagrad};

/// One epoch of SGD-MF with a learning rate per row scaled by AdaGrad, LIBMF's update (Chin
/// et al. 2015, as LIBMF 0.9.2's `mf.cpp` runs it): two sums per row, `gw[[u, 0]]` for the
/// first [`SLOW`] factors and `gw[[u, 1]]` for the rest, starting at 1; a group steps at
/// `lr / sqrt(sum)` and its sum then adds the mean of the group's squared gradients. The
/// error uses all k factors; with `fast` false (LIBMF's first epoch) only the first group
/// is updated. The loop of `examples/sgd_mf.rs --adagrad`, annotated.
#[strads::parallel_for]
#[allow(clippy::too_many_arguments)]
pub(crate) fn adagrad_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    gw: &mut DistArray<f32, 2>,
    gh: &mut DistArray<f32, 2>,
    lr: f32,
    reg: f32,
    fast: bool,
) {
    let rk: (f32, f32) = group_scales(w.shape()[1]);
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let (gu, gi) = (gw.row_mut(u), gh.row_mut(i));
        update_adagrad((wu, hi), (gu, gi), r, (lr, reg, rk), fast);
    }
}

/// [`serial_epoch`] with AdaGrad's rates: what a user would write without strads. `gw` and
/// `gh` hold two sums per row (`[rows, 2]`, flat).
#[inline(never)]
#[allow(dead_code)]
pub(crate) fn serial_adagrad_epoch(
    ratings: &[(u32, u32, f32)],
    (w, h): (&mut [f32], &mut [f32]),
    (gw, gh): (&mut [f32], &mut [f32]),
    k: usize,
    (lr, reg): (f32, f32),
    fast: bool,
) {
    let rk = group_scales(k);
    for &(u, i, r) in ratings {
        let (wu, hi) = rows(w, h, k, (u, i));
        let (u, i) = (u as usize, i as usize);
        let (gu, gi) = (&mut gw[2 * u..2 * u + 2], &mut gh[2 * i..2 * i + 2]);
        update_adagrad((wu, hi), (gu, gi), r, (lr, reg, rk), fast);
    }
}

/// Sum of squared errors of flat factors on `data` (f64 sum, in order): the test score
/// every Rust system of a bench is measured with.
#[allow(dead_code)]
pub(crate) fn squared_error(data: &[(u32, u32, f32)], w: &[f32], h: &[f32], k: usize) -> f64 {
    data.iter()
        .map(|&(u, i, r)| {
            let (u, i) = (u as usize, i as usize);
            let e = (r - dot(&w[u * k..(u + 1) * k], &h[i * k..(i + 1) * k])) as f64;
            e * e
        })
        .sum()
}

/// A `[rows, k]` factor matrix drawn uniform in `[0, 1/sqrt(k))` with `seed` (LIBMF's
/// initialisation), the start every system of a bench shares.
pub(crate) fn init_factors(rows: usize, k: usize, seed: u64) -> DistArray<f32, 2> {
    let scale = 1.0 / (k as f32).sqrt();
    let r = DistArray::<f32, 2>::random([rows, k], seed);
    DistArray::from_fn([rows, k], |idx| r[idx] * scale)
}

/// `serial_epoch` with a software prefetch of the factor rows of the rating `ahead`
/// positions later (every cache line of both rows): the same arithmetic in the same order,
/// so the same result bit for bit; an experiment on what hiding the rows' latency is worth.
#[inline(never)]
#[allow(dead_code)]
pub(crate) fn serial_epoch_prefetch(
    ratings: &[(u32, u32, f32)],
    w: &mut [f32],
    h: &mut [f32],
    k: usize,
    lr: f32,
    reg: f32,
    ahead: usize,
) {
    for (n, &(u, i, r)) in ratings.iter().enumerate() {
        if let Some(&(pu, pi, _)) = ratings.get(n + ahead) {
            prefetch_row(&w[pu as usize * k..(pu as usize + 1) * k]);
            prefetch_row(&h[pi as usize * k..(pi as usize + 1) * k]);
        }
        let (wu, hi) = rows(w, h, k, (u, i));
        let err = r - dot(wu, hi);
        update(wu, hi, err, lr, reg);
    }
}

/// Asks the CPU to bring every cache line of `row` into L1 (a hint: no effect on results).
#[inline(always)]
#[allow(dead_code)]
pub(crate) fn prefetch_row(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let bytes = std::mem::size_of_val(row);
        let start = row.as_ptr() as *const i8;
        let mut off = 0;
        while off <= bytes {
            // The last step (off = bytes) reaches the row's last byte, on a line of its own
            // when the row is not aligned to a line.
            let at = start.wrapping_add(off.min(bytes.saturating_sub(1)));
            // SAFETY: `prefetch` only hints the cache: it never faults and reads nothing
            // the program sees, whatever the address; SSE, which it needs, is part of every
            // x86_64 CPU. The address is inside `row` anyway. Exercised by
            // `tests/it/models/bench_loops.rs` (and the sgd_mf bench's `--only variants`), which
            // check the prefetching loop's factors equal the plain loop's bit for bit.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(at) };
            off += 64;
        }
    }
}

/// A copy of `data` whose first element is aligned to `align` bytes, as a vector and the
/// offset of the copy inside it (safe Rust: over-allocate, then start at the aligned
/// element).
#[allow(dead_code)]
pub(crate) fn aligned_copy(data: &[f32], align: usize) -> (Vec<f32>, usize) {
    let mut v = vec![0.0f32; data.len() + align / 4];
    let off = v.as_ptr().align_offset(align);
    v[off..off + data.len()].copy_from_slice(data);
    (v, off)
}

/// `strads::prelude::dot` as it was before the lanes were split into two groups of four
/// (one array of eight partial sums; the same additions in the same order, so the same
/// result bit for bit): the baseline of `--only variants`' "dot before" row.
#[inline]
#[allow(dead_code)]
fn dot_before(a: &[f32], b: &[f32]) -> f32 {
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

/// `serial_epoch` with [`dot_before`].
#[inline(never)]
#[allow(dead_code)]
pub(crate) fn serial_epoch_dot_before(
    ratings: &[(u32, u32, f32)],
    w: &mut [f32],
    h: &mut [f32],
    k: usize,
    lr: f32,
    reg: f32,
) {
    for &(u, i, r) in ratings {
        let (wu, hi) = rows(w, h, k, (u, i));
        let err = r - dot_before(wu, hi);
        update(wu, hi, err, lr, reg);
    }
}
