//! The loops of the `sparse_lr` example, annotated: also compiled into
//! `tests/it/models/sparse_lr.rs` and `benches/sparse_lr.rs` (through `#[path]`), so the test and
//! the benchmark run exactly the example's loops.

use strads::prelude::*;

/// One epoch of SGD on the logistic loss `log(1 + exp(-y z))`, `z = w . x`, over every
/// sample: the serial loop, annotated. `reg` is an L2 penalty applied to the weights a
/// sample touches.
#[strads::parallel_for]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lr_epoch(
    labels: &DistArray<f32, 1>,
    offsets: &DistArray<u32, 1>,
    features: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    n: usize,
    lr: f32,
    reg: f32,
) {
    for s in 0..n {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f32;
        for k in lo..hi {
            z += w[features[k] as usize] * values[k];
        }
        let y = labels[s];
        let g = -y / (1.0 + (y * z).exp()); // d/dz of log(1 + exp(-y z))
        for k in lo..hi {
            let f = features[k] as usize;
            w[f] -= lr * (g * values[k] + reg * w[f]);
        }
    }
}

/// The same epoch in the data-parallel mode (`--sync bsp`): each worker updates its own
/// replica of `w` over batches of 16,384 samples, and the replicas' differences are
/// averaged (in a fixed order) after every batch. Hub features then cost no conflicts, but
/// the result is no longer that of a serial order; with one worker it is the serial loop's.
#[strads::parallel_for(sync = "bsp", batch = 16384)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lr_epoch_bsp(
    labels: &DistArray<f32, 1>,
    offsets: &DistArray<u32, 1>,
    features: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    n: usize,
    lr: f32,
    reg: f32,
) {
    for s in 0..n {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f32;
        for k in lo..hi {
            z += w[features[k] as usize] * values[k];
        }
        let y = labels[s];
        let g = -y / (1.0 + (y * z).exp()); // d/dz of log(1 + exp(-y z))
        for k in lo..hi {
            let f = features[k] as usize;
            w[f] -= lr * (g * values[k] + reg * w[f]);
        }
    }
}

/// Correct predictions and the summed log loss of the model on a data set. `correct` and
/// `loss` are reductions: each worker adds up its own samples and the parts are combined
/// in a fixed order.
#[strads::parallel_for]
pub(crate) fn evaluate(
    labels: &DistArray<f32, 1>,
    offsets: &DistArray<u32, 1>,
    features: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    w: &DistArray<f32, 1>,
    n: usize,
) -> (usize, f64) {
    let mut correct: usize = 0;
    let mut loss: f64 = 0.0;
    for s in 0..n {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f32;
        for k in lo..hi {
            z += w[features[k] as usize] * values[k];
        }
        let y = labels[s];
        if y * z > 0.0 {
            correct += 1;
        }
        // log(1 + exp(-m)) without overflow.
        let m = f64::from(y * z);
        loss += if m > 0.0 {
            (-m).exp().ln_1p()
        } else {
            m.exp().ln_1p() - m
        };
    }
    (correct, loss)
}
