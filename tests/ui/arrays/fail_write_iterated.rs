// Writing the array the loop iterates over is an error at the write. rustc also reports the
// borrow conflict in the original function, which is emitted unchanged beside the error.

use strads::prelude::*;

#[strads::parallel_for]
fn double(grid: &mut DistArray<f32, 2>) {
    for ([i, j], &x) in grid.iter() {
        grid[[i, j]] = 2.0 * x;
    }
}

fn main() {}
