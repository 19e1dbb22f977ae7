// An array named inside a macro whose arguments are not comma-separated expressions
// (`matches!` takes a pattern) is an error at the macro: strads cannot see the access.

use strads::prelude::*;

#[strads::parallel_for]
fn positive(w: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    for i in 0..out.len() {
        out[i] = if matches!(w[[i, 0]], v if v > 0.0) {
            1.0
        } else {
            0.0
        };
    }
}

fn main() {}
