// Perfectly nested range loops are a 2-D iteration space: an ordered 5-point Gauss-Seidel
// sweep (an ordered 2D wavefront) and a Jacobi step writing another array (1D). Both equal
// the loops written by hand.

use strads::prelude::*;

#[strads::parallel_for(ordered, expect = "2d")]
fn gauss_seidel(u: &mut DistArray<f64, 2>, n: usize, m: usize) {
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            u[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
        }
    }
}

#[strads::parallel_for(expect = "1d")]
fn jacobi(u: &DistArray<f64, 2>, v: &mut DistArray<f64, 2>) {
    for i in 1..u.shape()[0] - 1 {
        for j in 1..u.shape()[1] - 1 {
            v[[i, j]] = 0.25 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]);
        }
    }
}

fn main() {
    let (n, m) = (40, 30);
    let start = DistArray::from_fn([n, m], |[i, j]| ((i * 7 + j * 3) % 11) as f64);
    let mut u = start.clone();
    gauss_seidel(&mut u, n, m);
    let mut by_hand = start.clone();
    for i in 1..n - 1 {
        for j in 1..m - 1 {
            by_hand[[i, j]] = 0.25
                * (by_hand[[i - 1, j]] + by_hand[[i + 1, j]] + by_hand[[i, j - 1]] + by_hand[[i, j + 1]]);
        }
    }
    assert_eq!(u.as_slice(), by_hand.as_slice());
    let mut v = DistArray::zeros([n, m]);
    jacobi(&start, &mut v);
    assert_eq!(v[[1, 1]], 0.25 * (start[[0, 1]] + start[[2, 1]] + start[[1, 0]] + start[[1, 2]]));
}
