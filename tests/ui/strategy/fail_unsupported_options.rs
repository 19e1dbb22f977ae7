// `buffer(..)` and `sync = ".."` are designed but not implemented: one error each, both
// reported in one build (`expect = "reconnaissance"` beside them is accepted).

use strads::prelude::*;

#[strads::parallel_for(buffer(out), sync = "bsp", expect = "reconnaissance")]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
