// `expect = "2d"` on a loop the analysis proves 1D is an error at the string that names the
// strategy proved, so the user can write `expect = "1d"` or `"static"`.

use strads::prelude::*;

#[strads::parallel_for(expect = "2d")]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
    }
}

fn main() {}
