//! Arrays made in parts from values made on a cluster job's driver (docs/cluster.md, "made
//! in parts"): `DistArray::from_fn` runs its closure, and `SparseArray::from_entries_iter`
//! takes its entries, here, in order, as on threads (the closure or iterator may be any
//! sequential code), but no process holds the whole array. The elements (rows, or entries)
//! are split evenly over the ranks in rank order; the driver keeps the first range and
//! sends every other rank its range in pieces of at most [`PIECE_BYTES`] as they are made.
//! How the pieces travel and what the ranks keep is the cluster runtime's
//! ([`Parts`](super::made::Parts), linked in; asking it starts the job): each piece is
//! a collective operation of its own, made after the values, so no operation is under way
//! while the caller's code runs (it may read other arrays, or make arrays itself).

use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::made::{Parts, parts};
use super::{DistArray, SparseArray, fresh_id, le, next_index};
use crate::error::Error;

/// The smallest array (its bytes on the wire: elements, or an entry's indices and value)
/// that `DistArray::from_fn` and `SparseArray::from_entries_iter` make in parts on a job's
/// driver: a smaller one is made whole there (an operation and the parts' later moves
/// would cost more than the memory saved).
pub const MADE_IN_PARTS_BYTES: usize = 1 << 20;

/// The most bytes of another rank's values the driver makes before it sends them.
const PIECE_BYTES: usize = 1 << 20;

/// Where `ranks` ranks' shares of `units` units start (`ranks + 1` bounds, rank order).
fn split(units: usize, ranks: usize) -> Vec<usize> {
    (0..=ranks)
        .map(|r| (units as u128 * r as u128 / ranks as u128) as usize)
        .collect()
}

/// Runs `make` (the caller's code), or on a panic lets every rank go of array `id` (when
/// some of it was sent) and goes on with the panic.
fn guarded<R>(parts: &dyn Parts, id: u64, sent: bool, make: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(make)) {
        Ok(r) => r,
        Err(panic) => {
            if sent {
                parts.abandon(id);
            }
            resume_unwind(panic)
        }
    }
}

/// `DistArray::from_fn(shape, f)` made in parts on a job's driver, or `None` (not a job's
/// driver outside a loop, not numbers, more than 4 dims, under [`MADE_IN_PARTS_BYTES`]):
/// then the caller makes it whole. Rows are split evenly (elements, when the array has
/// fewer rows than the job has ranks).
pub(crate) fn from_fn<T: 'static, const N: usize>(
    shape: [usize; N],
    len: usize,
    f: &mut dyn FnMut([usize; N]) -> T,
) -> Option<DistArray<T, N>> {
    let size = le::wire_size::<T>()?;
    if !(1..=4).contains(&N) || len.checked_mul(size)? < MADE_IN_PARTS_BYTES {
        return None;
    }
    let parts = parts()?;
    let p = parts.ranks()?;
    let id = fresh_id();
    let mut array = DistArray::<T, N>::reserved(shape, len, id)?;
    let starts = if shape[0] >= p {
        let per_row = len / shape[0];
        split(shape[0], p)
            .into_iter()
            .map(|r| r * per_row)
            .collect()
    } else {
        split(len, p)
    };
    let mut idx = [0usize; N];
    guarded(parts, id, false, || {
        for x in &mut array.making()[..starts[1]] {
            *x = f(idx);
            next_index(&mut idx, &shape);
        }
    });
    let piece = (PIECE_BYTES / size).max(1);
    let mut values: Vec<T> = Vec::with_capacity(piece.min(len));
    let mut sent = false;
    for to in 1..p {
        let mut at = starts[to];
        while at < starts[to + 1] {
            let n = piece.min(starts[to + 1] - at);
            values.clear();
            guarded(parts, id, sent, || {
                for _ in 0..n {
                    values.push(f(idx));
                    next_index(&mut idx, &shape);
                }
            });
            let mut bytes = Vec::with_capacity(n * size);
            le::put(&values, &mut bytes);
            parts.send_rows(id, TypeId::of::<T>(), &shape, to, at, starts[to + 1], bytes);
            sent = true;
            at += n;
        }
    }
    drop(values);
    let made = parts.dense(id, TypeId::of::<T>(), &shape, Box::new(array), &starts);
    Some(
        *made
            .downcast()
            .expect("the cluster gives back the array it was given"),
    )
}

/// `SparseArray::from_entries_iter(shape, entries)` made in parts on a job's driver, or
/// `None` (not a job's driver outside a loop, values that are neither numbers nor `Vec`s
/// of numbers, more than 4
/// dims, an iterator that does not promise its count exactly, under
/// [`MADE_IN_PARTS_BYTES`]): then the caller makes the array whole from the iterator,
/// untouched. The entries are split evenly by the promised count (the last rank takes any
/// beyond it); an entry outside `shape` gives the error one process gives.
pub(crate) fn from_entries<T: 'static, const N: usize>(
    shape: [usize; N],
    entries: &mut dyn Iterator<Item = ([usize; N], T)>,
) -> Option<Result<SparseArray<T, N>, Error>> {
    // Numbers, or `Vec`s of numbers (`list`: their elements' type, a list's bytes guessed).
    let t = TypeId::of::<T>();
    let (elem, size) = match le::wire_size::<T>() {
        Some(size) => (t, Some(size)),
        None => (super::lists::element(t)?.0, None),
    };
    let list = size.is_none();
    let (n, upper) = entries.size_hint();
    let each = 4 * N + size.unwrap_or(8);
    if !(1..=4).contains(&N) || upper != Some(n) || n.checked_mul(each)? < MADE_IN_PARTS_BYTES {
        return None;
    }
    let parts = parts()?;
    let p = parts.ranks()?;
    let id = fresh_id();
    let starts = split(n, p);
    let piece = (PIECE_BYTES / each).max(1);
    let mut own: (Vec<[u32; N]>, Vec<T>) =
        (Vec::with_capacity(starts[1]), Vec::with_capacity(starts[1]));
    let (mut keys, mut values) = (
        Vec::with_capacity(piece.min(n)),
        Vec::with_capacity(piece.min(n)),
    );
    let (mut e, mut to, mut sent) = (0usize, 0usize, false);
    let mut list_bytes = 0usize;
    let send = |to: usize, keys: &mut Vec<[u32; N]>, values: &mut Vec<T>| {
        let mut bytes = Vec::with_capacity(keys.len() * each + 8);
        if list {
            bytes.extend_from_slice(&(keys.len() as u64).to_le_bytes());
        }
        for &i in keys.iter().flatten() {
            bytes.extend_from_slice(&i.to_le_bytes());
        }
        if list {
            super::lists::put(values, &mut bytes);
        } else {
            le::put(values, &mut bytes);
        }
        keys.clear();
        values.clear();
        parts.send_entries(id, elem, list, &shape, to, bytes);
    };
    while let Some((k, v)) = guarded(parts, id, sent, || entries.next()) {
        if k.iter().zip(&shape).any(|(i, d)| i >= d) {
            if sent {
                parts.abandon(id);
            }
            return Some(Err(Error::OutOfBounds {
                context: format!("entry {e}: "),
                index: k.to_vec(),
                shape: shape.to_vec(),
            }));
        }
        while to + 1 < p && e >= starts[to + 1] {
            if !keys.is_empty() {
                send(to, &mut keys, &mut values);
                list_bytes = 0;
                sent = true;
            }
            to += 1;
        }
        let key = k.map(|i| i as u32);
        if to == 0 {
            own.0.push(key);
            own.1.push(v);
        } else {
            // Lists' bytes count too: a piece holds at most `PIECE_BYTES` of them.
            if list {
                list_bytes += super::lists::wire_len(&v);
            }
            keys.push(key);
            values.push(v);
            if keys.len() == piece || list_bytes >= PIECE_BYTES {
                send(to, &mut keys, &mut values);
                list_bytes = 0;
                sent = true;
            }
        }
        e += 1;
    }
    if !keys.is_empty() {
        send(to, &mut keys, &mut values);
    }
    drop((keys, values));
    let made = parts.sparse(id, elem, list, &shape, Box::new(own));
    Some(Ok(*made.downcast().expect(
        "the cluster gives back an array of the entries' type",
    )))
}
