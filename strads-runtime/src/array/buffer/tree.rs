//! The order in which `sync` replicas' differences are summed: a fixed tree over the
//! workers, halving their range recursively (`d0 + d1` for two, `d0 + (d1 + d2)` for
//! three, `(d0 + d1) + (d2 + d3)` for four). It is the same on threads and across
//! processes. A process whose workers form a node of the tree sums them first and sends
//! the one partial sum (hierarchical merging), and every rank still reaches the bits of
//! as many threads in one process.

use std::ops::{Add, Range, Sub};

/// A leaf of the tree: `out` becomes the copy's difference from the base, element by
/// element.
pub(super) fn difference<T: Copy + Sub<Output = T> + 'static>(
    out: &mut [T],
    copy: &[T],
    base: &[T],
) {
    for ((o, &c), &b) in out.iter_mut().zip(copy).zip(base) {
        *o = super::wrap::sub(c, b);
    }
}

/// Whether `range` is a node of the tree over the workers `0..n`.
pub(super) fn is_node(range: &Range<usize>, n: usize) -> bool {
    let (mut lo, mut hi) = (0, n);
    loop {
        if range.start == lo && range.end == hi {
            return true;
        }
        if hi - lo <= 1 {
            return false;
        }
        let mid = lo + (hi - lo) / 2;
        if range.end <= mid {
            hi = mid;
        } else if range.start >= mid {
            lo = mid;
        } else {
            return false;
        }
    }
}

/// Writes into `out` the sum over the workers `lo..hi` in tree order. `leaf(w, out)`
/// writes worker `w`'s difference; `known(range)` is a node's sum already known (a
/// partial sum another process sent). `scratch` holds a buffer per depth.
pub(super) fn sum<'a, T: Copy + Add<Output = T> + 'static>(
    workers: Range<usize>,
    out: &mut [T],
    leaf: &dyn Fn(usize, &mut [T]),
    known: &dyn Fn(&Range<usize>) -> Option<&'a [T]>,
    scratch: &mut Vec<Vec<T>>,
    depth: usize,
) {
    if let Some(p) = known(&workers) {
        out.copy_from_slice(p);
        return;
    }
    let (lo, hi) = (workers.start, workers.end);
    if hi - lo == 1 {
        leaf(lo, out);
        return;
    }
    let mid = lo + (hi - lo) / 2;
    sum(lo..mid, out, leaf, known, scratch, depth + 1);
    if scratch.len() <= depth {
        scratch.resize_with(depth + 1, Vec::new);
    }
    let mut right = std::mem::take(&mut scratch[depth]);
    right.clear();
    right.extend_from_slice(out);
    sum(mid..hi, &mut right, leaf, known, scratch, depth + 1);
    for (o, &r) in out.iter_mut().zip(&right) {
        *o = super::wrap::add(*o, r);
    }
    scratch[depth] = right;
}

/// The sum over the workers `workers` (a node of the tree) of each copy's difference from
/// `base`, in tree order, chunk by chunk: what a process whose workers form the node sends
/// instead of their copies.
pub(super) fn partial<T: Copy + Add<Output = T> + Sub<Output = T> + 'static>(
    copies: &[&[T]],
    base: &[T],
    workers: Range<usize>,
    zero: T,
) -> Vec<T> {
    partial_by(base.len(), workers, zero, &|w, at, out| {
        difference(
            out,
            &copies[w][at..at + out.len()],
            &base[at..at + out.len()],
        )
    })
}

/// The sum over the workers `workers` (a node of the tree) of `len` elements each, in tree
/// order, chunk by chunk: `leaf(w, at, out)` writes worker `w`'s terms from element `at`.
pub(super) fn partial_by<T: Copy + Add<Output = T> + 'static>(
    len: usize,
    workers: Range<usize>,
    zero: T,
    leaf: &dyn Fn(usize, usize, &mut [T]),
) -> Vec<T> {
    let mut total = vec![zero; len];
    let mut scratch = Vec::new();
    for start in (0..len).step_by(super::MERGE_CHUNK) {
        let end = (start + super::MERGE_CHUNK).min(len);
        let chunk_leaf = |w: usize, out: &mut [T]| leaf(w, start, out);
        let none = |_: &Range<usize>| -> Option<&[T]> { None };
        sum(
            workers.clone(),
            &mut total[start..end],
            &chunk_leaf,
            &none,
            &mut scratch,
            0,
        );
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_halve_the_workers() {
        assert!(is_node(&(0..4), 4) && is_node(&(0..2), 4) && is_node(&(2..4), 4));
        assert!(is_node(&(3..4), 4) && !is_node(&(1..3), 4));
        // Six workers: 0..3 and 3..6, then 0..1 and 1..3.
        assert!(is_node(&(0..3), 6) && is_node(&(3..6), 6) && is_node(&(1..3), 6));
        assert!(!is_node(&(0..2), 6) && !is_node(&(2..4), 6));
    }

    #[test]
    fn sums_in_tree_order_and_takes_known_nodes() {
        // Values whose sum depends on the order: the tree's order is the one asserted.
        let d = [1e8f32, 1.0, -1e8, 1.0, 0.5];
        let leaf = |w: usize, out: &mut [f32]| out[0] = d[w];
        let none = |_: &Range<usize>| -> Option<&[f32]> { None };
        let mut scratch = Vec::new();
        let mut out = [0.0f32];
        sum(0..3, &mut out, &leaf, &none, &mut scratch, 0);
        assert_eq!(out[0], d[0] + (d[1] + d[2]));
        sum(0..4, &mut out, &leaf, &none, &mut scratch, 0);
        assert_eq!(out[0], (d[0] + d[1]) + (d[2] + d[3]));
        sum(0..5, &mut out, &leaf, &none, &mut scratch, 0);
        assert_eq!(out[0], (d[0] + d[1]) + (d[2] + (d[3] + d[4])));
        // A node's partial sum, computed elsewhere in the same order, gives the same bits.
        let mut part = [0.0f32];
        sum(2..4, &mut part, &leaf, &none, &mut scratch, 0);
        let known = |r: &Range<usize>| (*r == (2..4)).then_some(&part[..]);
        let poisoned = |w: usize, out: &mut [f32]| out[0] = if w >= 2 { f32::NAN } else { d[w] };
        sum(0..4, &mut out, &poisoned, &known, &mut scratch, 0);
        assert_eq!(out[0], (d[0] + d[1]) + (d[2] + d[3]));
    }
}
