// A row chosen by a value read from data (`let f = r as usize; w.row_mut(f)`) is an indirect
// subscript: `expect = "2d"` fails, naming reconnaissance, with a second error at `f`.

use strads::prelude::*;

#[strads::parallel_for(expect = "2d")]
fn by_value(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, lr: f32) {
    for ([_u, _i], &r) in ratings {
        let f = r as usize;
        let wf = w.row_mut(f);
        wf[0] += lr;
    }
}

fn main() {}
