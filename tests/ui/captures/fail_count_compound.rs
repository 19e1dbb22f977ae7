// `count += 1` on an outer variable is a write to it, not (yet) a reduction: the error is
// at `count` and says where per-iteration results should go instead.

use strads::prelude::*;

#[strads::parallel_for]
fn count_positive(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> usize {
    let mut count: usize = 0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            count += 1;
        }
        out[i] = x[i].max(0.0);
    }
    count
}

fn main() {}
