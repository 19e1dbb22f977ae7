//! The copies of the driver's arrays a worker keeps between calls, by the driver's array
//! id: filled from whole arrays or regions, lent to the loops, read back when the driver
//! fetches parts left here, and dropped when the driver drops the array.

use std::any::Any;
use std::collections::HashMap;

use super::proto::{ArrayMeta, Region};
use super::wire::elem_of;
use crate::array::le::{get, put};
use crate::array::{DistArray, SparseArray};
use crate::checkpoint::Poly;

/// An array a worker keeps between calls.
pub trait Stored: Any + Send {
    /// Its elements in `region`, little-endian: the driver fetching parts a call left
    /// here.
    fn read_region(&self, region: &Region) -> Result<Vec<u8>, String>;
    /// Gives `out` the elements of `region`, little-endian, as
    /// [`read_region`](Stored::read_region) gives them, 64 Ki elements at a time (a
    /// checkpoint's piece, written from where the elements live).
    fn write_region(
        &self,
        region: &Region,
        out: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String>;
    /// The checksum of each range of `region`'s elements, little-endian, as
    /// [`read_region`](Stored::read_region) gives them (nothing copied whole).
    fn digest_region(&self, region: &Region) -> Result<Vec<Poly>, String>;
    /// Sets the elements of `region` from `bytes` (little-endian, as
    /// [`read_region`](Stored::read_region) gives them): serial code on the driver wrote
    /// them.
    fn set_region(&mut self, region: &Region, bytes: &[u8]) -> Result<(), String>;
    /// As `Any`, to take it out with its type.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
    /// Bytes of its elements (and a sparse array's indices).
    fn bytes(&self) -> u64;
    /// What it is, for explain lines: `dense [4, 3] of f32`, `sparse [9, 9], 12 entries of u8`.
    fn describe(&self) -> String;
}

/// The last segment of an element type's name (`f32`, `Topic`).
fn short_type<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// The elements of each range of `region`, in order; an error for a range outside `data`
/// or elements without a wire type.
fn ranges<'a, T: 'static>(data: &'a [T], region: &'a Region) -> Result<Vec<&'a [T]>, String> {
    elem_of::<T>().ok_or("an array without a wire type")?;
    region
        .0
        .iter()
        .map(|&(lo, hi)| {
            data.get(lo as usize..hi as usize).ok_or_else(|| {
                format!(
                    "[{lo}, {hi}) is outside the array's {} elements",
                    data.len()
                )
            })
        })
        .collect()
}

impl<T: Send + 'static, const N: usize> Stored for DistArray<T, N> {
    fn read_region(&self, region: &Region) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(region.len() as usize * std::mem::size_of::<T>());
        for part in ranges(self.as_slice(), region)? {
            put(part, &mut out);
        }
        Ok(out)
    }

    fn write_region(
        &self,
        region: &Region,
        out: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        for part in ranges(self.as_slice(), region)? {
            crate::array::le::each_bytes(part, &mut *out)?;
        }
        Ok(())
    }

    fn digest_region(&self, region: &Region) -> Result<Vec<Poly>, String> {
        Ok(ranges(self.as_slice(), region)?
            .into_iter()
            .map(crate::array::le::digest)
            .collect())
    }

    fn set_region(&mut self, region: &Region, bytes: &[u8]) -> Result<(), String> {
        let size = elem_of::<T>().ok_or("an array without a wire type")?.size();
        ranges(self.as_slice(), region)?;
        if bytes.len() as u64 != region.len() * size as u64 {
            return Err(format!(
                "{} bytes for {} elements of {size} bytes",
                bytes.len(),
                region.len()
            ));
        }
        let data = self.as_mut_slice();
        let mut at = 0;
        for &(lo, hi) in &region.0 {
            let n = (hi - lo) as usize;
            if !get(
                &bytes[at..at + n * size],
                &mut data[lo as usize..hi as usize],
            ) {
                return Err("bytes that are not the elements".into());
            }
            at += n * size;
        }
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }

    fn bytes(&self) -> u64 {
        let whole = (self.len() * std::mem::size_of::<T>()) as u64;
        // What this rank holds in memory of it: the pages its parts filled (asked only
        // for the explain lines: one system call per array).
        if crate::config::explains() {
            crate::array::pages::resident_bytes(self.as_slice()).map_or(whole, |b| b.min(whole))
        } else {
            whole
        }
    }

    fn describe(&self) -> String {
        format!("dense {:?} of {}", self.shape(), short_type::<T>())
    }
}

impl<T: Send + 'static, const N: usize> Stored for SparseArray<T, N> {
    fn read_region(&self, _: &Region) -> Result<Vec<u8>, String> {
        Err("a sparse array is never left in parts".into())
    }

    fn write_region(
        &self,
        _: &Region,
        _: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        Err("a sparse array is never left in parts".into())
    }

    fn digest_region(&self, _: &Region) -> Result<Vec<Poly>, String> {
        Err("a sparse array is never left in parts".into())
    }

    fn set_region(&mut self, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("a sparse array is never left in parts".into())
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }

    fn bytes(&self) -> u64 {
        (self.nnz() * 4 * N + self.values_held() * std::mem::size_of::<T>()) as u64
    }

    fn describe(&self) -> String {
        format!(
            "sparse {:?}, {} entries of {}",
            self.shape(),
            self.nnz(),
            short_type::<T>()
        )
    }
}

/// A worker's blocks of sparse iteration spaces, per loop and space: `(loop, key, the
/// driver's array id, blocks)`; the loop's next blocks of the same array replace them,
/// and they go when the driver drops the array (`forget_blocks`).
type KeptBlocks = Vec<(
    String,
    u64,
    u64,
    std::sync::Arc<dyn Any + Send + Sync>,
    usize,
)>;
static BLOCKS: std::sync::Mutex<KeptBlocks> = std::sync::Mutex::new(Vec::new());

/// Keeps loop `name`'s blocks (of the driver's array `id`, `bytes` as sent) under `key`.
pub(crate) fn keep_blocks(
    name: &str,
    key: u64,
    id: u64,
    blocks: std::sync::Arc<dyn Any + Send + Sync>,
    bytes: usize,
) {
    let mut kept = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(n, _, a, ..)| n != name || *a != id);
    kept.push((name.to_string(), key, id, blocks, bytes));
    drop(kept);
    note_beside(id);
}

/// For the memory line: the most bytes of blocks and `iter_mut()` values kept at once of
/// each of the driver's arrays (besides any copy of the array itself).
static BESIDE: std::sync::Mutex<std::collections::BTreeMap<u64, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The bytes of the values this rank holds of each spread array an `iter_mut()` loop runs
/// where its parts are (`spread::values`), by id.
static SPREAD_VALUES: std::sync::Mutex<std::collections::BTreeMap<u64, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Notes that this rank holds `bytes` of values of the driver's spread array `id` (0: none).
pub(crate) fn note_spread_values(id: u64, bytes: u64) {
    let mut held = SPREAD_VALUES.lock().unwrap_or_else(|e| e.into_inner());
    if bytes == 0 {
        held.remove(&id);
    } else {
        held.insert(id, bytes);
    }
    drop(held);
    note_beside(id);
}

/// Notes what is kept now of the driver's array `id` besides the array.
fn note_beside(id: u64) {
    let blocks: u64 = BLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|k| k.2 == id)
        .map(|k| k.4 as u64)
        .sum();
    let values: u64 = VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|k| k.0 == id)
        .map(|k| k.2.bytes())
        .sum();
    let spread = SPREAD_VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .copied()
        .unwrap_or(0);
    let mut beside = BESIDE.lock().unwrap_or_else(|e| e.into_inner());
    let most = beside.entry(id).or_insert(0);
    *most = (*most).max(blocks + values + spread);
}

/// The most bytes of blocks and values kept at once besides each array, by its id.
pub(crate) fn beside() -> std::collections::BTreeMap<u64, u64> {
    BESIDE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The sets of blocks kept, and their bytes as they were sent.
pub(crate) fn blocks_held() -> (usize, usize) {
    let kept = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    (kept.len(), kept.iter().map(|k| k.4).sum())
}

/// Loop `name`'s blocks kept under `key`.
pub(crate) fn kept_blocks(name: &str, key: u64) -> Option<std::sync::Arc<dyn Any + Send + Sync>> {
    let kept = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter()
        .find(|(n, k, ..)| n == name && *k == key)
        .map(|(_, _, _, b, _)| b.clone())
}

/// Drops the blocks of the driver's spread array `id` traded among the ranks (it came
/// home: its calls send their blocks from the driver from now on).
pub(crate) fn forget_traded(id: u64) {
    BLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(name, _, a, ..)| *a != id || !name.starts_with("traded:"));
}

/// Drops the blocks and values kept of the driver's array `id` (the driver dropped it).
pub(crate) fn forget_blocks(id: u64) {
    BLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(_, _, a, ..)| *a != id);
    VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(a, ..)| *a != id);
}

/// The id under which a worker's kept `iter_mut()` values of the driver's array `id` are
/// fetched (the driver's array ids count up from 1 and never reach this bit).
pub(crate) const VALUES_BIT: u64 = 1 << 63;

/// A worker's `iter_mut()` values kept between calls, with their type (`itermut`'s).
pub(crate) trait KeptValues: Send {
    /// Their encoding, for the driver fetching them.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// The same bytes to `w`, a slice at a time when their codec is raw (a checkpoint
    /// writes them from where they are).
    fn write(&self, w: &mut dyn FnMut(&[u8]) -> Result<(), String>) -> Result<(), String>;
    /// Bytes they hold in memory (about).
    fn bytes(&self) -> u64;
    /// As `Any`, to take them back with their type.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// The values kept, by the driver's array id, with the fingerprint of the entries they
/// belong to (in this rank's tasks' order).
type Values = Vec<(u64, u64, Box<dyn KeptValues>)>;
static VALUES: std::sync::Mutex<Values> = std::sync::Mutex::new(Vec::new());

/// Keeps the values of this rank's entries of the driver's array `id` (`fingerprint`:
/// which entries, in which order), replacing what was kept of it.
pub(crate) fn keep_values(id: u64, fingerprint: u64, values: Box<dyn KeptValues>) {
    let mut kept = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(a, ..)| *a != id);
    kept.push((id, fingerprint, values));
    drop(kept);
    note_beside(id);
}

/// Takes the values kept of the driver's array `id`, if they belong to the entries
/// `fingerprint` names; `Err` says what is kept instead.
pub(crate) fn take_kept_values(id: u64, fingerprint: u64) -> Result<Box<dyn KeptValues>, String> {
    let mut kept = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    match kept.iter().position(|(a, ..)| *a == id) {
        Some(i) if kept[i].1 == fingerprint => Ok(kept.swap_remove(i).2),
        Some(i) => Err(format!(
            "the values kept here belong to other entries (fingerprint {:016x}, asked for \
             {fingerprint:016x})",
            kept[i].1
        )),
        None => Err("no values are kept here".into()),
    }
}

/// The bytes of values kept, over every array.
pub(crate) fn values_held() -> u64 {
    let kept = VALUES.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter().map(|k| k.2.bytes()).sum()
}

/// A worker's copies of the driver's arrays, by the driver's array id.
#[derive(Default)]
pub struct Store {
    arrays: HashMap<u64, (u64, Box<dyn Stored>)>,
    /// Every array kept at some point, by id: what it is and its largest bytes; and the
    /// most bytes kept at once (after a call put its arrays back), for the memory line.
    seen: std::collections::BTreeMap<u64, (String, u64)>,
    peak: u64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("arrays", &self.arrays.len())
            .finish()
    }
}

impl Store {
    /// Whether the store holds version `version` of array `id`.
    pub fn holds(&self, id: u64, version: u64) -> bool {
        self.arrays.get(&id).is_some_and(|(v, _)| *v == version)
    }

    /// Takes dense array `meta.id` out, shaped `N`: the cached copy, or zeros.
    pub fn take_dense<T, const N: usize>(
        &mut self,
        meta: &ArrayMeta,
    ) -> Result<DistArray<T, N>, String>
    where
        T: Clone + Default + Send + 'static,
    {
        let shape: [usize; N] = meta.shape.as_slice().try_into().map_err(|_| {
            format!(
                "a {}-dim array where the loop has {N} dims",
                meta.shape.len()
            )
        })?;
        if let Some((_, a)) = self.arrays.remove(&meta.id) {
            match a.into_any().downcast::<DistArray<T, N>>() {
                Ok(a) if a.shape() == shape => return Ok(*a),
                _ => {}
            }
        }
        DistArray::try_zeros(shape)
    }

    /// Takes sparse array `meta.id` out (it must be cached).
    pub fn take_sparse<T: Send + 'static, const N: usize>(
        &mut self,
        meta: &ArrayMeta,
    ) -> Result<SparseArray<T, N>, String> {
        match self.arrays.remove(&meta.id) {
            Some((_, a)) => a
                .into_any()
                .downcast::<SparseArray<T, N>>()
                .map(|a| *a)
                .map_err(|_| "a sparse array of another type".to_string()),
            None => Err("a sparse array that never arrived".into()),
        }
    }

    /// Puts an array back, as version `version` of the driver's array `id`.
    pub fn put<A: Stored>(&mut self, id: u64, version: u64, array: A) {
        self.put_boxed(id, version, Box::new(array));
    }

    /// [`put`](Self::put), boxed.
    pub(crate) fn put_boxed(&mut self, id: u64, version: u64, array: Box<dyn Stored>) {
        let bytes = array.bytes();
        let seen = self.seen.entry(id).or_insert_with(|| (array.describe(), 0));
        seen.1 = seen.1.max(bytes);
        self.arrays.insert(id, (version, array));
        self.peak = self.peak.max(self.held().1);
    }

    /// Drops the copy of the driver's array `id` (the driver dropped it).
    pub fn forget(&mut self, id: u64) {
        self.arrays.remove(&id);
    }

    /// The arrays kept, and their bytes.
    pub fn held(&self) -> (usize, u64) {
        (
            self.arrays.len(),
            self.arrays.values().map(|(_, a)| a.bytes()).sum(),
        )
    }

    /// Every array kept at some point, by the driver's id: what it is and its largest
    /// bytes; and the most bytes kept at once.
    pub fn seen(&self) -> (Vec<(u64, String, u64)>, u64) {
        let each = self
            .seen
            .iter()
            .map(|(&id, (what, bytes))| (id, what.clone(), *bytes))
            .collect();
        (each, self.peak)
    }

    /// The elements of `region` of the driver's array `id` (a fetch of parts left here);
    /// for `id | VALUES_BIT`, the `iter_mut()` values kept of it, whole.
    pub fn read(&self, id: u64, region: &Region) -> Result<Vec<u8>, String> {
        if id & VALUES_BIT != 0 {
            let kept = VALUES.lock().unwrap_or_else(|e| e.into_inner());
            return kept
                .iter()
                .find(|(a, ..)| *a == id ^ VALUES_BIT)
                .ok_or_else(|| format!("no values of array {} are kept here", id ^ VALUES_BIT))
                .and_then(|k| k.2.encode());
        }
        match self.arrays.get(&id) {
            Some((_, a)) => a.read_region(region),
            None => Err(format!("array {id} is not kept here")),
        }
    }

    /// Sets the elements of `region` of the driver's array `id` from `bytes` (serial code
    /// on the driver wrote them).
    pub fn set(&mut self, id: u64, region: &Region, bytes: &[u8]) -> Result<(), String> {
        match self.arrays.get_mut(&id) {
            Some((_, a)) => a.set_region(region, bytes),
            None => Err(format!("array {id} is not kept here")),
        }
    }

    /// Gives `out` the elements of `region` of the driver's array `id`, little-endian, a
    /// slice at a time (a checkpoint's piece).
    pub fn write_region(
        &self,
        id: u64,
        region: &Region,
        out: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        match self.arrays.get(&id) {
            Some((_, a)) => a.write_region(region, out),
            None => Err(format!("array {id} is not kept here")),
        }
    }

    /// The checksums of the ranges of `region` of the driver's array `id` (a resumed run
    /// comparing an input with parts here).
    pub fn digest(&self, id: u64, region: &Region) -> Result<Vec<Poly>, String> {
        match self.arrays.get(&id) {
            Some((_, a)) => a.digest_region(region),
            None => Err(format!("array {id} is not kept here")),
        }
    }

    /// Fills dense array `meta` from its whole bytes.
    pub fn fill_dense<T, const N: usize>(
        &mut self,
        meta: &ArrayMeta,
        bytes: &[u8],
    ) -> Result<(), String>
    where
        T: Clone + Default + Send + 'static,
    {
        let mut a = self.take_dense::<T, N>(meta)?;
        let len = a.len();
        if bytes.len() != len * meta.elem.size() || !get(bytes, a.as_mut_slice()) {
            return Err(format!(
                "{} bytes for an array of {len} elements of {} bytes",
                bytes.len(),
                meta.elem.size()
            ));
        }
        self.put(meta.id, meta.version, a);
        Ok(())
    }

    /// Makes sparse array `meta` from its whole bytes.
    pub fn fill_sparse<T, const N: usize>(
        &mut self,
        meta: &ArrayMeta,
        bytes: &[u8],
    ) -> Result<(), String>
    where
        T: Clone + Default + Send + 'static,
    {
        let n = meta.entries as usize;
        let shape: [usize; N] = meta.shape.as_slice().try_into().map_err(|_| {
            format!(
                "a {}-dim array where the loop has {N} dims",
                meta.shape.len()
            )
        })?;
        let key_bytes = n.checked_mul(4 * N).ok_or("too many entries")?;
        // Keys only: the values of an `iter_mut()` loop's array come with each call.
        let value_size = if meta.keys_only { 0 } else { meta.elem.size() };
        let want = key_bytes
            .checked_add(n.checked_mul(value_size).ok_or("too many entries")?)
            .ok_or("too many entries")?;
        if bytes.len() != want {
            return Err(format!("{} bytes for {n} sparse entries", bytes.len()));
        }
        let mut keys = Vec::with_capacity(n);
        crate::array::le::get_keys(&bytes[..key_bytes], &shape, &mut keys)
            .map_err(|e| format!("entry {e} lies outside the shape {shape:?}"))?;
        // A keys-only copy holds no values: a worker's `iter_mut()` call makes its own
        // tasks' alone (`Call::run_mut`), not a default for every entry.
        let mut values = if meta.keys_only {
            Vec::new()
        } else {
            vec![T::default(); n]
        };
        if !meta.keys_only && !get(&bytes[key_bytes..], &mut values) {
            return Err("sparse values of another type".into());
        }
        self.put(
            meta.id,
            meta.version,
            SparseArray::from_raw(shape, keys, values),
        );
        Ok(())
    }
}
