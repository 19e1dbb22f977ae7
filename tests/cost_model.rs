//! The cost model: a call whose plan cannot beat the serial loop runs the serial loop
//! instead, with the same result. From the plan's shape (one worker; one conflict component
//! holding every iteration) in every run; from measured times only for plans whose result
//! is the serial loop's, bit for bit.

use strads::prelude::*;
use strads::testing::{bits, handed_back, serial};

/// Every iteration updates `acc[0]`: one conflict component holds them all.
#[strads::parallel_for(expect = "reconnaissance")]
fn hub(idx: &DistArray<u32, 1>, acc: &mut DistArray<f64, 1>, out: &mut DistArray<f64, 1>) {
    for i in 0..idx.len() {
        let j = idx[i] as usize;
        acc[0] = acc[0] * 0.5 + j as f64;
        out[j] += acc[0];
    }
}

/// A 1D loop with almost nothing to do per call.
#[strads::parallel_for(expect = "1d")]
fn tiny(x: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        x[i] = x[i] * 0.5 + 1.0;
    }
}

/// A 2D loop: its plan reorders conflicting iterations, so timing never changes which
/// way it runs (its result would change).
#[strads::parallel_for(expect = "2d")]
fn grid(r: &SparseArray<f32, 2>, w: &mut DistArray<f32, 1>, h: &mut DistArray<f32, 1>) {
    for ([u, i], &v) in r {
        let e = v - w[u] * h[i];
        w[u] += 0.01 * e * h[i];
        h[i] += 0.01 * e * w[u];
    }
}

#[test]
fn one_component_runs_the_serial_loop_with_its_result() {
    let n = 5000;
    let idx = DistArray::from_vec([n], (0..n as u32).map(|i| (i * 7) % 300).collect()).unwrap();
    let run = || {
        let (mut acc, mut out) = (DistArray::<f64, 1>::zeros([1]), DistArray::zeros([300]));
        for _ in 0..3 {
            hub(&idx, &mut acc, &mut out);
        }
        (bits(&acc), bits(&out))
    };
    let want = serial(run);
    let before = handed_back();
    let got = strads::with_threads(2, run);
    assert_eq!(got, want);
    assert_eq!(handed_back() - before, 3, "every call runs the serial loop");
}

#[test]
fn one_worker_runs_the_serial_loop() {
    let start = DistArray::<f32, 1>::from_fn([1000], |[i]| i as f32);
    let mut want = start.clone();
    serial(|| tiny(&mut want));
    let mut got = start.clone();
    let before = handed_back();
    strads::with_threads(1, || tiny(&mut got));
    assert_eq!(handed_back() - before, 1);
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn measured_times_send_a_loop_too_small_to_pay_to_its_serial_loop() {
    let start = DistArray::<f32, 1>::from_fn([8], |[i]| i as f32);
    let mut want = start.clone();
    serial(|| (0..40).for_each(|_| tiny(&mut want)));
    let mut got = start.clone();
    let before = handed_back();
    strads::with_threads(2, || (0..40).for_each(|_| tiny(&mut got)));
    // The first call runs the plan, the second tries the serial loop; the measurements
    // then choose it (eight iterations cannot pay for waking a worker), and the plan is
    // tried again only after many more calls than these.
    assert!(handed_back() - before >= 38, "{}", handed_back() - before);
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn a_plan_that_reorders_is_never_timed_out_of_running() {
    let entries: Vec<([usize; 2], f32)> = (0..2000)
        .map(|k| ([k % 17, (k * 7) % 13], (k % 5) as f32))
        .collect();
    let r = SparseArray::from_entries([17, 13], entries).unwrap();
    let run = || {
        let (mut w, mut h) = (
            DistArray::<f32, 1>::random([17], 1),
            DistArray::random([13], 2),
        );
        for _ in 0..30 {
            grid(&r, &mut w, &mut h);
        }
        (bits(&w), bits(&h))
    };
    let before = handed_back();
    let a = strads::with_threads(2, run);
    assert_eq!(
        handed_back() - before,
        0,
        "a 2D plan runs whatever it costs"
    );
    // And its result is the same on every run: no timing decides it.
    assert_eq!(strads::with_threads(2, run), a);
}
