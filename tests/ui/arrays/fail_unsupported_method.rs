// A method strads cannot analyse (`w.iter()`) is an error at the method's name that lists the
// accesses it understands.

use strads::prelude::*;

#[strads::parallel_for]
fn totals(w: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        out[i] = w.iter().map(|(_, v)| *v).sum::<f32>() * i as f32;
    }
}

fn main() {}
