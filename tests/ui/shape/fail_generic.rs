// A generic function is an error at its generics: the loop's struct is written for concrete
// element types.

use strads::prelude::*;

#[strads::parallel_for]
fn scale<T: Copy + Into<f32>>(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, by: T) {
    for i in 0..x.len() {
        out[i] = by.into() * x[i];
    }
}

fn main() {}
