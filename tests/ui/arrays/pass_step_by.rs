// `(a..b).step_by(s)` as the iteration space, and strided subscripts: red-black relaxation
// (`x[i]` from `x[i - 1]` and `x[i + 1]` at odd `i`; `y[2k + 1]` from `y[2k]`, `y[2k + 2]`)
// is 1D, since odd and even indices never meet.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn red(x: &mut DistArray<f64, 1>, n: usize) {
    for i in (1..n - 1).step_by(2) {
        x[i] = 0.5 * (x[i - 1] + x[i + 1]);
    }
}

#[strads::parallel_for(expect = "1d")]
fn odd(y: &mut DistArray<f64, 1>, half: usize) {
    for k in 0..half {
        y[2 * k + 1] = 0.5 * (y[2 * k] + y[2 * k + 2]);
    }
}

fn main() {
    let mut x = DistArray::from_fn([101], |[i]| (i % 2) as f64);
    red(&mut x, 101);
    let mut y = x.clone();
    odd(&mut y, 50);
    for i in 0..101 {
        assert_eq!(x[i], 0.0);
        assert_eq!(y[i], 0.0);
    }
}
