// Loops without a static strategy run by reconnaissance: a prefix recurrence (unordered:
// any order of the iterations will do), degrees over an edge list, and TransE-like updates
// of two rows of one array per triple.

use strads::prelude::*;

#[strads::parallel_for(expect = "reconnaissance")]
fn ramp(a: &mut DistArray<f32, 1>, n: usize) {
    for i in 1..n {
        a[i] = a[i - 1] + 1.0;
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn degrees(edges: &SparseArray<f32, 2>, deg: &mut DistArray<f32, 1>) {
    for ([u, v], &w) in edges {
        deg[u] += w;
        deg[v] += w;
    }
}

#[strads::parallel_for]
fn transe(triples: &SparseArray<f32, 3>, ent: &mut DistArray<f32, 2>, rel: &mut DistArray<f32, 2>, lr: f32) {
    for ([h, r, t], _) in triples {
        for k in 0..ent.shape()[1] {
            let g = ent[[h, k]] + rel[[r, k]] - ent[[t, k]];
            ent[[h, k]] -= lr * g;
            rel[[r, k]] -= lr * g;
            ent[[t, k]] += lr * g;
        }
    }
}

fn main() {
    let mut a = DistArray::<f32, 1>::zeros([8]);
    ramp(&mut a, 8);
    let edges = SparseArray::from_entries([3, 3], vec![([0, 1], 1.0), ([1, 2], 2.0)]).unwrap();
    let mut deg = DistArray::<f32, 1>::zeros([3]);
    degrees(&edges, &mut deg);
    assert_eq!(deg.as_slice(), &[1.0, 3.0, 2.0]);
    let triples = SparseArray::from_entries([3, 2, 3], vec![([0, 1, 2], 1.0)]).unwrap();
    let (mut ent, mut rel) = (DistArray::<f32, 2>::zeros([3, 4]), DistArray::<f32, 2>::zeros([2, 4]));
    transe(&triples, &mut ent, &mut rel, 0.1);
}
