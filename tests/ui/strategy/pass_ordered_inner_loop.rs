// An `ordered` loop reaching rows element by element through an inner loop (`w[[u, k]]`
// for `k in 0..4`): an ordered 2D wavefront, equal to the serial loop.

use strads::prelude::*;

#[strads::parallel_for(ordered, expect = "2d")]
fn sgd(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>) {
    for ([u, i], &r) in ratings {
        let mut pred = 0.0f32;
        for k in 0..4 {
            pred += w[[u, k]] * h[[i, k]];
        }
        for k in 0..4 {
            let wk = w[[u, k]];
            w[[u, k]] += 0.01 * (r - pred) * h[[i, k]];
            h[[i, k]] += 0.01 * (r - pred) * wk;
        }
    }
}

fn main() {
    let entries = (0..200).map(|x| ([x % 13, (x * 7) % 17], 1.0 + (x % 5) as f32)).collect();
    let ratings = SparseArray::from_entries([13, 17], entries).unwrap().sorted();
    let (mut w, mut h) = (DistArray::random([13, 4], 1), DistArray::random([17, 4], 2));
    let (mut w2, mut h2) = (w.clone(), h.clone());
    sgd(&ratings, &mut w, &mut h);
    strads::testing::serial(|| sgd(&ratings, &mut w2, &mut h2));
    assert_eq!(w.as_slice(), w2.as_slice());
    assert_eq!(h.as_slice(), h2.as_slice());
}
