// `ordered` is accepted: dependences then order iterations instead of only excluding each
// other. A loop without dependences stays 1D and equals the serial loop.

use strads::prelude::*;

#[strads::parallel_for(ordered, expect = "1d")]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {
    let x = DistArray::from_fn([100], |[i]| i as f32);
    let mut out = DistArray::zeros([100]);
    strads::with_threads(3, || scale(&x, &mut out));
    assert_eq!(out[99], 198.0);
}
