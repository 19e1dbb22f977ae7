// `?` in the loop body is an error at the `?` token: it would return from the function in
// the middle of the parallel loop.

use strads::prelude::*;

fn checked(v: f32) -> Result<f32, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{v} is not finite"))
    }
}

#[strads::parallel_for]
fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> Result<(), String> {
    for i in 0..x.len() {
        out[i] = 2.0 * checked(x[i])?;
    }
    Ok(())
}

fn main() {}
