// A prefix recurrence (`a[i] = a[i - 1] + 1.0`) carries a dependence across every iteration:
// no parallel strategy applies, and the error at `for` says why.

use strads::prelude::*;

#[strads::parallel_for]
fn ramp(a: &mut DistArray<f32, 1>, n: usize) {
    for i in 1..n {
        a[i] = a[i - 1] + 1.0;
    }
}

fn main() {}
