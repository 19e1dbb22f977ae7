//! The trade of a spread array's entries, assembled and refused.

use super::*;

/// Two ranks' parts of a 2 x 4 grid of blocks over a `[4, 8]` array: block `b` is
/// `(k[0] / 2) * 4 + k[1] / 2`, blocks below 4 owned by rank 0.
fn messages() -> (Vec<Vec<u8>>, Vec<Vec<u8>>, usize) {
    let block_of = |k: &[u32]| (k[0] / 2) as usize * 4 + (k[1] / 2) as usize;
    let owner = |b: usize| usize::from(b >= 4);
    let a = Part {
        keys: vec![[0u32, 1], [3, 7], [1, 0], [2, 2], [0, 5]],
        values: vec![1.5f32, 2.5, 3.5, 4.5, 5.5],
    };
    let b = Part {
        keys: vec![[1u32, 1], [2, 6], [0, 0]],
        values: vec![6.5f32, 7.5, 8.5],
    };
    let from_a = a.bucket_out(&block_of, 8, &owner, 2);
    let from_b = b.bucket_out(&block_of, 8, &owner, 2);
    let to_0 = vec![from_a[0].clone(), from_b[0].clone()];
    let to_1 = vec![from_a[1].clone(), from_b[1].clone()];
    (to_0, to_1, 8)
}

fn assembled(messages: Vec<Vec<u8>>, rank: usize) -> Result<String, String> {
    let part = Part::<f32, 2> {
        keys: Vec::new(),
        values: Vec::new(),
    };
    let (blocks, bytes) = part.assemble(messages, 8, &|b| usize::from(b >= 4) == rank)?;
    let blocks = blocks
        .downcast::<Buckets<f32, 2>>()
        .map_err(|_| "not buckets".to_string())?;
    Ok(format!("{bytes} {blocks:?}"))
}

#[test]
fn a_trade_assembles_each_block_in_rank_order() {
    let (to_0, to_1, _) = messages();
    // Rank 0's blocks: [0, 1], [1, 0] and [1, 1], [0, 0] (block 0, rank 0's then rank
    // 1's, each in its part's order), then [0, 5] (block 2); rank 1's: [2, 2] (block
    // 5), then [3, 7] and [2, 6] (block 7).
    let want_0 = Filled::from_parts(
        vec![[0, 1], [1, 0], [1, 1], [0, 0], [0, 5]],
        vec![0, 2, 5, 7, 4],
        vec![1.5f32, 3.5, 6.5, 8.5, 5.5],
        &[4, 0, 1, 0, 0, 0, 0, 0],
        vec![4, 0, 1, 0, 0, 1, 0, 2],
    );
    let want_0 = format!("{} {:?}", 5 * 16, Buckets::filled(want_0));
    assert_eq!(assembled(to_0, 0).unwrap(), want_0);
    let want_1 = Filled::from_parts(
        vec![[2, 2], [3, 7], [2, 6]],
        vec![3, 1, 6],
        vec![4.5f32, 2.5, 7.5],
        &[0, 0, 0, 0, 0, 1, 0, 2],
        vec![4, 0, 1, 0, 0, 1, 0, 2],
    );
    let want_1 = format!("{} {:?}", 3 * 16, Buckets::filled(want_1));
    assert_eq!(assembled(to_1, 1).unwrap(), want_1);
}

#[test]
fn a_message_that_does_not_hold_its_counts_is_refused() {
    let (to_0, _, _) = messages();
    // Cut short, one byte too many, a count past the message, a count that overflows.
    let mut cut = to_0.clone();
    cut[1].pop();
    let mut long = to_0.clone();
    long[0].push(0);
    let mut more = to_0.clone();
    more[1][..8].copy_from_slice(&3u64.to_le_bytes());
    let mut huge = to_0.clone();
    huge[0][..8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    let mut header = to_0.clone();
    header[0].truncate(20);
    for (bad, says) in [
        (cut, "rank 1's message does not hold"),
        (long, "rank 0's message does not hold"),
        (more, "rank 1's message does not hold"),
        (huge, "rank 0's message does not hold"),
        (header, "rank 0's counts are cut short"),
    ] {
        let e = assembled(bad, 0).unwrap_err();
        assert!(e.starts_with(says), "{e}");
    }
}

/// A range of a part's entries encodes as the part of those entries alone would, clamped
/// to the part (the whole part: `0..usize::MAX`; beyond it: no entries).
#[test]
fn a_range_of_a_part_encodes_those_entries() {
    let keys = vec![[0u32, 1], [3, 7], [1, 0], [2, 2], [0, 5]];
    let values = vec![1.5f32, 2.5, 3.5, 4.5, 5.5];
    let p = Part {
        keys: keys.clone(),
        values: values.clone(),
    };
    let of =
        |r: std::ops::Range<usize>| crate::array::spread::encode_part(&keys[r.clone()], &values[r]);
    assert_eq!(p.encode(1..3), of(1..3));
    assert_eq!(p.encode(0..usize::MAX), of(0..5));
    assert_eq!(p.encode(4..9), of(4..5));
    assert_eq!(p.encode(7..9), of(5..5));
    // A range that ends before it starts (as a driver's garbled bytes might ask): none.
    let (lo, hi) = (3, 1);
    assert_eq!(p.encode(lo..hi), of(1..1));
    let decoded = crate::array::spread::decode_parts::<f32, 2>(
        vec![p.encode(0..2), p.encode(2..usize::MAX)],
        &[4, 8],
    );
    assert_eq!(decoded, Ok((keys.clone(), values.clone())));
    // Values in their raw codec: the same indices, the values' bytes of those entries.
    let coded = CodedPart {
        keys: keys[..3].to_vec(),
        ends: vec![2, 5, 6],
        bytes: b"aabbbc".to_vec(),
    };
    let mut want = super::super::coded::encode_keys(&keys[1..3]);
    want.push(0);
    want.extend_from_slice(b"bbbc");
    assert_eq!(coded.encode(1..3), want);
    let dropped = CodedPart {
        keys: keys[..3].to_vec(),
        ends: Vec::new(),
        bytes: Vec::new(),
    };
    let mut want = super::super::coded::encode_keys(&keys[..2]);
    want.push(0);
    assert_eq!(dropped.encode(0..2), want);
}
