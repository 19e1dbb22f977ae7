// A row chosen by a value read from data (`let f = r as usize; w.row_mut(f)`) is an indirect
// subscript: an error at `f` that says which subscripts strads can analyse.

use strads::prelude::*;

#[strads::parallel_for]
fn by_value(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, lr: f32) {
    for ([_u, _i], &r) in ratings {
        let f = r as usize;
        let wf = w.row_mut(f);
        wf[0] += lr;
    }
}

fn main() {}
