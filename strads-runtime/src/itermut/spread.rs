//! `iter_mut()` loops over an array spread over a cluster's ranks (a data set loaded or made
//! in place, [`SparseArray::repeated`]'s lists): the call runs where the parts are. Its
//! first call trades the entries with their values so that each rank holds the blocks its
//! workers run (`strads::exchange_values`); every rank, the driver included, takes its
//! tasks' values from what it holds (decoded from the trade, or as the last call left
//! them) and keeps them after the call. The driver never holds the others' entries or
//! values; serial code reading the array brings it home (`strads::gather_values`, read by
//! [`decode_values`]).

use super::ValuesCodec;
use crate::array::SparseArray;
use crate::cluster::spread::values::{self, Held, State};
use crate::error::{Error, Result};

/// A values message's first byte: the call runs where a spread array's parts are, and
/// each rank takes its tasks' values from what it holds.
pub(super) const SPREAD: u8 = 2;

/// Rank `layout.rank`'s tasks' values of the driver's spread array `id` into `ordered`
/// (its tasks' chunks one after another, of the entries `order`; `blocks`: each of its
/// tasks' block and number of entries, in order;
/// `mine`: the fingerprint of its entries in this order), from what it holds: as the last
/// call left them when it ran the same entries in the same order, else as traded for the
/// grid `key`.
pub(super) fn take<T: Send + 'static>(
    codec: &ValuesCodec<T>,
    id: u64,
    key: u64,
    mine: u64,
    order: &[u32],
    blocks: &[(usize, usize)],
    ordered: &mut [T],
) -> std::result::Result<(), String> {
    let held = values::take(id).ok_or("this rank holds no values of the array")?;
    if held.key != key {
        return Err("the values held here belong to another grid of blocks".into());
    }
    match held.state {
        State::Typed {
            values,
            fingerprint,
        } => {
            let kept = values
                .into_any()
                .downcast::<super::kept::Values<T>>()
                .map_err(|_| "the values held here are of another type".to_string())?;
            if kept.values.len() != ordered.len() || held.ids.len() != order.len() {
                return Err(format!(
                    "{} values of {} entries held here for the call's {} entries",
                    kept.values.len(),
                    held.ids.len(),
                    order.len()
                ));
            }
            if fingerprint == mine {
                for (slot, v) in ordered.iter_mut().zip(kept.values) {
                    *slot = v;
                }
                return Ok(());
            }
            // The same entries in another order (a loop of the same grid whose tasks run
            // in another order): each value goes to its entry's place.
            let mut at: Vec<(u32, usize)> =
                order.iter().enumerate().map(|(j, &i)| (i, j)).collect();
            at.sort_unstable();
            for (&id, v) in held.ids.iter().zip(kept.values) {
                match at.binary_search_by_key(&id, |&(i, _)| i) {
                    Ok(k) => ordered[at[k].1] = v,
                    Err(_) => {
                        return Err(format!(
                            "the values held here belong to other entries (entry {id} is not \
                             among this call's; fingerprint {fingerprint:016x}, here {mine:016x})"
                        ));
                    }
                }
            }
            Ok(())
        }
        State::Coded { bytes, starts } => {
            // Every entry held runs in the call: none of the values may be left out.
            if held.ids.len() != ordered.len() {
                return Err(format!(
                    "{} entries held here for the call's {}",
                    held.ids.len(),
                    ordered.len()
                ));
            }
            let mut rest: &mut [T] = ordered;
            for &(b, n) in blocks {
                let (lo, hi) = match (starts.get(b), starts.get(b + 1)) {
                    (Some(&lo), Some(&hi)) if lo <= hi && hi <= bytes.len() => (lo, hi),
                    _ => return Err(format!("block {b} of {} held here", starts.len() - 1)),
                };
                let (chunk, tail) = std::mem::take(&mut rest)
                    .split_at_mut_checked(n)
                    .ok_or("more entries held here than the call's tasks run")?;
                let mut src = &bytes[lo..hi];
                (codec.decode)(&mut src, chunk)
                    .map_err(|e| format!("the values traded of block {b} do not decode: {e}"))?;
                if !src.is_empty() {
                    return Err(format!("{} bytes left after block {b}'s values", src.len()));
                }
                rest = tail;
            }
            if !rest.is_empty() {
                return Err(format!(
                    "{} entries of the call's tasks are not held here",
                    rest.len()
                ));
            }
            Ok(())
        }
    }
}

/// After the call: rank `layout.rank` keeps its tasks' values (moved out of `ordered`,
/// whose entries are `order`) for the next call over the same grid `key`.
pub(super) fn keep<T: Default + Send + 'static>(
    codec: &ValuesCodec<T>,
    id: u64,
    key: u64,
    mine: u64,
    order: &[u32],
    ordered: &mut [T],
) {
    let values: Vec<T> = ordered.iter_mut().map(std::mem::take).collect();
    values::keep(
        id,
        Held {
            key,
            ids: order.to_vec(),
            state: State::Typed {
                values: Box::new(super::kept::Values {
                    values,
                    codec: *codec,
                }),
                fingerprint: mine,
            },
        },
    );
}

impl<P, const N: usize> SparseArray<Vec<P>, N>
where
    P: Copy + Default + Send + Sync + 'static,
{
    /// An array of `counts`' indices whose entry holds as many copies of `fill` as
    /// `counts`' entry counts: a list per entry to fill in an `iter_mut()` loop (LDA's
    /// topic of every occurrence of a word in a document, drawn in a `#[parallel_for]`
    /// loop, so that on a cluster each rank draws the topics of the entries it runs).
    ///
    /// On a cluster job's driver, when `counts` is in parts on the ranks (loaded or made
    /// in place) and `P` is a primitive number, so is the new array: each rank makes the
    /// lists of its part, and an `iter_mut()` loop over it runs where they are (its first
    /// call trades the entries with their lists so that each rank holds the blocks its
    /// workers run, and they stay there); serial code that reads it brings it home.
    /// Elsewhere the lists are made here. A count below zero or beyond memory is an error.
    ///
    /// ```
    /// use strads_runtime::SparseArray;
    /// let counts = SparseArray::from_entries([2, 3], vec![([0, 2], 3u32), ([1, 0], 1)])?;
    /// let z = SparseArray::<Vec<u16>, 2>::repeated(&counts, 7)?;
    /// assert_eq!(z.entry(0), ([0, 2], &vec![7, 7, 7]));
    /// assert_eq!(z.entry(1), ([1, 0], &vec![7]));
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    pub fn repeated<C>(counts: &SparseArray<C, N>, fill: P) -> Result<Self>
    where
        C: Copy + TryInto<u64> + std::fmt::Display + Send + Sync + 'static,
    {
        if let Some(ops) = counts.spread_values()
            && crate::array::le::wire_size::<P>().is_some()
        {
            let mut bytes = Vec::new();
            crate::array::le::put(&[fill], &mut bytes);
            let (ops, id) = ops.repeat(&bytes).map_err(Error::Rank)?;
            let spread = crate::array::spread::Spread {
                ops,
                decode: crate::array::spread::decode_values::<Vec<P>, N>,
            };
            return Ok(SparseArray::from_spread(
                counts.shape(),
                counts.nnz(),
                counts.is_sorted(),
                id,
                spread,
            ));
        }
        let mut values = Vec::new();
        values
            .try_reserve_exact(counts.nnz())
            .map_err(|_| Error::Alloc {
                what: format!("the lists of {} entries", counts.nnz()),
                bytes: None,
            })?;
        for (i, (_, &c)) in counts.iter().enumerate() {
            let n = c
                .try_into()
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| Error::Shape(format!("entry {i} counts {c}, not a length")))?;
            let mut list = Vec::new();
            list.try_reserve_exact(n).map_err(|_| Error::Alloc {
                what: format!("the list of entry {i}"),
                bytes: (n as u64).checked_mul(std::mem::size_of::<P>() as u64),
            })?;
            list.resize(n, fill);
            values.push(list);
        }
        Ok(SparseArray::from_raw(
            counts.shape(),
            counts.raw_keys().to_vec(),
            values,
        ))
    }
}

/// The note the driver sends each rank of a call that runs where an array's parts are:
/// [`SPREAD`], then the key of the grid whose blocks they hold.
pub(super) fn note(key: u64) -> Vec<u8> {
    let mut out = vec![SPREAD];
    out.extend_from_slice(&key.to_le_bytes());
    out
}

/// The key of a [`note`], when the values message is one.
pub(super) fn note_key(message: &[u8]) -> Option<u64> {
    match message.split_first() {
        Some((&SPREAD, key)) => Some(u64::from_le_bytes(key.try_into().ok()?)),
        _ => None,
    }
}

/// Driver: the key the spread array's entries and values are traded under (traded now, the
/// first time for this grid and layout) when the call runs where they are: a call across
/// processes whose tasks are all blocks of the array's grid, each run by the rank that
/// holds its first coordinate's entries. `None`: the call cannot, and the array comes home.
pub(super) fn trade<T, const N: usize>(
    job: &crate::exec::Job<'_, crate::space::KeyBuckets<N>>,
    keys: &super::Keys<'_, T, N>,
) -> Option<u64>
where
    T: Clone + Send + Sync + 'static,
{
    use crate::space::Space;
    let crate::exec::Side::Driver(s) = job.side() else {
        return None;
    };
    let sched = job.schedule();
    let blocks_only = sched
        .steps
        .iter()
        .flat_map(|st| st.tasks.iter().flatten())
        .all(|t| matches!(t.unit, crate::plan::Unit::Block(_)));
    if !job.ships() || !blocks_only || sched.workers != s.workers() {
        return None;
    }
    // A call the driver cannot send (captured values too large, an argument that cannot
    // cross, ...) runs on its threads: the array comes home for it, untraded.
    if job.why_not_across(keys.0).is_some() {
        return None;
    }
    let runs = crate::cluster::call::block_ranks(sched, s.threads)?;
    keys.spread_blocks(job.blocks()?, s.workers(), s.threads, &runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part as `strads::gather` or `strads::gather_values` sends it: `keys`, then the
    /// values of the part's entries (`ids` `None`) or of the entries `ids`.
    fn part(keys: &[[u32; 2]], ids: Option<&[u32]>, values: &[Vec<u16>]) -> Vec<u8> {
        let mut out = (keys.len() as u64).to_le_bytes().to_vec();
        for &i in keys.iter().flatten() {
            out.extend_from_slice(&i.to_le_bytes());
        }
        match ids {
            None => out.push(0),
            Some(ids) => {
                out.push(1);
                out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
                for &i in ids {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
        }
        let codec = super::super::raw::codec::<Vec<u16>>().expect("raw");
        (codec.encode)(values, &mut out).expect("encodes");
        out
    }

    #[test]
    fn parts_come_home_with_their_values_from_where_they_are() {
        let keys = [[[0u32, 1], [1, 2]], [[2, 0], [3, 3]]];
        // Rank 0 holds entries 3 and 0, rank 1 entries 2 and 1.
        let parts = vec![
            part(&keys[0], Some(&[3, 0]), &[vec![7], vec![1, 2]]),
            part(&keys[1], Some(&[2, 1]), &[vec![], vec![5, 5, 5]]),
        ];
        let (k, v) =
            crate::array::spread::decode_values::<Vec<u16>, 2>(parts, &[4, 4]).expect("decodes");
        assert_eq!(k, [[0, 1], [1, 2], [2, 0], [3, 3]]);
        assert_eq!(v, [vec![1, 2], vec![5, 5, 5], vec![], vec![7]]);
        // Parts that hold their own entries' values, as made.
        let parts = vec![
            part(&keys[0], None, &[vec![1], vec![2]]),
            part(&keys[1], None, &[vec![3], vec![]]),
        ];
        let (_, v) =
            crate::array::spread::decode_values::<Vec<u16>, 2>(parts, &[4, 4]).expect("decodes");
        assert_eq!(v, [vec![1], vec![2], vec![3], vec![]]);
    }

    #[test]
    fn values_missing_twice_or_cut_do_not_come_home() {
        let keys = [[[0u32, 1], [1, 2]], [[2, 0], [3, 3]]];
        let decode = |parts| {
            crate::array::spread::decode_values::<Vec<u16>, 2>(parts, &[4, 4]).expect_err("refused")
        };
        let twice = vec![
            part(&keys[0], Some(&[3, 0]), &[vec![7], vec![1]]),
            part(&keys[1], Some(&[3, 1]), &[vec![], vec![5]]),
        ];
        assert_eq!(
            decode(twice),
            "rank 1 sends a value of entry 3 of 4 twice or beyond"
        );
        let missing = vec![
            part(&keys[0], Some(&[3]), &[vec![7]]),
            part(&keys[1], Some(&[2, 1]), &[vec![], vec![5]]),
        ];
        assert_eq!(decode(missing), "no rank sent the value of entry 0");
        let beyond = vec![
            part(&keys[0], Some(&[9, 0]), &[vec![7], vec![1]]),
            part(&keys[1], Some(&[2, 1]), &[vec![], vec![5]]),
        ];
        assert_eq!(
            decode(beyond),
            "rank 0 sends a value of entry 9 of 4 twice or beyond"
        );
        let mut cut = part(&keys[0], None, &[vec![1], vec![2, 3]]);
        cut.pop();
        let e = decode(vec![cut, part(&keys[1], None, &[vec![], vec![]])]);
        assert!(
            e.starts_with("the values of rank 0's part do not decode"),
            "{e}"
        );
        let mut kind = part(&keys[0], None, &[vec![1], vec![2]]);
        kind[8 + 16] = 7;
        assert_eq!(decode(vec![kind]), "rank 0's values of kind 7");
        let outside = vec![part(&[[4, 0]], None, &[vec![]])];
        assert_eq!(
            decode(outside),
            "entry 0 of rank 0's part lies outside the shape [4, 4]"
        );
    }

    #[test]
    fn a_rank_takes_its_values_as_traded_or_as_the_last_call_left_them() {
        let codec = super::super::raw::codec::<Vec<u16>>().expect("raw");
        let id = crate::array::fresh_id();
        // Traded: block 1's two entries (ids 4, 2) and block 3's one (id 0).
        let mut bytes = Vec::new();
        (codec.encode)(&[vec![1], vec![2, 2]], &mut bytes).expect("encodes");
        let b3 = bytes.len();
        (codec.encode)(&[vec![3]], &mut bytes).expect("encodes");
        let held = Held {
            key: 9,
            ids: vec![4, 2, 0],
            state: State::Coded {
                starts: vec![0, 0, b3, b3, bytes.len(), bytes.len()],
                bytes,
            },
        };
        values::keep(id, held);
        // The tasks run block 3, then block 1.
        let mut ordered = vec![Vec::new(); 3];
        take(
            &codec,
            id,
            9,
            1,
            &[0, 4, 2],
            &[(3, 1), (1, 2)],
            &mut ordered,
        )
        .expect("takes");
        assert_eq!(ordered, [vec![3], vec![1], vec![2, 2]]);
        // Kept after the call, in its order; taken by a call in another order (ids 4, 2,
        // 0) by entry.
        keep(&codec, id, 9, 1, &[0, 4, 2], &mut ordered);
        let mut again = vec![Vec::new(); 3];
        take(&codec, id, 9, 2, &[4, 2, 0], &[(1, 2), (3, 1)], &mut again).expect("takes");
        assert_eq!(again, [vec![1], vec![2, 2], vec![3]]);
        // Nothing held, or held for another grid.
        let e = take(&codec, id, 9, 2, &[4, 2, 0], &[(1, 2), (3, 1)], &mut again);
        assert_eq!(
            e.err().as_deref(),
            Some("this rank holds no values of the array")
        );
        keep(&codec, id, 9, 2, &[4, 2, 0], &mut again);
        let e = take(&codec, id, 8, 2, &[4, 2, 0], &[(1, 2), (3, 1)], &mut again);
        assert_eq!(
            e.err().as_deref(),
            Some("the values held here belong to another grid of blocks")
        );
        values::forget(id);
    }

    #[test]
    fn lists_made_from_counts_hold_their_count_of_the_fill() {
        let counts = SparseArray::from_entries([2, 2], vec![([0, 1], 2i32), ([1, 0], 0)]).unwrap();
        let z = SparseArray::<Vec<u8>, 2>::repeated(&counts, 9).expect("made");
        assert_eq!(z.values(), [vec![9, 9], vec![]]);
        let negative = SparseArray::from_entries([2, 2], vec![([1, 1], -1i32)]).unwrap();
        let e = SparseArray::<Vec<u8>, 2>::repeated(&negative, 9).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "shape mismatch: entry 0 counts -1, not a length"
        );
    }
}
