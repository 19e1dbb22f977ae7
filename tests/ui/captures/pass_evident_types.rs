// Locals whose type is evident from their value need no annotation, as captures and as
// reductions: suffixed literals, a number type's constant, a cast, `.len()`, arithmetic of
// typed values.

use strads::prelude::*;

#[strads::parallel_for]
fn stats(x: &DistArray<f64, 1>, scale: f32) -> (u64, f64, f64, f64) {
    let n = x.len();
    let half = n / 2;
    let factor = scale as f64 * 2.0;
    let limit = std::f64::consts::PI * 100.0;
    let mut count = 0u64;
    let mut best = f64::MIN;
    let mut loss = 0.0f64;
    let mut small = f64::MAX;
    for i in 0..n {
        if i >= half && x[i] < limit {
            count += 1;
        }
        best = best.max(x[i] * factor);
        small = small.min(x[i]);
        loss += x[i] * x[i];
    }
    (count, best, loss, small)
}

fn main() {
    let x = DistArray::from_vec([4], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(stats(&x, 0.5), (2, 4.0, 30.0, 1.0));
}
