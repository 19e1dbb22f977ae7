// Iterating a dense `DistArray` (`for ([i, j], &x) in grid`) writing `out[[i, j]]` compiles
// and equals the serial loop, with any number of threads.

use strads::prelude::*;

#[strads::parallel_for]
fn smooth(grid: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>, alpha: f32) {
    for ([i, j], &x) in grid {
        out[[i, j]] = alpha * x + (1.0 - alpha) * (i + j) as f32;
    }
}

fn main() {
    let grid = DistArray::from_fn([7, 5], |[i, j]| (i * 5 + j) as f32);
    for threads in [1, 2, 3] {
        let mut out = DistArray::zeros([7, 5]);
        strads::with_threads(threads, || smooth(&grid, &mut out, 0.5));
        for i in 0..7 {
            for j in 0..5 {
                let want = 0.5 * (i * 5 + j) as f32 + 0.5 * (i + j) as f32;
                assert_eq!(out[[i, j]], want, "{threads} threads, [{i}, {j}]");
            }
        }
    }
}
