use strads::prelude::*;

#[strads::parallel_for]
fn evens(x: &mut DistArray<f64, 1>) {
    for i in (0..).step_by(2) {
        x[i] = 1.0;
    }
}

fn main() {}
