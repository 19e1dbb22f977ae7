//! Dense arrays made in place by a data operation (a LIBSVM file's columns, read in
//! place): every rank fills the regions it read in an array of the whole shape whose other
//! pages are never written (they cost no memory), kept under the id the driver gave the
//! operation. A worker's arrays go to its store, as the driver's arrays; the
//! driver's holds its own regions and lists the others' as parts away
//! (`Directory::made_away`), so a call takes them from where they are and serial code
//! fetches them when it reads them, as after a call that left parts there.

use std::sync::Mutex;

use super::super::away;
use super::super::proto::Region;
use super::super::session::Session;
use super::super::store::{Store, Stored};
use super::super::wire::WireArray;
use crate::array::DistArray;

/// An array a data operation made: the driver's id, its version, the array.
type Made = (u64, u64, Box<dyn Stored>);

/// The arrays the data operations of this process made and no one took yet.
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// Array `id` of `shape`, zero and unwritten (no memory until written), for a data
/// operation to fill this rank's regions of.
pub(crate) fn zeroed<T, const N: usize>(
    id: u64,
    shape: [usize; N],
) -> Result<DistArray<T, N>, String>
where
    T: Clone + Default + 'static,
{
    DistArray::try_zeros(shape).map(|a| a.with_id(id))
}

/// Keeps this rank's array (made by [`zeroed`], its regions filled): every rank fills its
/// regions the same way, so its version is the driver's array's.
pub(crate) fn keep<T: Send + 'static, const N: usize>(array: DistArray<T, N>) {
    let (id, version) = array.contents_key();
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    made.retain(|(i, ..)| *i != id);
    made.push((id, version, Box::new(array)));
}

/// Worker: the arrays its data operations made go to its store, as the driver's arrays.
pub(crate) fn adopt(store: &mut Store) {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(|e| e.into_inner()));
    for (id, version, array) in made {
        store.put_boxed(id, version, array);
    }
}

/// Driver: a data operation that made arrays `ids` failed (on some rank, or here after
/// it): every rank drops what it made of them, the driver included.
pub(crate) fn abandon(ids: impl IntoIterator<Item = u64>) {
    for id in ids {
        super::super::job::forget_on_workers(id);
    }
}

/// Driver: runs data operation `op` (its `args`) on every rank, each making its parts of
/// the dense arrays `ids`, and decodes each rank's answer; when the operation or an answer
/// fails every rank lets go of what it made of them.
pub(crate) fn answers<A: serde::de::DeserializeOwned>(
    s: &'static Session,
    op: &str,
    args: Vec<u8>,
    ids: &[u64],
) -> crate::error::Result<Vec<A>> {
    super::run(s, op, args)
        .and_then(|a| super::decode_each(&a))
        .map_err(|e| {
            abandon(ids.iter().copied());
            crate::error::Error::Rank(e)
        })
}

/// Drops what this process made of array `id` and no one took (the driver dropped it).
pub(crate) fn forget(id: u64) {
    MADE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(i, ..)| *i != id);
}

/// Driver: its array `id` the operation made here, with `parts` (regions only other ranks
/// hold) away: fetched when serial code reads them, taken from there by calls.
pub(crate) fn take<T, const N: usize>(
    s: &'static Session,
    id: u64,
    parts: Vec<(Region, usize)>,
) -> Result<DistArray<T, N>, String>
where
    T: Send + Sync + 'static,
{
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let at = made
        .iter()
        .position(|(i, ..)| *i == id)
        .ok_or_else(|| format!("the driver made no array {id}"))?;
    let (.., array) = made.swap_remove(at);
    drop(made);
    let mut array = *array
        .into_any()
        .downcast::<DistArray<T, N>>()
        .map_err(|_| format!("array {id} was made of another type"))?;
    // The workers hold copies (their regions, maybe none): they drop them with this array.
    array.shared_as(id);
    let parts: Vec<(Region, usize)> = parts.into_iter().filter(|(r, _)| !r.is_empty()).collect();
    if parts.is_empty() {
        return Ok(array);
    }
    let meta = array
        .meta(false)
        .ok_or_else(|| format!("array {id}'s elements cannot cross processes"))?;
    let shape = array.shape().to_vec();
    let fetch_parts = parts.clone();
    array.made_away(|base| away::fetch::<T>(base, shape, None, s, id, fetch_parts));
    s.directory().made_away(&meta, parts);
    Ok(array)
}
