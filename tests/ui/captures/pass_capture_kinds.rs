// Captured values of several kinds compile and behave as in the serial loop: a `f32`, a
// `usize`, a `&[f32]` slice, a `String` read through `.len()`, an indexed `Vec<f32>`, and a
// typed `let` before the loop. The non-`Copy` `String` is usable after the loop.

use strads::prelude::*;

#[strads::parallel_for]
fn combine(
    x: &DistArray<f32, 1>,
    out: &mut DistArray<f32, 1>,
    lr: f32,
    offset: usize,
    bias: &[f32],
    tag: String,
    weights: Vec<f32>,
) -> usize {
    let scale: f32 = 2.0 * lr;
    for i in 0..x.len() {
        let b = bias[(i + offset) % bias.len()];
        out[i] = scale * x[i] + b + tag.len() as f32 + weights[i % weights.len()];
    }
    tag.len()
}

fn main() {
    let x = DistArray::from_fn([6], |[i]| i as f32);
    let mut out = DistArray::zeros([6]);
    let bias = [0.5, 0.25];
    let n = combine(
        &x,
        &mut out,
        1.0,
        1,
        &bias,
        "ab".to_string(),
        vec![10.0, 20.0, 30.0],
    );
    assert_eq!(n, 2);
    for i in 0..6 {
        let want = 2.0 * i as f32 + bias[(i + 1) % 2] + 2.0 + [10.0, 20.0, 30.0][i % 3];
        assert_eq!(out[i], want, "element {i}");
    }
}
