//! A reconnaissance plan is reused only while everything that may steer the loop's
//! accesses is the same: the arrays it reads and the captured values that reach a
//! subscript or a condition. A call with another offset is planned again and equals the
//! serial loop; a value that only flows into elements (a rate) keeps the plan.

use strads::prelude::*;
use strads::testing::{bits, serial};

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(
    idx: &DistArray<u32, 1>,
    out: &mut DistArray<f32, 1>,
    n: usize,
    offset: usize,
    rate: f32,
) {
    for i in 0..n {
        let j = idx[i] as usize + offset;
        out[j] = out[j] * 0.5 + rate;
    }
}

/// The offset reaches the subscript only through a condition.
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter_if(idx: &DistArray<u32, 1>, out: &mut DistArray<f32, 1>, n: usize, shifted: bool) {
    for i in 0..n {
        let mut j = idx[i] as usize;
        if shifted {
            j += 1;
        }
        out[j] += 1.0;
    }
}

#[test]
fn another_offset_is_planned_again() {
    let n = 4000;
    let idx = DistArray::from_vec([n], (0..n as u32).map(|i| (i * 37) % 500).collect()).unwrap();
    let calls = [(0, 0.5), (7, 0.5), (0, 0.25), (300, 1.0), (7, 2.0)];
    let mut want = DistArray::<f32, 1>::random([900], 1);
    let start = want.clone();
    serial(|| {
        for &(offset, rate) in &calls {
            scatter(&idx, &mut want, n, offset, rate);
        }
    });
    for threads in 1..=4 {
        let mut got = start.clone();
        strads::with_threads(threads, || {
            for &(offset, rate) in &calls {
                scatter(&idx, &mut got, n, offset, rate);
            }
        });
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
    }
}

#[test]
fn a_value_deciding_a_branch_keys_the_plan() {
    let n = 4000;
    let idx = DistArray::from_vec([n], (0..n as u32).map(|i| (i * 37) % 500).collect()).unwrap();
    let mut want = DistArray::<f32, 1>::zeros([501]);
    serial(|| {
        for shifted in [false, true, false] {
            scatter_if(&idx, &mut want, n, shifted);
        }
    });
    for threads in 1..=4 {
        let mut got = DistArray::<f32, 1>::zeros([501]);
        strads::with_threads(threads, || {
            for shifted in [false, true, false] {
                scatter_if(&idx, &mut got, n, shifted);
            }
        });
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
    }
}
