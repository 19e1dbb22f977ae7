// Buffers are applied for all workers at once: one `max_delay` per loop.

use strads::prelude::*;

#[strads::parallel_for(buffer(total, max_delay = 8), buffer(count, max_delay = 16))]
fn sum(x: &DistArray<f32, 1>, total: &mut DistArray<f32, 1>, count: &mut DistArray<u32, 1>) {
    for i in 0..x.len() {
        total[0] += x[i];
        count[0] += 1;
    }
}

fn main() {}
