// Assigning a captured scalar inside the loop is an error at the assignment's place: every
// worker has its own copy of `lr`, so a decayed learning rate would differ between workers.

use strads::prelude::*;

#[strads::parallel_for]
fn sgd_epoch(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, mut lr: f32) {
    for ([u, _i], &r) in ratings {
        let wu = w.row_mut(u);
        wu[0] += lr * r;
        lr = 0.1;
    }
}

fn main() {}
