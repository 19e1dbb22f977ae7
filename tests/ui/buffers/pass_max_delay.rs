// Two buffers, one with an apply function, applied every 32 iterations of each worker;
// the same `max_delay` may be repeated.

use strads::prelude::*;

fn step(g: f32, w: &mut f32) {
    *w -= 0.01 * g;
}

#[strads::parallel_for(buffer(grad, apply = step(w), max_delay = 32), buffer(count, max_delay = 32))]
fn fit(
    x: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    grad: &mut DistArray<f32, 1>,
    count: &mut DistArray<u32, 1>,
) {
    for i in 0..x.len() {
        grad[0] += w[0] - x[i];
        count[0] += 1;
    }
}

fn main() {
    let x = DistArray::<f32, 1>::from_fn([100], |[i]| i as f32 / 100.0);
    let (mut w, mut g, mut c) = (DistArray::zeros([1]), DistArray::zeros([1]), DistArray::zeros([1]));
    fit(&x, &mut w, &mut g, &mut c);
    assert_eq!(c[0], 100);
    assert!(w[0] > 0.0 && w[0] < 1.0, "{}", w[0]);
}
