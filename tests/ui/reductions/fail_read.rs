// Reading a reduction variable inside the loop is an error at the read: each worker holds
// only its partial sum there. The update itself (`total += ..`) is fine.

use strads::prelude::*;

#[strads::parallel_for]
fn running(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> f32 {
    let mut total: f32 = 0.0;
    for i in 0..x.len() {
        total += x[i];
        out[i] = total;
    }
    total
}

fn main() {}
