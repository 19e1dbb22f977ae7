//! The sweep of the `lda` example, annotated, and `ln Γ`: also compiled into
//! `tests/it/models/lda.rs` and `benches/lda.rs` (through `#[path]`), so the test and the benchmark
//! run exactly the example's loop.

use std::f64::consts::PI;

use strads::prelude::*;

/// One sweep of collapsed Gibbs sampling: every token `t` (an occurrence of word `w` in
/// document `d`, with topic `z`) is taken out of the counts and given a new topic drawn
/// from
///
/// `p(k) ∝ (ndk[d, k] + alpha) * (nwk[w, k] + beta) / (nk[k] + V * beta)`,
///
/// then put back. The random numbers of an entry come from `IterRng` keyed by
/// `(iteration, d, w)`, so every schedule draws the same numbers for the same entry.
///
/// `nk` is a write-back buffer: in a parallel sweep a worker reads its own copy, which has
/// its own updates but not yet the other workers' (they arrive when the sweep ends). The
/// totals a worker sees lag by at most one sweep, as in Orion's and Yahoo!LDA's samplers;
/// `ndk` and `nwk` are exact, since the 2D schedule never runs two iterations that share
/// a document or a word at once.
#[strads::parallel_for(buffer(nk), expect = "2d")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn gibbs(
    tokens: &mut SparseArray<Vec<u16>, 2>,
    ndk: &mut DistArray<i32, 2>,
    nwk: &mut DistArray<i32, 2>,
    nk: &mut DistArray<i32, 1>,
    alpha: f64,
    beta: f64,
    seed: u64,
    iteration: u64,
) {
    let topics: usize = ndk.shape()[1];
    let vbeta: f64 = nwk.shape()[0] as f64 * beta;
    for ([d, w], zs) in tokens.iter_mut() {
        let mut rng = IterRng::new(seed, &[iteration, d as u64, w as u64]);
        let (nd, nw) = (ndk.row_mut(d), nwk.row_mut(w));
        // Cumulative weights of the topics: on the stack up to 64 topics (an allocation
        // per entry would cost more than sampling its one or two tokens).
        let mut stack = [0.0f64; 64];
        let mut heap: Vec<f64> = Vec::new();
        let cumulative: &mut [f64] = if topics <= stack.len() {
            &mut stack[..topics]
        } else {
            heap.resize(topics, 0.0);
            &mut heap
        };
        for z in zs.iter_mut() {
            let old = *z as usize;
            nd[old] -= 1;
            nw[old] -= 1;
            nk[old] -= 1;
            let mut total = 0.0f64;
            for k in 0..topics {
                total += (f64::from(nd[k]) + alpha) * (f64::from(nw[k]) + beta)
                    / (f64::from(nk[k]) + vbeta);
                cumulative[k] = total;
            }
            let u = rng.next_f64() * total;
            let new = cumulative.partition_point(|&c| c <= u).min(topics - 1);
            nd[new] += 1;
            nw[new] += 1;
            nk[new] += 1;
            *z = new as u16;
        }
    }
}

/// Key of the initial assignment's random numbers (sweeps use their iteration number).
pub(crate) const INIT_KEY: u64 = u64::MAX;

/// The start: every token of entry `(d, w)` (its topics made by
/// `SparseArray::repeated`, one slot per occurrence) gets a uniformly random topic, keyed
/// by its entry so that the start depends on neither the thread count nor the layout, and
/// the counts follow. A loop like the sweep, so that on a cluster each rank draws the
/// topics of the entries it runs, where they are: the driver never holds them all.
/// The counts are integers, so the buffered `nk` adds up exactly.
#[strads::parallel_for(buffer(nk), expect = "2d")]
pub(crate) fn draw_topics(
    tokens: &mut SparseArray<Vec<u16>, 2>,
    ndk: &mut DistArray<i32, 2>,
    nwk: &mut DistArray<i32, 2>,
    nk: &mut DistArray<i32, 1>,
    seed: u64,
) {
    let topics: usize = ndk.shape()[1];
    for ([d, w], zs) in tokens.iter_mut() {
        let mut rng = IterRng::new(seed, &[INIT_KEY, d as u64, w as u64]);
        let (nd, nw) = (ndk.row_mut(d), nwk.row_mut(w));
        for z in zs.iter_mut() {
            let k = rng.below(topics);
            nd[k] += 1;
            nw[k] += 1;
            nk[k] += 1;
            *z = k as u16;
        }
    }
}

/// `ln Γ(x)` for `x > 0`: the Lanczos approximation (g = 7, 9 terms), relative error
/// about `1e-15`; below 0.5 through the reflection formula.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let a = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |a, (i, &c)| a + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}
