// `sync = ".."` (STRADS-AP's data-parallel SyncFor) is designed but not implemented yet:
// an error at the option, reported with the loop's other errors in one build (here the
// buffered `out` written by `=`).

use strads::prelude::*;

#[strads::parallel_for(buffer(out), sync = "bsp")]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
