// A product into a `mut` parameter with `*=`: the loop multiplies the parameter's value by
// the product of the elements (powers of two, so every order is exact).

use strads::prelude::*;

#[strads::parallel_for]
fn scaled_product(x: &DistArray<f64, 1>, mut prod: f64) -> f64 {
    for i in 0..x.len() {
        prod *= x[i];
    }
    prod
}

fn main() {
    let x = DistArray::from_fn(
        [40],
        |[i]| if i % 2 == 0 { 2.0 } else { 0.5 } * if i % 5 == 0 { 2.0 } else { 1.0 },
    );
    for threads in 1..=4 {
        let got = strads::with_threads(threads, || scaled_product(&x, 3.0));
        assert_eq!(got, 3.0 * 2f64.powi(8), "{threads} threads");
    }
}
