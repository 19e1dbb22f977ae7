// Inline format arguments (`{lr}`, `{scale:.2}`, and the width parameter of `{:>width$}`)
// are uses of the captured variables: the macro captures them, so the loop compiles and runs.

use strads::prelude::*;

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, lr: f32, width: usize) {
    let scale: f32 = 3.0;
    for i in 0..x.len() {
        let line = format!("iteration {i:>width$}: lr = {lr}, scale = {scale:.2}");
        assert!(line.starts_with("iteration "));
        out[i] = scale * lr * x[i] + format!("{:>width$}", i).len() as f32;
    }
}

fn main() {
    let x = DistArray::from_fn([4], |[i]| i as f32);
    let mut out = DistArray::zeros([4]);
    scale(&x, &mut out, 0.5, 3);
    assert_eq!(out.as_slice(), &[3.0, 4.5, 6.0, 7.5]);
}
