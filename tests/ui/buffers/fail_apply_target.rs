// `apply = f(..)` names the arrays the function updates: `lr` is not an array, and the
// buffer itself (`grad`) cannot be its own target.

use strads::prelude::*;

fn step(g: f32, w: &mut f32) {
    *w -= g;
}

#[strads::parallel_for(buffer(grad, apply = step(lr)))]
fn grads(x: &DistArray<f32, 1>, grad: &mut DistArray<f32, 1>, lr: f32) {
    for i in 0..x.len() {
        grad[i] += lr * x[i];
    }
}

#[strads::parallel_for(buffer(grad, apply = step(grad)))]
fn grads_self(x: &DistArray<f32, 1>, grad: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        grad[i] += x[i];
    }
}

fn main() {}
