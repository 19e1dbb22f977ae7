// `max_delay` takes an integer literal.

use strads::prelude::*;

#[strads::parallel_for(buffer(total, max_delay = "often"))]
fn sum(x: &DistArray<f32, 1>, total: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        total[0] += x[i];
    }
}

fn main() {}
