//! `SparseArray::from_entries_iter` made in parts on a cluster job's driver
//! (`array::inparts` takes the entries and makes the pieces): each piece of a rank's
//! entries is a collective operation of its own ([`PIECE`]), in which the driver sends it
//! to its rank, which adds it to what it received; a last operation ([`KEEP`]) has every
//! rank keep what it received as its part of a spread array (each rank a contiguous range
//! of the entries, in rank order, as a loader makes it) and answer the part's facts.
//! Values that are `Vec`s of numbers (`list`) cross as `array::lists` writes them, and a
//! rank keeps them so, a part of values in their codec (`CodedPart`).

use std::any::Any;

use serde::{Deserialize, Serialize};

use super::super::proto::Elem;
use super::super::session::Session;
use super::{Ctx, DATA_OPS, DataOp, Facts, dense, keep_new, postcard_args};
use crate::array::le;

/// What every operation of one array says: its id, element kind and shape, and whether
/// its values are `Vec`s of that kind.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Array {
    id: u64,
    elem: Elem,
    shape: Vec<usize>,
    list: bool,
}

/// What a rank received of an array of lists: the indices, where each entry's list ends in
/// the bytes, the bytes.
type Lists<const N: usize> = (Vec<[u32; N]>, Vec<usize>, Vec<u8>);

/// Driver: sends rank `to` entries of array `id` (their indices, then their values); a
/// rank that cannot take them stops the job.
pub(crate) fn send_entries(
    s: &'static Session,
    id: u64,
    elem: Elem,
    list: bool,
    shape: &[usize],
    to: usize,
    bytes: Vec<u8>,
) {
    let array = Array {
        id,
        elem,
        shape: shape.to_vec(),
        list,
    };
    let what = format!("SparseArray::from_entries of shape {shape:?}");
    super::typed::send_piece(
        s,
        PIECE.name,
        &postcard_args(&(array, to)),
        id,
        to,
        bytes,
        &what,
    );
}

/// Driver: every rank keeps the entries it received as its part of array `id` (the
/// driver `own`, a boxed `(Vec<[u32; N]>, Vec<T>)`, `T` a `Vec` of the element kind with
/// `list`); the spread array, boxed.
pub(crate) fn sparse(
    s: &'static Session,
    id: u64,
    elem: Elem,
    list: bool,
    shape: &[usize],
    own: Box<dyn Any>,
) -> Box<dyn Any> {
    let array = Array {
        id,
        elem,
        shape: shape.to_vec(),
        list,
    };
    let made = typed!(
        elem,
        shape.len(),
        U,
        N,
        if list {
            keep_all_lists::<U, N>(s, &array, own)
        } else {
            keep_all::<U, N>(s, &array, own)
        },
        Err(format!("array {id} has more than 4 dims"))
    );
    made.unwrap_or_else(|e| {
        dense::abandon([id]);
        s.fail(format!(
            "SparseArray::from_entries of shape {shape:?} in parts: {e}"
        ))
    })
}

fn keep_all<U, const N: usize>(
    s: &'static Session,
    array: &Array,
    own: Box<dyn Any>,
) -> Result<Box<dyn Any>, String>
where
    U: Clone + Send + Sync + 'static,
{
    let (keys, values) = *own
        .downcast::<(Vec<[u32; N]>, Vec<U>)>()
        .map_err(|_| format!("array {}'s entries are of another type", array.id))?;
    let shape: [usize; N] = array.shape.as_slice().try_into().map_err(|_| "a shape")?;
    let answers = super::run_with(s, KEEP.name, &postcard_args(array), |_: &mut Ctx| {
        Ok(postcard_args(&keep_new(array.id, keys, values)))
    })?;
    let facts: Vec<Facts> = super::decode_each(&answers)?;
    super::made::<U, N>(s, array.id, shape, &facts).map(|a| Box::new(a) as Box<dyn Any>)
}

/// The driver's side of [`keep_all`] for an array of lists of `U`: its own entries kept as
/// a part of values in their codec.
fn keep_all_lists<U, const N: usize>(
    s: &'static Session,
    array: &Array,
    own: Box<dyn Any>,
) -> Result<Box<dyn Any>, String>
where
    U: Copy + Default + Send + Sync + 'static,
{
    let (keys, values) = *own
        .downcast::<(Vec<[u32; N]>, Vec<Vec<U>>)>()
        .map_err(|_| format!("array {}'s entries are of another type", array.id))?;
    let shape: [usize; N] = array.shape.as_slice().try_into().map_err(|_| "a shape")?;
    let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(values.len()));
    for v in values {
        crate::array::lists::put(std::slice::from_ref(&v), &mut bytes);
        ends.push(bytes.len());
    }
    let answers = super::run_with(s, KEEP.name, &postcard_args(array), |_: &mut Ctx| {
        Ok(postcard_args(&keep_lists(array.id, (keys, ends, bytes))))
    })?;
    let facts: Vec<Facts> = super::decode_each(&answers)?;
    super::made_coded::<U, N>(s, array.id, shape, &facts).map(|a| Box::new(a) as Box<dyn Any>)
}

/// Keeps a rank's lists as its part of array `id`: the part's facts.
fn keep_lists<const N: usize>(id: u64, (keys, ends, bytes): Lists<N>) -> Facts {
    let facts = Facts::of(&keys);
    super::keep(id, Box::new(super::share::CodedPart { keys, ends, bytes }));
    facts
}

/// Adds `bytes` (the count, the indices, the lists) to the entries of `array` received
/// here.
fn add_lists<const N: usize>(array: &Array, bytes: &[u8]) -> Result<(), String> {
    let shape: [usize; N] = array.shape.as_slice().try_into().map_err(|_| "a shape")?;
    let (_, key_end) =
        le::counted(bytes, 4 * N).map_err(|e| format!("a piece of lists' entries: {e}"))?;
    let mut keys = Vec::with_capacity((key_end - 8) / (4 * N));
    le::get_keys(&bytes[8..key_end], &shape, &mut keys)
        .map_err(|e| format!("entry {e} of a piece lies outside the shape {shape:?}"))?;
    let lists = &bytes[key_end..];
    let ends = crate::array::lists::ends(lists, array.elem.size())?;
    if ends.len() != keys.len() {
        return Err(format!("{} lists for {} entries", ends.len(), keys.len()));
    }
    let mut pending = super::typed::PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let at = match pending.iter().position(|(i, ..)| *i == array.id) {
        Some(at) => at,
        None => {
            let part: Lists<N> = (Vec::new(), Vec::new(), Vec::new());
            pending.push((array.id, 0, Box::new(part)));
            pending.len() - 1
        }
    };
    pending[at].1 += bytes.len() as u64;
    let part = pending[at]
        .2
        .downcast_mut::<Lists<N>>()
        .ok_or("entries of another type")?;
    let base = part.2.len();
    part.0.extend(keys);
    part.1.extend(ends.into_iter().map(|e| base + e));
    part.2.extend_from_slice(lists);
    Ok(())
}

#[linkme::distributed_slice(DATA_OPS)]
static PIECE: DataOp = DataOp {
    name: "strads::from_entries",
    run: piece,
};

#[linkme::distributed_slice(DATA_OPS)]
static KEEP: DataOp = DataOp {
    name: "strads::from_entries_keep",
    run: keep,
};

/// Every rank: one piece of the entries; rank `to` adds it to what it received.
fn piece(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let taken = super::typed::take_piece(ctx, args, "entries", |(_, to): &(Array, usize)| *to)?;
    let Some(((array, _), bytes)) = taken else {
        return Ok(Vec::new());
    };
    let added = if array.list {
        dims!(
            array.shape.len(),
            N,
            add_lists::<N>(&array, &bytes),
            Err(format!("an array of {} dims", array.shape.len()))
        )
    } else {
        typed!(
            array.elem,
            array.shape.len(),
            U,
            N,
            add::<U, N>(&array, &bytes),
            Err(format!("an array of {} dims", array.shape.len()))
        )
    };
    added.map(|()| Vec::new()).map_err(|e| {
        super::typed::forget(array.id);
        format!("SparseArray::from_entries' entries: {e}")
    })
}

/// Adds `bytes` (indices, then values) to the entries of `array` received here.
fn add<U, const N: usize>(array: &Array, bytes: &[u8]) -> Result<(), String>
where
    U: Clone + Send + Sync + 'static,
{
    let shape: [usize; N] = array.shape.as_slice().try_into().map_err(|_| "a shape")?;
    let each = 4 * N + array.elem.size();
    if bytes.len() % each != 0 {
        return Err(format!("{} bytes for entries of {each} bytes", bytes.len()));
    }
    let n = bytes.len() / each;
    let values = le::get_vec::<U>(&bytes[4 * N * n..]).ok_or("values of another type")?;
    let mut keys = Vec::with_capacity(n);
    le::get_keys(&bytes[..4 * N * n], &shape, &mut keys)
        .map_err(|e| format!("entry {e} of a piece lies outside the shape {shape:?}"))?;
    let mut pending = super::typed::PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let at = match pending.iter().position(|(i, ..)| *i == array.id) {
        Some(at) => at,
        None => {
            let part: (Vec<[u32; N]>, Vec<U>) = (Vec::new(), Vec::new());
            pending.push((array.id, 0, Box::new(part)));
            pending.len() - 1
        }
    };
    pending[at].1 += bytes.len() as u64;
    let part = pending[at]
        .2
        .downcast_mut::<(Vec<[u32; N]>, Vec<U>)>()
        .ok_or("entries of another type")?;
    part.0.extend(keys);
    part.1.extend(values);
    Ok(())
}

/// Every rank but the driver: keeps the entries it received (maybe none) as its part of
/// the array, and answers the part's facts.
fn keep(_: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let array: Array =
        postcard::from_bytes(args).map_err(|e| format!("an array that does not decode ({e})"))?;
    let part = {
        let mut pending = super::typed::PENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let at = pending.iter().position(|(i, ..)| *i == array.id);
        at.map(|at| pending.swap_remove(at).2)
    };
    if array.list {
        return dims!(
            array.shape.len(),
            N,
            {
                let lists: Lists<N> = match part {
                    Some(part) => *part
                        .downcast::<Lists<N>>()
                        .map_err(|_| "entries of another type".to_string())?,
                    None => (Vec::new(), Vec::new(), Vec::new()),
                };
                Ok(postcard_args(&keep_lists(array.id, lists)))
            },
            Err(format!("an array of {} dims", array.shape.len()))
        );
    }
    typed!(
        array.elem,
        array.shape.len(),
        U,
        N,
        {
            let (keys, values) = match part {
                Some(part) => *part
                    .downcast::<(Vec<[u32; N]>, Vec<U>)>()
                    .map_err(|_| "entries of another type".to_string())?,
                None => (Vec::new(), Vec::new()),
            };
            Ok(postcard_args(&keep_new(array.id, keys, values)))
        },
        Err(format!("an array of {} dims", array.shape.len()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece of lists of `u16` over a `[4, 4]` array, as the driver sends it.
    fn piece(keys: &[[u32; 2]], lists: &[Vec<u16>]) -> Vec<u8> {
        let mut out = (keys.len() as u64).to_le_bytes().to_vec();
        for &i in keys.iter().flatten() {
            out.extend_from_slice(&i.to_le_bytes());
        }
        crate::array::lists::put(lists, &mut out);
        out
    }

    #[test]
    fn pieces_of_lists_add_up_and_bad_ones_are_refused() {
        let array = Array {
            id: crate::array::fresh_id(),
            elem: Elem::U16,
            shape: vec![4, 4],
            list: true,
        };
        add_lists::<2>(&array, &piece(&[[0, 1], [1, 2]], &[vec![3], vec![1, 2]])).unwrap();
        add_lists::<2>(&array, &piece(&[[2, 3]], &[vec![9]])).unwrap();
        let got = {
            let mut pending = super::super::typed::PENDING.lock().unwrap();
            let at = pending.iter().position(|(i, ..)| *i == array.id).unwrap();
            *pending.swap_remove(at).2.downcast::<Lists<2>>().unwrap()
        };
        // Each list's end in the bytes of both pieces: 1 + 2, 1 + 4, then 1 + 2 more.
        assert_eq!(got.0, [[0, 1], [1, 2], [2, 3]]);
        assert_eq!(got.1, [3, 8, 11]);
        assert_eq!(got.2, [1, 3, 0, 2, 1, 0, 2, 0, 1, 9, 0]);
        let err = |bytes: &[u8]| add_lists::<2>(&array, bytes).unwrap_err();
        let mut count = piece(&[[0, 1]], &[vec![3]]);
        count[..8].copy_from_slice(&9u64.to_le_bytes());
        assert!(
            err(&count).starts_with("a piece of lists' entries: 9 counted, of 8 bytes each"),
            "{}",
            err(&count)
        );
        assert_eq!(
            err(&piece(&[[0, 1], [1, 1]], &[vec![3]])),
            "1 lists for 2 entries"
        );
        let mut cut = piece(&[[0, 1]], &[vec![3, 4]]);
        cut.pop();
        assert!(
            err(&cut).starts_with("value 0: 2 elements"),
            "{}",
            err(&cut)
        );
        assert!(err(&piece(&[[4, 1]], &[vec![]])).starts_with("entry 0 of a piece lies outside"));
        assert_eq!(
            err(&[1, 2]),
            "a piece of lists' entries: cut short before its count"
        );
        super::super::typed::forget(array.id);
    }
}
