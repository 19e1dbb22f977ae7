// The fix for a closure: a function item before the loop, taking what the closure captured
// as an argument. The loop body gets its own copy of the function.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn clipped(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, limit: f32) {
    fn clip(v: f32, limit: f32) -> f32 {
        v.min(limit).max(-limit)
    }
    const SCALE: f32 = 2.0;
    for i in 0..x.len() {
        out[i] = SCALE * clip(x[i], limit);
    }
}

fn main() {
    let x = DistArray::from_vec([4], vec![-3.0, -0.5, 0.5, 3.0]).unwrap();
    let mut out = DistArray::<f32, 1>::zeros([4]);
    clipped(&x, &mut out, 1.0);
    assert_eq!(out.as_slice(), &[-2.0, -1.0, 1.0, 2.0]);
}
