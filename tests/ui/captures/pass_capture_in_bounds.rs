// A non-`Copy` capture that also gives the range's bound (`0..names.len()`) compiles: the
// bound is computed before the loop's struct takes `names`, which the function gets back
// after the loop and returns.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn name_lengths(out: &mut DistArray<f32, 1>, names: Vec<String>) -> Vec<String> {
    for i in 0..names.len() {
        out[i] = names[i].len() as f32;
    }
    names
}

fn main() {
    let mut out = DistArray::zeros([3]);
    let names = name_lengths(&mut out, vec!["a".into(), "bb".into(), "ccc".into()]);
    assert_eq!(names.len(), 3);
    assert_eq!(out.as_slice(), &[1.0, 2.0, 3.0]);
}
