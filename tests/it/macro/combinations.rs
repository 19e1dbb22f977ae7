//! Features together, as users combine them: reconnaissance with a reduction and a
//! buffer; a range loop with non-`Copy` captures and a reduction; a wavefront with a max
//! reduction. Each equals the replay of its recorded order and, on one worker, the
//! original loop.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

/// Indirect scatter (reconnaissance) that also sums a loss (reduction) and counts hits per
/// bucket in a write-back buffer.
#[strads::parallel_for(buffer(hits), expect = "reconnaissance")]
fn scatter_loss(
    idx: &DistArray<u32, 1>,
    vals: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    hits: &mut DistArray<u32, 1>,
    n: usize,
) -> f64 {
    let mut loss: f64 = 0.0;
    for s in 0..n {
        let j = idx[s] as usize;
        let e = vals[s] - w[j];
        w[j] += 0.1 * e;
        hits[j % 4] += 1;
        loss += (e * e) as f64;
    }
    loss
}

/// A range loop reading a captured `Vec` and `String`, with a max reduction.
#[strads::parallel_for(expect = "1d")]
fn scaled(out: &mut DistArray<f64, 1>, weights: Vec<f64>, label: String, n: usize) -> f64 {
    let mut top: f64 = f64::NEG_INFINITY;
    for i in 0..n {
        let v = weights[i % weights.len()] * (i as f64) + label.len() as f64;
        out[i] = v;
        top = top.max(v);
    }
    top
}

/// An ordered wavefront with the largest cell as a reduction.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn lcs(
    a: &DistArray<u8, 1>,
    b: &DistArray<u8, 1>,
    grid: &DistArray<u8, 2>,
    t: &mut DistArray<u32, 2>,
) -> u32 {
    let mut best: u32 = 0;
    for ([i, j], _) in grid {
        let v = if a[i] == b[j] {
            t[[i, j]] + 1
        } else {
            t[[i, j + 1]].max(t[[i + 1, j]])
        };
        t[[i + 1, j + 1]] = v;
        best = best.max(v);
    }
    best
}

#[test]
fn reconnaissance_with_reduction_and_buffer() {
    let n = 3000;
    let idx = DistArray::<u32, 1>::from_fn([n], |[s]| ((s * s + 7 * s) % 301) as u32);
    let vals = DistArray::<f32, 1>::random([n], 4);
    let run = |threads: usize| {
        let (mut w, mut hits) = (
            DistArray::<f32, 1>::zeros([301]),
            DistArray::<u32, 1>::zeros([4]),
        );
        let (loss, trace) = strads::with_threads(threads, || {
            record(|| scatter_loss(&idx, &vals, &mut w, &mut hits, n))
        });
        (loss, w, hits, trace)
    };
    let (mut ws, mut hs) = (
        DistArray::<f32, 1>::zeros([301]),
        DistArray::<u32, 1>::zeros([4]),
    );
    let serial_loss = serial(|| scatter_loss(&idx, &vals, &mut ws, &mut hs, n));
    for threads in 1..=4 {
        let (loss, w, hits, trace) = run(threads);
        assert_eq!(
            hits.as_slice().iter().sum::<u32>(),
            n as u32,
            "{threads} threads"
        );
        assert_eq!(hits, hs, "integer counts are exact: {threads} threads");
        if threads == 1 {
            assert_eq!(loss.to_bits(), serial_loss.to_bits());
            assert_eq!(w, ws);
        }
        let (mut w2, mut h2) = (
            DistArray::<f32, 1>::zeros([301]),
            DistArray::<u32, 1>::zeros([4]),
        );
        let loss2 = replay(&trace, || scatter_loss(&idx, &vals, &mut w2, &mut h2, n));
        assert_eq!(loss.to_bits(), loss2.to_bits(), "{threads} threads");
        assert_eq!((w, hits), (w2, h2), "{threads} threads");
    }
}

#[test]
fn range_with_non_copy_captures_and_max() {
    let weights = vec![0.5, 1.5, -2.0];
    let mut reference = DistArray::<f64, 1>::zeros([100]);
    let top = serial(|| scaled(&mut reference, weights.clone(), "abc".to_string(), 100));
    for threads in 1..=3 {
        let mut out = DistArray::<f64, 1>::zeros([100]);
        let t = strads::with_threads(threads, || {
            scaled(&mut out, weights.clone(), "abc".to_string(), 100)
        });
        assert_eq!(out, reference);
        assert_eq!(t, top);
    }
}

#[test]
fn wavefront_with_max_reduction() {
    let a = DistArray::<u8, 1>::from_fn([57], |[i]| (i * 7 % 5) as u8);
    let b = DistArray::<u8, 1>::from_fn([43], |[j]| (j * 3 % 5) as u8);
    let grid = DistArray::<u8, 2>::zeros([57, 43]);
    let mut reference = DistArray::<u32, 2>::zeros([58, 44]);
    let best = serial(|| lcs(&a, &b, &grid, &mut reference));
    assert_eq!(best, reference[[57, 43]]);
    for threads in 1..=4 {
        let mut t = DistArray::<u32, 2>::zeros([58, 44]);
        let got = strads::with_threads(threads, || lcs(&a, &b, &grid, &mut t));
        assert_eq!(t, reference, "{threads} threads");
        assert_eq!(got, best, "{threads} threads");
    }
}
