// An ordered prefix recurrence (`a[i] = a[i - 1] + 1.0`) carries a dependence across every
// iteration: each must wait for the one before, so no parallel strategy applies, and the
// error at `for` says why and what to change. (Unordered, the same loop falls back to
// reconnaissance: `pass_fallback.rs`.)

use strads::prelude::*;

#[strads::parallel_for(ordered)]
fn ramp(a: &mut DistArray<f32, 1>, n: usize) {
    for i in 1..n {
        a[i] = a[i - 1] + 1.0;
    }
}

fn main() {}
