// Counting with `+=` into integers is a reduction: a typed local (`count`) and a `mut`
// parameter (`seen`) are each accumulated per worker and added up after the loop; the
// trailing expression returns them. Exact for every thread count.

use strads::prelude::*;

#[strads::parallel_for]
fn count_positive(
    x: &DistArray<f32, 1>,
    out: &mut DistArray<f32, 1>,
    mut seen: u64,
) -> (usize, u64) {
    let mut count: usize = 0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            count += 1;
        }
        seen += 1;
        out[i] = x[i].max(0.0);
    }
    (count, seen)
}

fn main() {
    let x = DistArray::from_fn([1000], |[i]| if i % 3 == 0 { 1.0 } else { -1.0 });
    for threads in 1..=4 {
        let mut out = DistArray::zeros([1000]);
        let got = strads::with_threads(threads, || count_positive(&x, &mut out, 7));
        assert_eq!(got, (334, 1007), "{threads} threads");
    }
}
