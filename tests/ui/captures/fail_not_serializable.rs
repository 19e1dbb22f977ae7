// A captured value whose type is not serializable (`cfg: Config`) fails in the loop struct's
// serde derives: rustc's errors name `Config` and point at the attribute and at the
// parameter's type.

use strads::prelude::*;

struct Config {
    scale: f32,
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, cfg: Config) {
    for i in 0..x.len() {
        out[i] = cfg.scale * x[i];
    }
}

fn main() {}
