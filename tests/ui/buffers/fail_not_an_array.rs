// `buffer(..)` names `&mut DistArray` parameters; `lr` is not one.

use strads::prelude::*;

#[strads::parallel_for(buffer(lr))]
fn step(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32) {
    for i in 0..x.len() {
        out[i] = lr * x[i];
    }
}

fn main() {}
