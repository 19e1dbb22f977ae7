// Passing an array to a helper function hides which elements it touches: an error at the
// array's name that lists the accesses strads can follow.

use strads::prelude::*;

fn norm(w: &DistArray<f32, 2>, i: usize) -> f32 {
    dot(w.row(i), w.row(i)).sqrt()
}

#[strads::parallel_for]
fn row_norms(w: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        out[i] = norm(&w, i);
    }
}

fn main() {}
