//! Edge cases of iteration spaces: empty ranges, empty sparse arrays, zero-sized dims, a
//! range not starting at zero, under every kind of plan and worker count.

use strads::prelude::*;

#[strads::parallel_for(expect = "2d")]
fn sgd(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            wu[k] += 0.01 * err * hi[k];
        }
    }
}

#[strads::parallel_for(expect = "1d")]
fn shifted(lo: usize, hi: usize, x: &DistArray<f64, 1>, y: &mut DistArray<f64, 1>) {
    for i in lo..hi {
        y[i] = 2.0 * x[i - 1] + 1.0;
    }
}

#[strads::parallel_for(ordered, expect = "unimodular")]
fn table(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        d[[i + 1, j + 1]] = c + d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize) {
    for s in 0..n {
        out[idx[s] as usize] += 1.0;
    }
}

#[test]
fn empty_and_offset_spaces_on_every_plan() {
    for threads in 1..=3 {
        strads::with_threads(threads, || {
            // Empty sparse space.
            let r = SparseArray::<f32, 2>::from_entries([4, 5], vec![]).unwrap();
            let (mut w, mut h) = (DistArray::random([4, 3], 1), DistArray::random([5, 3], 2));
            let before = (w.clone(), h.clone());
            sgd(&r, &mut w, &mut h);
            assert_eq!((w, h), before);

            // A range that starts past zero, and an empty one.
            let x = DistArray::<f64, 1>::from_fn([10], |[i]| i as f64);
            let mut y = DistArray::<f64, 1>::zeros([10]);
            shifted(3, 8, &x, &mut y);
            let expect: Vec<f64> = (0..10)
                .map(|i| {
                    if (3..8).contains(&i) {
                        2.0 * (i - 1) as f64 + 1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            assert_eq!(y.as_slice(), &expect[..]);
            shifted(5, 5, &x, &mut y);
            shifted(7, 2, &x, &mut y);
            assert_eq!(y.as_slice(), &expect[..]);

            // A wavefront over a table with a zero-sized dim, and a 1 x 1 one.
            let cost = DistArray::<f32, 2>::zeros([0, 4]);
            let mut d = DistArray::<f32, 2>::zeros([1, 5]);
            table(&cost, &mut d);
            let cost = DistArray::<f32, 2>::from_fn([1, 1], |_| 2.0);
            let mut d = DistArray::<f32, 2>::zeros([2, 2]);
            table(&cost, &mut d);
            assert_eq!(d[[1, 1]], 2.0);

            // Reconnaissance over no iteration, then over a few.
            let idx = DistArray::<u32, 1>::from_fn([6], |[i]| (i % 3) as u32);
            let mut out = DistArray::<f64, 1>::zeros([3]);
            scatter(&idx, &mut out, 0);
            assert_eq!(out.as_slice(), &[0.0; 3]);
            scatter(&idx, &mut out, 6);
            assert_eq!(out.as_slice(), &[2.0; 3]);
        });
    }
}
