// A loop over `iter_mut()` must be planned at compile time: here `w[*v as usize]` is read
// from data, which would need reconnaissance. The error is at `for`.

use strads::prelude::*;

#[strads::parallel_for]
fn scatter(tokens: &mut SparseArray<u32, 2>, w: &mut DistArray<f32, 1>) {
    for ([_d, _w], v) in tokens.iter_mut() {
        w[*v as usize] += 1.0;
        *v += 1;
    }
}

fn main() {}
