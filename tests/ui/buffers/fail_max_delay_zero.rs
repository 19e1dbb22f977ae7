// `max_delay` counts iterations between applications of the buffers: 0 makes no sense.

use strads::prelude::*;

#[strads::parallel_for(buffer(total, max_delay = 0))]
fn sum(x: &DistArray<f32, 1>, total: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        total[0] += x[i];
    }
}

fn main() {}
