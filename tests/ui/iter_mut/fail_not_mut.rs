// `iter_mut()` gives each iteration its entry's value to update, so it needs the sparse
// array by `&mut`: the error is at the iteration expression.

use strads::prelude::*;

#[strads::parallel_for]
fn bump(tokens: &SparseArray<u32, 2>, out: &mut DistArray<u32, 1>) {
    for ([d, _w], z) in tokens.iter_mut() {
        out[d] += *z;
    }
}

fn main() {}
