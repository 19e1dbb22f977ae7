// Calling a `&mut self` method on a captured value (`log.push(..)`) is caught by rustc, not by
// the macro: the loop body sees a captured non-`Copy` value by shared reference, even when the
// parameter is `mut`.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, mut log: Vec<usize>) -> Vec<usize> {
    for i in 0..x.len() {
        out[i] = 2.0 * x[i];
        log.push(i);
    }
    log
}

fn main() {}
