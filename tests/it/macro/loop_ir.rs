//! The loop IR is the whole loop: its buffers (with `max_delay` and apply functions), its
//! reductions and `ordered` are in `SPEC`, and a spec that went through bytes (as it will
//! to another process, or into a checkpoint) is the same spec, analysed the same way.

use strads::__private::{BufferSpec, LoopSpec, ReduceOp, ReductionSpec};
use strads::prelude::*;

fn decay(g: f32, w: &mut f32) {
    *w -= 0.1 * g;
}

#[strads::parallel_for(buffer(g, max_delay = 4), buffer(u, apply = decay(w)))]
fn gradients(
    x: &DistArray<f32, 2>,
    g: &mut DistArray<f32, 1>,
    u: &mut DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    n: usize,
) -> (f64, f32) {
    let mut loss: f64 = 0.0;
    let mut worst: f32 = 0.0;
    for i in 0..n {
        let row = x.row(i);
        for k in 0..row.len() {
            g[k] += row[k];
            u[k] += 0.5 * row[k];
        }
        loss += row[0] as f64;
        worst = worst.max(row[0]);
    }
    (loss, worst)
}

#[strads::parallel_for(ordered)]
fn sweep(d: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n {
        for j in 1..m {
            d[[i, j]] += d[[i - 1, j]] + d[[i, j - 1]];
        }
    }
}

fn shipped(spec: &LoopSpec) -> LoopSpec {
    let bytes = postcard::to_allocvec(spec).expect("a spec serializes");
    postcard::from_bytes(&bytes).expect("and deserializes")
}

#[test]
fn buffers_max_delay_and_reductions_are_in_the_spec() {
    let spec = GradientsLoop::SPEC;
    let array = |name: &str| {
        spec.arrays
            .iter()
            .position(|a| a.name == name)
            .expect("the array is in the spec")
    };
    assert_eq!(
        spec.buffers.to_vec(),
        vec![
            BufferSpec::new(array("g")),
            BufferSpec::applied(array("u"), "decay", &[3]),
        ]
    );
    assert_eq!(
        spec.buffers[1].apply.as_ref().unwrap().targets[0],
        array("w")
    );
    assert_eq!(spec.max_delay, Some(4));
    assert_eq!(
        spec.reductions.to_vec(),
        vec![
            ReductionSpec::new("loss", ReduceOp::Add),
            ReductionSpec::new("worst", ReduceOp::Max),
        ]
    );
    let (plain, ordered) = (spec, SweepLoop::SPEC);
    assert_eq!((plain.ordered, ordered.ordered), (false, true));
    assert!(SweepLoop::SPEC.buffers.is_empty() && SweepLoop::SPEC.max_delay.is_none());
}

#[test]
fn a_shipped_spec_is_the_same_loop() {
    for spec in [GradientsLoop::SPEC, SweepLoop::SPEC] {
        let back = shipped(&spec);
        assert_eq!(back, spec);
        assert_eq!(
            strads_analysis::analyze(&back),
            strads_analysis::analyze(&spec)
        );
    }
}

#[test]
fn the_loop_runs_with_its_spec() {
    let x = DistArray::from_fn([40, 3], |[i, k]| (i * 3 + k) as f32 / 16.0);
    let serial = strads::testing::serial(|| {
        let (mut g, mut u, mut w) = (
            DistArray::zeros([3]),
            DistArray::zeros([3]),
            DistArray::zeros([3]),
        );
        let r = gradients(&x, &mut g, &mut u, &mut w, 40);
        (r, g, u, w)
    });
    for threads in 1..=3 {
        let (r, g, u, w) = strads::with_threads(threads, || {
            let (mut g, mut u, mut w) = (
                DistArray::zeros([3]),
                DistArray::zeros([3]),
                DistArray::zeros([3]),
            );
            let r = gradients(&x, &mut g, &mut u, &mut w, 40);
            (r, g, u, w)
        });
        assert_eq!(r.1, serial.0.1, "{threads} threads");
        assert!((r.0 - serial.0.0).abs() < 1e-9, "{threads} threads");
        for (a, b) in [(&g, &serial.1), (&u, &serial.2), (&w, &serial.3)] {
            for (x, y) in a.as_slice().iter().zip(b.as_slice()) {
                assert!((x - y).abs() < 1e-4, "{threads} threads: {x} against {y}");
            }
        }
    }
}
