// `#[parallel_for]` on a function defined inside a parallel loop's body is an error at the
// nested attribute: the body already runs one iteration per worker. (On a closure rustc
// itself refuses attributes; the macro reports it the same way.)

use strads::prelude::*;

#[strads::parallel_for]
fn outer(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        #[strads::parallel_for]
        fn double(v: &DistArray<f32, 1>, w: &mut DistArray<f32, 1>) {
            for j in 0..v.len() {
                w[j] = 2.0 * v[j];
            }
        }
        out[i] = x[i];
    }
}

fn main() {}
