// An annotated tuple pattern whose annotation leaves a part to inference (`_`) takes that
// part's type from the value; when the value's part is not evident either, the error is
// at that part's name and the fix fills in the annotation.

use strads::prelude::*;

fn bias_of(lr: f32) -> f32 {
    lr / 2.0
}

#[strads::parallel_for]
fn affine(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32) {
    let (scale, bias): (f32, _) = (2.0, bias_of(lr));
    for i in 0..x.len() {
        out[i] = scale * x[i] + bias;
    }
}

fn main() {}
