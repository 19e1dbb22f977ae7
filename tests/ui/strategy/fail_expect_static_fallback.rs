// Degrees over an edge list: `deg[u]` and `deg[v]` are written by iterations that differ in
// both dims, so no static strategy fits and the loop would fall back to reconnaissance.
// `expect = "static"` keeps the refusal; the error names the reason and the buffer that
// would make the loop static.

use strads::prelude::*;

#[strads::parallel_for(expect = "static")]
fn degrees(edges: &SparseArray<f32, 2>, deg: &mut DistArray<f32, 1>) {
    for ([u, v], &w) in edges {
        deg[u] += w;
        deg[v] += w;
    }
}

fn main() {}
