//! A call's order of a sparse array's entries, and its values put in it and back.

/// Whether `order` holds every entry of `0..order.len()` once.
pub(crate) fn is_permutation(order: &[u32]) -> bool {
    let mut seen = vec![false; order.len()];
    order.iter().all(|&o| match seen.get_mut(o as usize) {
        Some(s) if !*s => {
            *s = true;
            true
        }
        _ => false,
    })
}

/// Puts values given in `order` (`values[j]` belongs to entry `order[j]`, `order` a
/// permutation of the entries) in entry order, in place: each cycle of the permutation
/// is followed once, every value moved by one swap.
pub(crate) fn unpermute<T>(values: &mut [T], order: &[u32]) {
    debug_assert_eq!(values.len(), order.len());
    let mut placed = vec![false; values.len()];
    for start in 0..values.len() {
        if placed[start] {
            continue;
        }
        // `values[start]` belongs at `order[start]`: swap it there, then place whatever
        // came back, until the value that belongs at `start` comes back.
        let mut from = start;
        loop {
            let dest = order[from] as usize;
            if dest == start {
                break;
            }
            // An entry twice would make the cycle never come back.
            assert!(!placed[dest], "a call's order holds entry {dest} twice");
            values.swap(start, dest);
            placed[dest] = true;
            from = dest;
        }
        placed[start] = true;
    }
}

/// Puts values given in entry order in `order` (`values[j]` becomes entry `order[j]`'s),
/// in place: [`unpermute`]'s inverse, each cycle followed once, so a call's values in its
/// order need no second array of them. `false`, the values untouched, when `order` is not
/// a permutation of the entries (checked first).
pub(crate) fn permute<T>(values: &mut [T], order: &[u32]) -> bool {
    if values.len() != order.len() || !is_permutation(order) {
        return false;
    }
    // A slot's flag is set once it holds its value.
    let mut placed = vec![false; values.len()];
    for start in 0..values.len() {
        if placed[start] {
            continue;
        }
        // Slot `j` takes entry `order[j]`'s value, which is at `order[j]` until taken; the
        // value taken from there (slot `j`'s old one) moves along to the next slot.
        let mut j = start;
        loop {
            placed[j] = true;
            let src = order[j] as usize;
            if src == start {
                break;
            }
            values.swap(j, src);
            j = src;
        }
    }
    true
}
