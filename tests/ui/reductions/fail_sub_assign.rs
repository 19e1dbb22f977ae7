// `-=` on an outer variable is not a reduction strads combines; the error is at `debt -=`
// and says how to write it as one (`debt += -(..)`).

use strads::prelude::*;

#[strads::parallel_for]
fn pay(x: &DistArray<f32, 1>, mut debt: f32) -> f32 {
    for i in 0..x.len() {
        debt -= x[i];
    }
    debt
}

fn main() {}
