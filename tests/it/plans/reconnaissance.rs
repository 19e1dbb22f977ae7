//! Reconnaissance end to end: loops whose subscripts are read from data run in parallel
//! through a recording pass and task groups, and every run equals the serial replay of its
//! recorded order, bit for bit; one worker equals the original loop; plans are reused.

use strads::prelude::*;
use strads::testing::{assert_replay_equal, bits, serial};

/// Sparse logistic regression by SGD over samples in compressed rows: `w[features[k]]`.
#[strads::parallel_for(expect = "reconnaissance")]
fn lr_epoch(
    labels: &DistArray<f32, 1>,
    offsets: &DistArray<u32, 1>,
    features: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    n: usize,
    lr: f32,
) {
    for s in 0..n {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f32;
        for k in lo..hi {
            z += w[features[k] as usize] * values[k];
        }
        let y = labels[s];
        let g = -y / (1.0 + (y * z).exp());
        for k in lo..hi {
            let f = features[k] as usize;
            w[f] -= lr * (g * values[k] + 0.001 * w[f]);
        }
    }
}

/// Samples with a few features each, drawn with skew so some features are shared widely.
fn data(
    n: usize,
    features: usize,
) -> (
    DistArray<f32, 1>,
    DistArray<u32, 1>,
    DistArray<u32, 1>,
    DistArray<f32, 1>,
) {
    let r = DistArray::<f64, 1>::random([n * 8], 5);
    let mut offsets = vec![0u32];
    let mut feats = Vec::new();
    let mut vals = Vec::new();
    let mut labels = Vec::new();
    for s in 0..n {
        let k = 1 + (r[s * 8] * 4.0) as usize;
        for j in 0..k {
            // Squared uniform: low ids are popular.
            let f = ((r[s * 8 + 1 + j].powi(3)) * features as f64) as u32;
            if !feats[offsets[s] as usize..].contains(&f) {
                feats.push(f);
                vals.push(1.0 + r[s * 8 + 6] as f32);
            }
        }
        offsets.push(feats.len() as u32);
        labels.push(if r[s * 8 + 7] > 0.5 { 1.0 } else { -1.0 });
    }
    let d1 = |v: Vec<f32>| DistArray::from_vec([v.len()], v).unwrap();
    let u1 = |v: Vec<u32>| DistArray::from_vec([v.len()], v).unwrap();
    (d1(labels), u1(offsets), u1(feats), d1(vals))
}

#[test]
fn indirect_loop_equals_replay_on_any_worker_count() {
    let (labels, offsets, features, values) = data(3000, 400);
    let n = labels.len();
    let runs = assert_replay_equal(
        1..=4,
        || DistArray::<f32, 1>::zeros([400]),
        |w| {
            for _ in 0..3 {
                lr_epoch(&labels, &offsets, &features, &values, w, n, 0.1);
            }
        },
    );
    for ((_, (), trace), threads) in runs.iter().zip(1..) {
        let plan = &trace.runs[0].plan;
        assert!(
            plan.starts_with(&format!("reconnaissance workers={threads} ")),
            "{plan}"
        );
        let mut ids = trace.runs[0].order();
        ids.sort();
        assert_eq!(ids, (0..n).collect::<Vec<_>>(), "every sample exactly once");
    }
}

#[test]
fn one_worker_equals_the_original_loop() {
    let (labels, offsets, features, values) = data(500, 50);
    let n = labels.len();
    let mut w = DistArray::<f32, 1>::zeros([50]);
    strads::with_threads(1, || {
        lr_epoch(&labels, &offsets, &features, &values, &mut w, n, 0.1)
    });
    let mut reference = DistArray::<f32, 1>::zeros([50]);
    serial(|| {
        lr_epoch(
            &labels,
            &offsets,
            &features,
            &values,
            &mut reference,
            n,
            0.1,
        )
    });
    assert_eq!(bits(&w), bits(&reference));
}
