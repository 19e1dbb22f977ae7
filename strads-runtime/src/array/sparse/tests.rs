//! The sparse array's entries, and its values kept out of place between `iter_mut()` calls.

use super::*;
#[test]
fn sparse_rejects_out_of_bounds_entries() {
    let err = SparseArray::from_entries([2, 2], vec![([0, 1], 1.0f32), ([2, 0], 1.0)])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "entry 1: index [2, 0] is outside the array's shape [2, 2]"
    );
}

#[test]
fn entries_from_an_iterator_are_the_vectors_and_fail_alike() {
    let entries = || (0..5usize).map(|i| ([i % 3, 4 - i], i as u8));
    let a = SparseArray::from_entries_iter([3, 5], entries()).expect("fits");
    let b = SparseArray::from_entries([3, 5], entries().collect()).expect("fits");
    assert_eq!(
        a.iter().map(|(k, &v)| (k, v)).collect::<Vec<_>>(),
        b.iter().map(|(k, &v)| (k, v)).collect::<Vec<_>>()
    );
    assert_eq!(a.nnz(), 5);
    // An iterator whose size is not known ahead, with an entry outside the shape.
    let err = SparseArray::from_entries_iter([3, 4], entries().filter(|_| true))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "entry 0: index [0, 4] is outside the array's shape [3, 4]"
    );
    let too_wide = SparseArray::<u8, 1>::from_entries_iter([u32::MAX as usize + 2], [])
        .unwrap_err()
        .to_string();
    assert!(
        too_wide.contains("exceeds the supported 4294967296"),
        "{too_wide}"
    );
}

/// A random permutation of `0..n` (Fisher-Yates).
fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = crate::IterRng::new(seed, &[n as u64]);
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

#[test]
fn unpermute_puts_every_value_at_its_entry() {
    for (n, seed) in [(0, 1), (1, 1), (2, 3), (7, 4), (1000, 5)] {
        for order in [shuffled(n, seed), (0..n as u32).collect(), {
            // One cycle through every entry.
            (0..n as u32).map(|i| (i + 1) % n.max(1) as u32).collect()
        }] {
            // Entry `e`'s value is `10 e`, given in `order`.
            let mut values: Vec<String> = order.iter().map(|&e| format!("{}", 10 * e)).collect();
            unpermute(&mut values, &order);
            let want: Vec<String> = (0..n).map(|e| format!("{}", 10 * e)).collect();
            assert_eq!(values, want, "n = {n}");
        }
    }
}

#[test]
fn permute_gives_every_entry_its_place_in_the_order() {
    for (n, seed) in [(0, 1), (1, 1), (2, 3), (7, 4), (1000, 5)] {
        for order in [shuffled(n, seed), (0..n as u32).collect(), {
            (0..n as u32).map(|i| (i + 1) % n.max(1) as u32).collect()
        }] {
            // Entry `e`'s value is `10 e`, in entry order; slot `j` must get `order[j]`'s.
            let mut values: Vec<String> = (0..n).map(|e| format!("{}", 10 * e)).collect();
            assert!(permute(&mut values, &order));
            let want: Vec<String> = order.iter().map(|&e| format!("{}", 10 * e)).collect();
            assert_eq!(values, want, "n = {n}");
            unpermute(&mut values, &order);
            let back: Vec<String> = (0..n).map(|e| format!("{}", 10 * e)).collect();
            assert_eq!(values, back, "n = {n}");
        }
    }
}

#[test]
fn permute_leaves_values_alone_for_an_order_that_is_not_a_permutation() {
    for order in [&[1, 0, 0][..], &[1, 0, 3], &[1, 0]] {
        let mut values = vec![1, 2, 3];
        assert!(!permute(&mut values, order), "{order:?}");
        assert_eq!(values, [1, 2, 3]);
    }
}

/// An array of 6 entries whose value is its position, the entries in another order.
fn six() -> SparseArray<Vec<u16>, 2> {
    let entries = (0..6u16)
        .map(|i| ([usize::from(i % 3), usize::from(i / 3)], vec![i]))
        .collect();
    SparseArray::from_entries([3, 2], entries).unwrap()
}

#[test]
fn values_kept_in_a_calls_order_are_taken_so_by_the_next_and_read_in_entry_order() {
    let order = shuffled(6, 9);
    let mut a = six();
    let version = a.wire_key();
    // A call in `order`: the values come in entry order the first time.
    let lent = a.take_for_call(&order);
    assert!(lent.ordered.is_none() && lent.away.is_none());
    let mut ordered: Vec<Vec<u16>> = order
        .iter()
        .map(|&e| lent.values[e as usize].clone())
        .collect();
    for v in &mut ordered {
        v.push(100);
    }
    a.keep_out(ordered.clone(), Some(order.clone()), None);
    assert_ne!(a.wire_key(), version, "the values may have changed");
    assert!(!a.values_away(), "nothing is away on other ranks");
    assert_eq!(a.values_away_bytes(), 0);
    assert_eq!(a.raw_keys().len(), 6, "the indices stay readable");
    // The next call in the same order takes them as they are.
    let lent = a.take_for_call(&order);
    assert_eq!(lent.ordered.as_ref(), Some(&ordered));
    assert!(lent.values.is_empty());
    a.keep_out(lent.ordered.unwrap(), Some(order.clone()), None);
    // Serial code reads them in entry order.
    let read: Vec<Vec<u16>> = a.iter().map(|(_, v)| v.clone()).collect();
    let want: Vec<Vec<u16>> = (0..6).map(|i| vec![i, 100]).collect();
    assert_eq!(read, want);
    assert_eq!(a.entry(4), ([1, 1], &vec![4, 100]));
    // Once read, a call takes them in entry order again.
    let lent = a.take_for_call(&order);
    assert!(lent.ordered.is_none());
    assert_eq!(lent.values, want);
    let ordered: Vec<Vec<u16>> = order
        .iter()
        .map(|&e| lent.values[e as usize].clone())
        .collect();
    a.keep_out(ordered, Some(order.clone()), None);
    // A call in another order: entry order.
    let other = shuffled(6, 10);
    assert_ne!(other, order);
    let lent = a.take_for_call(&other);
    assert!(lent.ordered.is_none());
    assert_eq!(lent.values, want);
    a.restore_values(lent.values);
    // A clone and `iter_mut` see them too.
    let mut b = a.clone();
    let lent = b.take_for_call(&order);
    let ordered: Vec<Vec<u16>> = order
        .iter()
        .map(|&e| lent.values[e as usize].clone())
        .collect();
    b.keep_out(ordered, Some(order), None);
    let all: Vec<Vec<u16>> = b.iter_mut().map(|(_, v)| v.clone()).collect();
    assert_eq!(all, want);
}

/// Values away on "other ranks": every odd entry's, given back by entry number.
struct OddAway;

impl AwayValues<Vec<u16>> for OddAway {
    fn bring_home(&self, values: &mut [Vec<u16>]) {
        for (e, v) in values.iter_mut().enumerate().filter(|(e, _)| e % 2 == 1) {
            assert!(
                v.is_empty(),
                "a placeholder where entry {e}'s value is away"
            );
            *v = vec![e as u16, 200];
        }
    }
    fn bytes(&self) -> u64 {
        12
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

#[test]
fn values_kept_in_order_with_some_away_come_home_by_entry() {
    let order = shuffled(6, 11);
    let mut a = six();
    let lent = a.take_for_call(&order);
    // This process ran the even entries; the odd ones' values are away (placeholders).
    let ordered: Vec<Vec<u16>> = order
        .iter()
        .map(|&e| {
            if e % 2 == 0 {
                vec![e as u16, 100]
            } else {
                Vec::new()
            }
        })
        .collect();
    drop(lent);
    a.keep_out(
        ordered.clone(),
        Some(order.clone()),
        Some(Box::new(OddAway)),
    );
    assert!(a.values_away());
    assert_eq!(a.values_away_bytes(), 12);
    // The next call in the same order: the values as they were, and those away still away.
    let lent = a.take_for_call(&order);
    assert_eq!(lent.ordered.as_ref(), Some(&ordered));
    let (away, home) = lent.away.expect("values away");
    assert!(!home);
    a.keep_out(lent.ordered.unwrap(), Some(order.clone()), Some(away));
    // Serial code reads: in entry order, the odd ones brought home.
    let want: Vec<Vec<u16>> = (0..6u16)
        .map(|e| vec![e, if e % 2 == 0 { 100 } else { 200 }])
        .collect();
    assert_eq!(a.values(), &want[..]);
    assert!(!a.values_away(), "read home");
    assert_eq!(a.values_away_bytes(), 0);
    // A call after the read: every value here, in entry order; the ranks' copies still
    // equal them (`home`).
    let lent = a.take_for_call(&order);
    assert!(lent.ordered.is_none());
    assert_eq!(lent.values, want);
    assert!(lent.away.is_some_and(|(_, home)| home));
}

#[test]
#[should_panic(expected = "holds entry 1 twice")]
fn an_order_that_is_not_a_permutation_is_refused() {
    let mut values = vec![1, 2, 3];
    unpermute(&mut values, &[1, 1, 0]);
}
