// Binding the whole index (`for (key, &x) in grid`) and writing `out[key]` is the identity
// subscript: 1D-parallel like `out[[i, j]]`, and `let [u, i] = key;` destructures it.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn double(grid: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>) {
    for (key, &x) in grid {
        out[key] = 2.0 * x;
    }
}

#[strads::parallel_for(expect = "2d")]
fn bump(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>) {
    for (key, &r) in ratings {
        let [u, i] = key;
        w[[u, 0]] += r;
        h.row_mut(i)[1] += r;
    }
}

fn main() {
    let grid = DistArray::from_fn([3, 4], |[i, j]| (i * 4 + j) as f32);
    let mut out = DistArray::zeros([3, 4]);
    double(&grid, &mut out);
    assert_eq!(out[[2, 3]], 22.0);

    let ratings = SparseArray::from_entries([2, 2], vec![([0, 1], 1.0), ([1, 1], 2.0)]).unwrap();
    let (mut w, mut h) = (DistArray::zeros([2, 2]), DistArray::zeros([2, 2]));
    bump(&ratings, &mut w, &mut h);
    assert_eq!((w[[0, 0]], w[[1, 0]], h[[1, 1]]), (1.0, 2.0, 3.0));
}
