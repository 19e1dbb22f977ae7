// `break 'rows` from an inner loop leaves the labelled parallel loop: an error at that
// `break`, while the plain `break` of the inner loop is fine.

use strads::prelude::*;

#[strads::parallel_for]
fn first_negative(x: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
    'rows: for i in 0..out.len() {
        for k in 0..4 {
            if x[[i, k]] < 0.0 {
                out[i] = k as f32;
                break 'rows;
            }
            if x[[i, k]] == 0.0 {
                break;
            }
        }
    }
}

fn main() {}
