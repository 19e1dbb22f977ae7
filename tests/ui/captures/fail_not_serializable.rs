// A captured value whose type is not serializable (`cfg: Config`) is one error, at the
// parameter's type, saying that the loop captures it and how to fix it (derive serde's
// traits, or compute the value inside the loop).

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
