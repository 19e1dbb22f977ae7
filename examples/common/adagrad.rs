//! LIBMF's AdaGrad update (Chin et al. 2015, as LIBMF 0.9.2's `mf.cpp` runs it), shared by
//! `examples/sgd_mf.rs --adagrad` and the benches' annotated and hand-written loops
//! (`benches/common/sgd.rs`, through `#[path]`), so all of them run the same arithmetic.
//!
//! Each row keeps two squared-gradient sums, the first for its first [`SLOW`] factors and
//! the second for the rest, both starting at 1; a group's factors step at `lr / sqrt(sum)`,
//! and after the step its sum adds the mean of the group's squared gradients (over the
//! group's width, k padded to a multiple of [`SLOW`] as LIBMF pads it). The error uses all
//! k factors. In its first epoch LIBMF updates the first group only (`fast` false).

use strads::prelude::*;

/// The factors of AdaGrad's first group (LIBMF's `kALIGN`).
pub(crate) const SLOW: usize = 8;

/// One over the widths of the two groups of factors for rows of `k`.
#[inline(always)]
pub(crate) fn group_scales(k: usize) -> (f32, f32) {
    let fast_width = (k.div_ceil(SLOW) * SLOW).saturating_sub(SLOW).max(1);
    (1.0 / SLOW as f32, 1.0 / fast_width as f32)
}

/// The update of one rating `r`'s two rows and their two sums each (`rk` from
/// [`group_scales`]).
#[inline(always)]
pub(crate) fn update_adagrad(
    (wu, hi): (&mut [f32], &mut [f32]),
    (gu, gi): (&mut [f32], &mut [f32]),
    r: f32,
    (lr, reg, rk): (f32, f32, (f32, f32)),
    fast: bool,
) {
    let (ws, wf) = wu.split_at_mut(SLOW.min(wu.len()));
    let (hs, hf) = hi.split_at_mut(SLOW.min(hi.len()));
    // Each group's three products in one pass (the same bits as three `dot`s); the second
    // group's norms only when it steps.
    let slow = dots(ws, hs);
    let rest = if fast {
        dots(wf, hf)
    } else {
        [dot(wf, hf), 0.0, 0.0]
    };
    let err = r - (slow[0] + rest[0]);
    // Both groups' rates, read before either group's sums change.
    let rate = [gu[0], gi[0], gu[1], gi[1]].map(|g| lr / g.sqrt());
    let (sw, sh) = adagrad_step((ws, hs), err, slow, (rate[0], rate[1]), (reg, rk.0));
    gu[0] += sw;
    gi[0] += sh;
    if fast && !wf.is_empty() {
        let (sw, sh) = adagrad_step((wf, hf), err, rest, (rate[2], rate[3]), (reg, rk.1));
        gu[1] += sw;
        gi[1] += sh;
    }
}

/// One group's step (LIBMF's `sg_update`): factors `p` of a user and `q` of an item
/// (`[p . q, p . p, q . q]` before the step) step against the rating's error `err` at
/// their rows' rates `lp`, `lq`; returns what their sums add, the mean of the squared
/// gradient over the group (`rk`: one over its width). The squared norms come from the dot
/// products (`|reg p - err q|^2` expanded), so the step itself is the plain SGD loop with
/// two rates.
#[inline(always)]
fn adagrad_step(
    (p, q): (&mut [f32], &mut [f32]),
    err: f32,
    [pq, pp, qq]: [f32; 3],
    (lp, lq): (f32, f32),
    (reg, rk): (f32, f32),
) -> (f32, f32) {
    let cross = 2.0 * reg * err * pq;
    let sp = ((reg * reg * pp - cross + err * err * qq) * rk).max(0.0);
    let sq = ((reg * reg * qq - cross + err * err * pp) * rk).max(0.0);
    for (a, b) in p.iter_mut().zip(q.iter_mut()) {
        let (x, y) = (*a, *b);
        *a = x + lp * (err * y - reg * x);
        *b = y + lq * (err * x - reg * y);
    }
    (sp, sq)
}
