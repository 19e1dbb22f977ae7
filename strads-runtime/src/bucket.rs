//! The one stable counting sort of the runtime: items grouped by a small integer key,
//! keeping their order within a group. Blocks of sparse and dense spaces, `iter_mut`'s
//! key buckets, the generators' sharded dedupe and `permute::sort_by_count` all use it.

/// Ids `0..keys.len()` grouped by `keys[id]` (each `< n_buckets`), stably: returns
/// `(order, starts)` where `order[starts[b]..starts[b + 1]]` are the ids of key `b` in
/// increasing order, and `starts` has `n_buckets + 1` entries (`starts[n_buckets] ==
/// keys.len()`).
///
/// # Panics
/// When a key is `>= n_buckets`, or there are more than `u32::MAX` items.
pub(crate) fn bucket_order(keys: &[u32], n_buckets: usize) -> (Vec<u32>, Vec<usize>) {
    let (mut order, mut starts) = (Vec::new(), Vec::new());
    bucket_order_into(keys, n_buckets, &mut order, &mut starts);
    (order, starts)
}

/// [`bucket_order`] into buffers the caller keeps (cleared first), for repeated use
/// without allocating.
pub(crate) fn bucket_order_into(
    keys: &[u32],
    n_buckets: usize,
    order: &mut Vec<u32>,
    starts: &mut Vec<usize>,
) {
    assert!(
        u32::try_from(keys.len()).is_ok(),
        "bucket_order: {} items do not fit u32 ids",
        keys.len()
    );
    starts.clear();
    starts.resize(n_buckets + 1, 0);
    for &k in keys {
        assert!(
            (k as usize) < n_buckets,
            "bucket_order: key {k} is out of range for {n_buckets} buckets"
        );
        starts[k as usize + 1] += 1;
    }
    for b in 0..n_buckets {
        starts[b + 1] += starts[b];
    }
    order.clear();
    order.resize(keys.len(), 0);
    // `next[b]`: where the next id of key `b` goes; `starts[b]` until then.
    let mut next = starts[..n_buckets].to_vec();
    for (id, &k) in keys.iter().enumerate() {
        let slot = &mut next[k as usize];
        order[*slot] = id as u32;
        *slot += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_key_keeping_order() {
        let (order, starts) = bucket_order(&[2, 0, 2, 1, 0, 2], 4);
        assert_eq!(order, vec![1, 4, 3, 0, 2, 5]);
        assert_eq!(starts, vec![0, 2, 3, 6, 6]);
    }

    #[test]
    fn empty_inputs_and_buckets() {
        assert_eq!(bucket_order(&[], 3), (vec![], vec![0, 0, 0, 0]));
        assert_eq!(bucket_order(&[], 0), (vec![], vec![0]));
    }

    #[test]
    fn buffers_are_reused() {
        let (mut order, mut starts) = (vec![9; 10], vec![7; 10]);
        bucket_order_into(&[1, 1, 0], 2, &mut order, &mut starts);
        assert_eq!((order, starts), (vec![2, 0, 1], vec![0, 1, 3]));
    }

    #[test]
    #[should_panic(expected = "bucket_order: key 3 is out of range for 3 buckets")]
    fn a_key_out_of_range_panics() {
        bucket_order(&[0, 3], 3);
    }
}
