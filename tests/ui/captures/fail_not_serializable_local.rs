// A local captured by the loop must be serializable: the error is at the `let`'s type.

use strads::prelude::*;

struct Grid {
    step: f32,
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) {
    let grid: Grid = Grid { step: 0.5 };
    for i in 0..x.len() {
        out[i] = grid.step * x[i];
    }
}

fn main() {}
