// A subscript read from another array (`w[[idx[k], 0]]`, as in sparse features) is
// indirect: the loop is planned at run time (reconnaissance), so `expect = "static"` fails,
// and a second error points at the subscript `idx[k]` that sends it there.

use strads::prelude::*;

#[strads::parallel_for(expect = "static")]
fn gather(idx: &DistArray<usize, 1>, w: &mut DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        let mut acc = 0.0;
        for k in 0..idx.len() {
            acc += w[[idx[k], 0]];
            w[[idx[k], 1]] += 1.0;
        }
        out[i] = acc;
    }
}

fn main() {}
