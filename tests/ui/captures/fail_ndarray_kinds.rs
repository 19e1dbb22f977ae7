// ndarray types a loop cannot take as arrays: a dynamic rank (the analysis needs it), an
// owned array by value (its updates would be lost), a shared array. Each error is at the
// type and says what to write.

use ndarray::{ArcArray2, Array2, ArrayD};

#[strads::parallel_for]
fn dynamic(m: &mut ArrayD<f32>, n: usize) {
    for i in 0..n {
        m[[i, 0]] = 1.0;
    }
}

#[strads::parallel_for]
fn by_value(m: Array2<f32>, out: &mut Vec<f32>) {
    for i in 0..out.len() {
        out[i] = m[[i, 0]];
    }
}

#[strads::parallel_for]
fn shared(m: &ArcArray2<f32>, out: &mut Vec<f32>) {
    for i in 0..out.len() {
        out[i] = m[[i, 0]];
    }
}

fn main() {}
