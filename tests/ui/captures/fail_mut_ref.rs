// A `&mut` parameter used inside the loop is an error at its type: iterations on several
// workers cannot share one mutable reference. (A `&mut Vec<T>` or `&mut [T]` is an array
// the loop writes by index: `tests/it/macro/bridged.rs`.)

use strads::prelude::*;

#[strads::parallel_for]
fn histogram(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, bins: &mut std::collections::HashMap<u32, u32>) {
    for i in 0..x.len() {
        out[i] = x[i] * bins.len() as f32;
    }
}

fn main() {}
