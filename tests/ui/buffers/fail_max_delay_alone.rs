// `max_delay` goes with the arrays it delays.

use strads::prelude::*;

#[strads::parallel_for(buffer(max_delay = 8))]
fn sum(x: &DistArray<f32, 1>, total: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        total[0] += x[i];
    }
}

fn main() {}
