// A row of a write-back buffer takes only `+=` and `-=`: assigning an element of it, or
// handing the row to a function, is an error at that use.

use strads::prelude::*;

fn zero(row: &mut [f32]) {
    row[0] = 0.0;
}

#[strads::parallel_for(buffer(sums))]
fn item_sums(ratings: &SparseArray<f32, 2>, sums: &mut DistArray<f32, 2>) {
    for ([_u, i], &r) in ratings {
        let g = sums.row_mut(i);
        g[0] = r;
        zero(g);
    }
}

fn main() {}
