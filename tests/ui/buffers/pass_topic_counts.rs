// Topic totals indexed by a value read from data, kept in a buffer: the loop over tokens
// is 1D over documents (each document's own counts), and `nk` is merged after the loop.

use strads::prelude::*;

#[strads::parallel_for(buffer(nk), expect = "1d")]
fn count(tokens: &SparseArray<u32, 2>, ndk: &mut DistArray<i64, 2>, nk: &mut DistArray<i64, 1>) {
    for ([d, _w], &z) in tokens {
        ndk[[d, z as usize]] += 1;
        nk[z as usize] += 1;
    }
}

fn main() {
    let tokens = SparseArray::from_entries(
        [3, 4],
        vec![([0, 1], 2u32), ([1, 2], 0), ([2, 3], 2), ([0, 0], 1)],
    )
    .unwrap();
    let (mut ndk, mut nk) = (DistArray::zeros([3, 3]), DistArray::zeros([3]));
    strads::with_threads(3, || count(&tokens, &mut ndk, &mut nk));
    assert_eq!(nk.as_slice(), &[1, 1, 2]);
    assert_eq!(ndk.row(0), &[0, 1, 1]);
}
