// Writing a field of a captured struct is a write to the outer variable too; the error spans
// the whole place `stats.seen`. The warnings come from the original function.

use strads::prelude::*;

#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct Stats {
    seen: usize,
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, mut stats: Stats) {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
        stats.seen = i;
    }
}

fn main() {}
