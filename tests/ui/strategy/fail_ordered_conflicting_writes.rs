// Two conflicting writes in an ordered loop: iteration `i` writes `a[i]` and `a[i - 1]`, so
// it overwrites what iteration `i - 1` wrote, and `b[i]` reads what the iteration before
// wrote. Besides the sentence at `for`, every access that takes part in a conflict gets its
// own error, naming the other access and the dependence vector.

use strads::prelude::*;

#[strads::parallel_for(ordered)]
fn shift(a: &mut DistArray<f32, 1>, b: &mut DistArray<f32, 1>, n: usize) {
    for i in 1..n {
        a[i] = 1.0;
        a[i - 1] = 2.0;
        b[i] = b[i - 1] * 2.0;
    }
}

fn main() {}
