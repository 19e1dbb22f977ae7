// A value captured by reference (`cfg: &Config`) must be serializable too (the loop's struct
// holds it as a `Cow`): one error, at the parameter's type.

use strads::prelude::*;

#[derive(Clone)]
struct Config {
    scale: f32,
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, cfg: &Config) {
    for i in 0..x.len() {
        out[i] = cfg.scale * x[i];
    }
}

fn main() {}
