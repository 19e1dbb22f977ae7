// A struct pattern's fields show their types only in the struct's definition: bound from a
// value that is not a struct literal, a field used in the loop is an error at its name, and
// the fix is a `let` of its own (a struct's type cannot be split around the pattern).

use strads::prelude::*;

struct Range {
    lo: f32,
    hi: f32,
}

fn range() -> Range {
    Range { lo: 1.0, hi: 5.0 }
}

#[strads::parallel_for]
fn clamp(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    let Range { lo, hi: _ }: Range = range();
    for i in 0..x.len() {
        out[i] = x[i].max(lo);
    }
}

fn main() {}
