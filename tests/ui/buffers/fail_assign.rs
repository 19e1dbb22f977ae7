// A write-back buffer takes only updates that can be merged: `nk[z] = 0` is refused at the
// assignment, `+=` and `-=` are fine.

use strads::prelude::*;

#[strads::parallel_for(buffer(nk))]
fn counts(tokens: &SparseArray<u32, 2>, nk: &mut DistArray<i64, 1>) {
    for ([_d, _w], &z) in tokens {
        nk[z as usize] += 1;
        nk[z as usize] = 0;
    }
}

fn main() {}
