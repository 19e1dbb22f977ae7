//! Arrays as bytes: how the elements of a call's arrays cross processes (raw
//! little-endian). A worker's copies between calls are in [`super::store`].

use super::away::{make_at, write_at};
use super::proto::{ArrayMeta, Recipe, Region};
use super::session::Session;
use crate::array::buffer::Buffered;
use crate::array::le::put;
use crate::array::view::SharedMut;
use crate::array::{DistArray, SparseArray};

pub use super::proto::msg::elem_of;

/// A value only this crate can make: the methods of [`WireArray`] that reach a lent
/// array's elements without its views' checks, or change where its parts are, take one,
/// so safe code outside the runtime cannot call them (they would race with the workers'
/// views, or lose parts held by other ranks).
#[derive(Clone, Copy, Debug)]
pub struct Seal(());

/// The runtime's [`Seal`].
pub(crate) const SEAL: Seal = Seal(());

/// One array of a call as the cluster sees it.
pub trait WireArray: Sync {
    /// What the driver says of it; `None` when its elements cannot cross processes.
    fn meta(&self, written: bool) -> Option<ArrayMeta>;
    /// Its elements in `region`, little-endian.
    fn read(&self, seal: Seal, region: &Region) -> Vec<u8>;
    /// Writes `bytes` into `region`; an error when the bytes do not fit it.
    fn write(&self, seal: Seal, region: &Region, bytes: &[u8]) -> Result<(), String>;
    /// Makes `region` from `recipe` (a part of an array created in place that no rank has
    /// written); an error for an array this call does not write.
    fn make(&self, _seal: Seal, _region: &Region, _recipe: Recipe) -> Result<(), String> {
        Err("only an array the call writes is made in place".into())
    }
    /// How the array was created in place, if it was.
    fn recipe(&self) -> Option<Recipe> {
        None
    }
    /// Gives back the pages of `region`, which this rank passed on and will not read again
    /// in the call (the plan's `release`): they read as zero until written again.
    fn release(&self, _seal: Seal, _region: &Region) {}
    /// An array the call only reads, with parts away: the call leases it, so that its
    /// parts stay where they are (`array::away`); `None` when none is away.
    fn lease(&self, _seal: Seal, _id: u64) -> Option<Box<dyn super::away::Leased + '_>> {
        None
    }
    /// The whole array: elements, or for a sparse array its entries (indices as `u32`,
    /// then the values).
    fn whole(&self, seal: Seal) -> Vec<u8>;
    /// For an array lent to be written, its version before the lending (see
    /// `SharedMut::version_before`); `None` for arrays read as they are.
    fn version_before(&self) -> Option<u64> {
        None
    }
    /// Brings parts other ranks hold home (an array this process sends or reads whole).
    fn bring_home(&self) {}
    /// Whether parts are held by other ranks only (left there by an earlier call).
    fn is_away(&self) -> bool {
        false
    }
    /// The call takes the parts from where they are: whether they were away.
    fn claim(&self, _seal: Seal) -> bool {
        false
    }
    /// After the call: `parts` stay on other ranks until something on this process
    /// reads the array, which first fetches them through `session`.
    fn leave(
        &self,
        _seal: Seal,
        _session: &'static Session,
        _id: u64,
        _parts: Vec<(Region, usize)>,
    ) {
    }
    /// Other ranks now hold a copy (known to them as `id`): they drop it when this array is
    /// dropped.
    fn shared(&self, _seal: Seal, _id: u64) {}
}

fn meta_of<T: 'static>(
    key: (u64, u64),
    shape: &[usize],
    sparse: Option<u64>,
    written: bool,
) -> Option<ArrayMeta> {
    Some(ArrayMeta {
        id: key.0,
        version: key.1,
        sparse: sparse.is_some(),
        shape: shape.to_vec(),
        entries: sparse.unwrap_or(0),
        keys_only: false,
        elem: elem_of::<T>()?,
        shipped: written,
        sent: false,
        holders: Vec::new(),
        held: Vec::new(),
        away: Vec::new(),
        made: None,
    })
}

impl<T: Send + Sync + 'static, const N: usize> WireArray for SharedMut<'_, T, N> {
    fn meta(&self, written: bool) -> Option<ArrayMeta> {
        meta_of::<T>(self.key(), &self.raw().1, None, written)
    }

    fn version_before(&self) -> Option<u64> {
        Some(SharedMut::version_before(self))
    }

    fn read(&self, _: Seal, region: &Region) -> Vec<u8> {
        let (ptr, _) = self.raw();
        let mut out = Vec::with_capacity(region.len() as usize * 8);
        for &(lo, hi) in &region.0 {
            // SAFETY: the region lies inside the array (the call plan computes it from the
            // array's shape), and the cluster reads it after the task that wrote it and
            // before any task that may write it again starts (see `cluster::peers`).
            let s = unsafe { std::slice::from_raw_parts(ptr.add(lo as usize), (hi - lo) as usize) };
            put(s, &mut out);
        }
        out
    }

    fn write(&self, _: Seal, region: &Region, bytes: &[u8]) -> Result<(), String> {
        let (ptr, shape) = self.raw();
        // SAFETY: the lent array's elements; the cluster writes a region before the tasks
        // that need it start and while no task that may touch it runs.
        unsafe { write_at(ptr, shape.iter().product(), region, bytes) }
    }

    fn make(&self, _: Seal, region: &Region, recipe: Recipe) -> Result<(), String> {
        let (ptr, shape) = self.raw();
        // SAFETY: the lent array's elements; the cluster makes a region where it writes a
        // transfer's (before the tasks that need it start and while no task that may touch
        // it runs).
        unsafe { make_at(ptr, &shape, region, recipe) }
    }

    fn release(&self, _: Seal, region: &Region) {
        if !crate::array::pages::zero_is_default::<T>() {
            return;
        }
        let (ptr, shape) = self.raw();
        let len = shape.iter().product();
        for &(lo, hi) in &region.0 {
            // SAFETY: the lent array's elements (`len` of them at `ptr`). The plan releases
            // a region right after the task that wrote it last here, once its bytes are
            // read for sending: no task of this rank reads or writes it again unless a
            // transfer writes it first (`Itinerary::release`, checked by `verify`), and
            // no other task touches what a running task wrote (`Schedule::overlap`).
            unsafe { crate::array::pages::release(ptr, len, lo as usize, hi as usize) };
        }
    }

    fn recipe(&self) -> Option<Recipe> {
        SharedMut::recipe(self)
    }

    fn bring_home(&self) {
        SharedMut::bring_home(self);
    }

    fn shared(&self, _: Seal, id: u64) {
        SharedMut::shared(self, id);
    }

    fn is_away(&self) -> bool {
        SharedMut::is_away(self)
    }

    fn claim(&self, _: Seal) -> bool {
        SharedMut::claim(self)
    }

    fn leave(&self, _: Seal, session: &'static Session, id: u64, parts: Vec<(Region, usize)>) {
        let (ptr, shape) = self.raw();
        let (base, len) = (ptr as usize, shape.iter().product::<usize>());
        // Elements away are not held here: their pages go back to the kernel until they
        // come home.
        let releases = crate::array::pages::zero_is_default::<T>();
        for (region, _) in parts.iter().filter(|_| releases) {
            for &(lo, hi) in &region.0 {
                // SAFETY: the lent array's elements (`len` of them at `ptr`); the call's
                // views are gone, and no reference to the elements exists while parts are
                // away (`array::away`): the fetch rewrites them before anything reads them.
                unsafe { crate::array::pages::release(ptr, len, lo as usize, hi as usize) };
            }
        }
        let fetch =
            super::away::fetch::<T>(base, shape.to_vec(), self.recipe(), session, id, parts);
        SharedMut::leave(self, fetch);
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        let (ptr, shape) = self.raw();
        let len: usize = shape.iter().product();
        let mut out = Vec::new();
        // SAFETY: the whole array, read before the call's tasks start.
        put(unsafe { std::slice::from_raw_parts(ptr, len) }, &mut out);
        out
    }
}

/// Writes `bytes` (little-endian elements) into `region` of an array this process owns.
pub fn write_dense<T: 'static, const N: usize>(
    array: &mut DistArray<T, N>,
    region: &Region,
    bytes: &[u8],
) -> Result<(), String> {
    let slice = array.as_mut_slice();
    // SAFETY: the elements of an array borrowed uniquely for the call.
    unsafe { write_at(slice.as_mut_ptr(), slice.len(), region, bytes) }
}

/// Makes `region` of an array this process owns from `recipe`.
pub fn make_dense<T: 'static, const N: usize>(
    array: &mut DistArray<T, N>,
    region: &Region,
    recipe: Recipe,
) -> Result<(), String> {
    let shape = array.shape();
    let slice = array.as_mut_slice();
    // SAFETY: the elements of an array borrowed uniquely for the call.
    unsafe { make_at(slice.as_mut_ptr(), &shape, region, recipe) }
}

impl<T: Sync + 'static, const N: usize> WireArray for DistArray<T, N> {
    fn meta(&self, _: bool) -> Option<ArrayMeta> {
        meta_of::<T>(self.contents_key(), &self.shape(), None, false)
    }

    fn is_away(&self) -> bool {
        self.away().is_away()
    }

    fn recipe(&self) -> Option<Recipe> {
        self.away().recipe()
    }

    fn lease(&self, _: Seal, id: u64) -> Option<Box<dyn super::away::Leased + '_>> {
        let lease = self.away().lease(id)?;
        Some(Box::new(super::away::LeasedDense::<T>::new(
            lease,
            self.shape().to_vec(),
        )))
    }

    fn bring_home(&self) {
        let _ = self.as_slice();
    }

    fn shared(&self, _: Seal, id: u64) {
        self.shared_as(id);
    }

    fn read(&self, _: Seal, region: &Region) -> Vec<u8> {
        let mut out = Vec::new();
        for &(lo, hi) in &region.0 {
            put(&self.as_slice()[lo as usize..hi as usize], &mut out);
        }
        out
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("a read-only array is not written".into())
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        let mut out = Vec::new();
        put(self.as_slice(), &mut out);
        out
    }
}

/// A buffered array crosses as the array it buffers, unchanged during the call: every rank
/// starts from it, and every rank merges the same copies at each application point.
impl<T, const N: usize> WireArray for Buffered<'_, T, N>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + Send + Sync + 'static,
{
    fn meta(&self, written: bool) -> Option<ArrayMeta> {
        self.original().meta(written)
    }

    fn bring_home(&self) {
        self.original().bring_home();
    }

    fn shared(&self, seal: Seal, id: u64) {
        self.original().shared(seal, id);
    }

    fn read(&self, seal: Seal, region: &Region) -> Vec<u8> {
        self.original().read(seal, region)
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("a buffered array is merged, not written".into())
    }

    fn whole(&self, seal: Seal) -> Vec<u8> {
        self.original().whole(seal)
    }
}

/// A sparse array's indices, little-endian `u32`s entry by entry, in a buffer with room
/// for `value_size` bytes per entry after them.
fn key_bytes<const N: usize>(keys: &[[u32; N]], value_size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(keys.len() * (4 * N + value_size));
    for k in keys {
        for &i in k {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
    out
}

/// Where generated code lists the array an `iter_mut()` loop iterates, which the call
/// borrows mutably: `Call::run_mut` puts the array's indices there (`KeysWire`).
#[derive(Debug)]
pub struct Iterated;

impl WireArray for Iterated {
    fn meta(&self, _: bool) -> Option<ArrayMeta> {
        None
    }

    fn read(&self, _: Seal, _: &Region) -> Vec<u8> {
        Vec::new()
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("an iterated array is not written".into())
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        Vec::new()
    }
}

/// The sparse array a call iterates when its blocks cross rank by rank
/// (`call::BlocksWire`): the array itself crosses as its shape, so a worker holds only
/// the blocks it runs.
pub(crate) struct ShapeWire<'a>(pub(crate) &'a dyn WireArray);

/// The version a shape-only copy is kept under (never one of the values').
const SHAPE_ONLY: u64 = u64::MAX - 2;

impl WireArray for ShapeWire<'_> {
    fn meta(&self, written: bool) -> Option<ArrayMeta> {
        let mut m = self.0.meta(written)?;
        m.version = SHAPE_ONLY;
        m.entries = 0;
        m.keys_only = true;
        Some(m)
    }

    fn read(&self, _: Seal, _: &Region) -> Vec<u8> {
        Vec::new()
    }

    fn shared(&self, seal: Seal, id: u64) {
        self.0.shared(seal, id);
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("an iterated array is not written".into())
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        Vec::new()
    }
}

/// The array of an `iter_mut()` loop, whose values are out of it during the call: its
/// indices cross (once per version of the keys, which never change), and each rank gets
/// the values of its own tasks with the call (`cluster::call::ValuesWire`).
pub(crate) struct KeysWire<'a, T, const N: usize>(pub(crate) &'a SparseArray<T, N>);

/// The version a keys-only copy is kept under: never a version of the values (those
/// count up from 0), so a worker holding the keys never takes them for the whole array.
const KEYS_ONLY: u64 = u64::MAX - 1;

impl<T: Send + Sync + 'static, const N: usize> WireArray for KeysWire<'_, T, N> {
    fn meta(&self, _: bool) -> Option<ArrayMeta> {
        Some(ArrayMeta {
            id: self.0.id(),
            version: KEYS_ONLY,
            sparse: true,
            shape: self.0.shape().to_vec(),
            entries: self.0.nnz() as u64,
            keys_only: true,
            elem: super::proto::Elem::U8,
            made: None,
            shipped: false,
            sent: false,
            holders: Vec::new(),
            held: Vec::new(),
            away: Vec::new(),
        })
    }

    fn read(&self, seal: Seal, _: &Region) -> Vec<u8> {
        self.whole(seal)
    }

    fn shared(&self, _: Seal, id: u64) {
        self.0.forget.shared(id);
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("an iterated array's indices are not written".into())
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        key_bytes(self.0.raw_keys(), 0)
    }
}

impl<T: Send + Sync + 'static, const N: usize> WireArray for SparseArray<T, N> {
    fn meta(&self, _: bool) -> Option<ArrayMeta> {
        meta_of::<T>(
            self.wire_key(),
            &self.shape(),
            Some(self.nnz() as u64),
            false,
        )
    }

    /// Entries in parts on the ranks, or values an `iter_mut()` call left there, come home
    /// before the call locks the session to send the array whole.
    fn bring_home(&self) {
        self.gather();
    }

    fn is_away(&self) -> bool {
        self.values_away()
    }

    fn read(&self, seal: Seal, _: &Region) -> Vec<u8> {
        self.whole(seal)
    }

    fn shared(&self, _: Seal, id: u64) {
        self.forget.shared(id);
    }

    fn write(&self, _: Seal, _: &Region, _: &[u8]) -> Result<(), String> {
        Err("a read-only array is not written".into())
    }

    fn whole(&self, _: Seal) -> Vec<u8> {
        let mut out = key_bytes(self.raw_keys(), std::mem::size_of::<T>());
        put(self.values(), &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::le::get;
    use crate::cluster::store::Store;

    #[test]
    fn regions_of_a_lent_array_cross_as_little_endian_bytes() {
        let mut a = DistArray::<f32, 2>::from_fn([3, 2], |[i, j]| (i * 2 + j) as f32);
        let mut b = DistArray::<f32, 2>::zeros([3, 2]);
        {
            let sa = SharedMut::new(&mut a);
            let sb = SharedMut::new(&mut b);
            let r = Region(vec![(1, 2), (4, 6)]);
            let bytes = sa.read(SEAL, &r);
            assert_eq!(bytes.len(), 12);
            assert_eq!(&bytes[..4], &1.0f32.to_le_bytes());
            sb.write(SEAL, &r, &bytes).unwrap();
            assert!(sb.write(SEAL, &r, &bytes[1..]).is_err());
            assert!(sb.write(SEAL, &Region(vec![(5, 9)]), &[0; 16]).is_err());
        }
        assert_eq!(b.as_slice(), &[0.0, 1.0, 0.0, 0.0, 4.0, 5.0]);
    }

    #[test]
    fn elements_cross_as_their_little_endian_bytes() {
        let f = [1.5f32, -0.0, f32::MAX];
        let i = [-2i16, 7, i16::MIN];
        let u = [0usize, 1 << 40, usize::MAX];
        let mut out = Vec::new();
        put(&f, &mut out);
        put(&i, &mut out);
        put(&u, &mut out);
        let mut want = Vec::new();
        f.iter()
            .for_each(|x| want.extend_from_slice(&x.to_le_bytes()));
        i.iter()
            .for_each(|x| want.extend_from_slice(&x.to_le_bytes()));
        u.iter()
            .for_each(|&x| want.extend_from_slice(&(x as u64).to_le_bytes()));
        assert_eq!(out, want);
        let (mut f2, mut i2, mut u2) = ([0f32; 3], [0i16; 3], [0usize; 3]);
        assert!(get(&out[..12], &mut f2));
        assert!(get(&out[12..18], &mut i2));
        assert!(get(&out[18..], &mut u2));
        assert_eq!((f2, i2, u2), (f, i, u));
        // Too few bytes: nothing read.
        assert!(!get(&out[..11], &mut f2));
    }

    #[test]
    fn whole_arrays_fill_a_workers_store() {
        let d = DistArray::<u32, 1>::from_fn([4], |[i]| i as u32 * 7);
        let s = SparseArray::from_entries([3, 3], vec![([0, 2], 1.5f64), ([2, 1], -2.0)]).unwrap();
        let (dm, sm) = (d.meta(false).unwrap(), s.meta(false).unwrap());
        let mut store = Store::default();
        store.fill_dense::<u32, 1>(&dm, &d.whole(SEAL)).unwrap();
        store.fill_sparse::<f64, 2>(&sm, &s.whole(SEAL)).unwrap();
        assert!(store.holds(dm.id, dm.version));
        let d2 = store.take_dense::<u32, 1>(&dm).unwrap();
        assert_eq!(d2.as_slice(), d.as_slice());
        let s2 = store.take_sparse::<f64, 2>(&sm).unwrap();
        assert_eq!(s2.iter().collect::<Vec<_>>(), s.iter().collect::<Vec<_>>());
        // Truncated or out-of-shape bytes are errors.
        assert!(
            store
                .fill_dense::<u32, 1>(&dm, &d.whole(SEAL)[1..])
                .is_err()
        );
        let mut bad = s.whole(SEAL);
        bad[0] = 9;
        assert!(store.fill_sparse::<f64, 2>(&sm, &bad).is_err());
        assert_eq!(elem_of::<String>(), None);
    }
}
