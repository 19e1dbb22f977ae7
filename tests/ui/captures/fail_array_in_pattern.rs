// A strads array bound inside a pattern is not one of the loop's arrays (those are
// parameters or a `let` of their own): used in the loop, it is an error at its name saying
// to bind it alone.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    let (src, factor): (&DistArray<f32, 1>, f32) = (x, 2.0);
    for i in 0..out.len() {
        out[i] = factor * src[i];
    }
}

fn main() {}
