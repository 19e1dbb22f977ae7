//! Arrays created in place (docs/design.md, "arrays in parts"): on the driver of a
//! cluster job, [`DistArray::zeros`](super::DistArray::zeros),
//! [`DistArray::full`](super::DistArray::full) and
//! [`DistArray::random`](super::DistArray::random) make no element. They keep the
//! [`Recipe`] that makes any part of the array, and every rank makes the parts a call
//! gives it, where it runs them; the driver makes a part only when serial code reads it.
//! Every layout gets the same bits: a random array draws each row from its own stream
//! (`IterRng::new(seed, [row])`), which threads use too.

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use super::rng::IterRng;

/// How an array created in place makes its elements: any process can make any part of
/// it, alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Recipe {
    /// Every element is zero.
    Zeros,
    /// [`DistArray::random`](super::DistArray::random)`(shape, seed)`: row `r` draws its
    /// values in order from `IterRng::new(seed, [r])`.
    Random { seed: u64 },
    /// [`DistArray::full`](super::DistArray::full)`(shape, value)`: every element is the
    /// value whose little-endian bytes start `bytes` (a number of at most 8 bytes).
    Full { bytes: [u8; 8] },
}

/// Whether arrays made now are created in place: set on a cluster job's driver when the
/// job starts (`#[strads::main]` starts it before the program's first line).
static IN_PLACE: AtomicBool = AtomicBool::new(false);

/// Arrays made from now on are created in place (or, `false`, whole here).
pub(crate) fn set_in_place(on: bool) {
    IN_PLACE.store(on, Ordering::Relaxed);
}

/// Whether arrays made now are created in place.
pub(crate) fn in_place() -> bool {
    IN_PLACE.load(Ordering::Relaxed)
}

/// How a cluster job's driver makes an array in parts from values made here
/// (`array::inparts`): the cluster runtime's, linked in ([`PARTS`]). A failure to send or
/// keep a part stops the job (the ranks would disagree on the array).
pub(crate) trait Parts: Sync {
    /// The job's ranks, when arrays made now by this process are made in parts (on a
    /// job's driver, outside any loop's task and any call); asking starts the job, when
    /// this process is one's, as any first call into strads does.
    fn ranks(&self) -> Option<usize>;
    /// Sends rank `to` elements `at..` of dense array `id` (elements of type `elem`,
    /// `shape`) as little-endian `bytes`; the rank's elements end at `end`.
    #[allow(clippy::too_many_arguments)]
    fn send_rows(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        to: usize,
        at: usize,
        end: usize,
        bytes: Vec<u8>,
    );
    /// The driver's dense array `id` of `shape` (a boxed `DistArray`, its own elements
    /// made), with rank `r`'s elements `starts[r]..starts[r + 1]` away on it; boxed again.
    fn dense(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        array: Box<dyn Any>,
        starts: &[usize],
    ) -> Box<dyn Any>;
    /// Sends rank `to` entries of sparse array `id`: their indices, then their values, as
    /// little-endian `bytes`; with `list`, values that are `Vec`s of `elem` (their count
    /// first, then the indices, then the lists as `array::lists` writes them).
    fn send_entries(
        &self,
        id: u64,
        elem: TypeId,
        list: bool,
        shape: &[usize],
        to: usize,
        bytes: Vec<u8>,
    );
    /// Every rank keeps the entries it received as its part of sparse array `id` (the
    /// driver `own`, a boxed `(Vec<[u32; N]>, Vec<T>)`, `T` a `Vec` of `elem` with
    /// `list`): the spread array, boxed.
    fn sparse(
        &self,
        id: u64,
        elem: TypeId,
        list: bool,
        shape: &[usize],
        own: Box<dyn Any>,
    ) -> Box<dyn Any>;
    /// Every rank lets go of what it received of array `id` (the caller's code panicked).
    fn abandon(&self, id: u64);
    /// A resumed run's dense array `id` (`array`, a `&mut DistArray` of elements `elem`
    /// and `shape`) given a checkpoint's contents where they were written: each rank of
    /// `pieces` reads its files into its copy, and the driver's array reads the files of
    /// `home` and lists the pieces away, as after the call that left them there. An error when a rank cannot read its pieces: the array and the
    /// ranks' copies then disagree, and the caller stops the job.
    #[allow(clippy::too_many_arguments)]
    fn restore(
        &self,
        id: u64,
        elem: TypeId,
        shape: &[usize],
        array: &mut dyn Any,
        home: &[Piece],
        pieces: &[Piece],
    ) -> Result<(), String>;
}

/// A piece of a dense array that a rank of a cluster job wrote for a checkpoint: read back
/// by that rank when the job resumes ([`Parts::restore`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Piece {
    /// The rank.
    pub rank: usize,
    /// The elements, as index ranges in the file's order.
    pub region: Vec<(u64, u64)>,
    /// The file: the elements' little-endian bytes, then their checksum (`Sum`, 8 bytes
    /// little-endian) unless `checksum` gives it.
    pub path: String,
    /// The bytes of the elements.
    pub len: u64,
    /// The checksum of the file's bytes when the manifest holds it (the driver's own
    /// files); `None`: the file ends with it (a rank's pieces).
    pub checksum: Option<u64>,
}

/// How arrays are made in parts: the cluster runtime's, linked in (one entry).
#[linkme::distributed_slice]
pub(crate) static PARTS: [&'static dyn Parts];

/// How arrays are made in parts (its `ranks` says whether they are, now).
pub(crate) fn parts() -> Option<&'static dyn Parts> {
    PARTS.first().copied()
}

impl Recipe {
    /// The recipe of an array whose every element is `value`: `None` unless `T` is a
    /// number of at most 8 bytes.
    pub(crate) fn full<T: 'static>(value: &T) -> Option<Recipe> {
        let size = super::le::wire_size::<T>().filter(|&n| n <= 8)?;
        let mut put = Vec::with_capacity(size);
        super::le::put(std::slice::from_ref(value), &mut put);
        let mut bytes = [0u8; 8];
        bytes[..size].copy_from_slice(&put);
        // All-zero bytes are zero (not -0.0): its pages need not be written.
        Some(if bytes == [0; 8] {
            Recipe::Zeros
        } else {
            Recipe::Full { bytes }
        })
    }

    /// The checksum of elements `lo..hi` of an array of `shape` as this recipe makes them
    /// (`le::digest` of their bytes), made 64 Ki elements at a time into a buffer of their
    /// own; `None` when it cannot make elements of `T`.
    pub(crate) fn digest<T: 'static>(
        &self,
        shape: &[usize],
        lo: u64,
        hi: u64,
    ) -> Option<crate::checkpoint::Poly> {
        const CHUNK: usize = 1 << 16;
        let (lo, hi) = (lo as usize, hi as usize);
        let mut buf = super::pages::zeroed::<T>(CHUNK.min(hi.saturating_sub(lo)))?;
        let mut sum = crate::checkpoint::Poly::new();
        let mut at = lo;
        while at < hi {
            let out = &mut buf[..CHUNK.min(hi - at)];
            self.make(shape, at, out).ok()?;
            sum = sum.then(super::le::digest(out));
            at += out.len();
        }
        Some(sum)
    }

    /// The little-endian bytes of the elements of `ranges` of an array of `shape`, one
    /// range after another, made here without an array (a read by value's copy of parts
    /// no rank has made yet); `None` when this recipe cannot make elements of `T`.
    pub(crate) fn copy<T: 'static>(
        &self,
        shape: &[usize],
        ranges: &[(u64, u64)],
    ) -> Option<Vec<u8>> {
        let size = super::le::wire_size::<T>()?;
        let mut bytes = Vec::new();
        for &(lo, hi) in ranges {
            let n = usize::try_from(hi.checked_sub(lo)?).ok()?;
            let mut values = super::le::get_vec::<T>(&vec![0; n.checked_mul(size)?])?;
            self.make(shape, usize::try_from(lo).ok()?, &mut values)
                .ok()?;
            super::le::put(&values, &mut bytes);
        }
        Some(bytes)
    }

    /// Makes elements `lo..lo + out.len()` of an array of `shape` into `out`; an error
    /// when this recipe cannot make elements of `T` (random values are `f32` or `f64`;
    /// zeros any number type).
    pub(crate) fn make<T: 'static>(
        &self,
        shape: &[usize],
        lo: usize,
        out: &mut [T],
    ) -> Result<(), String> {
        use super::le::as_slice_mut;
        let cannot = |what: &str| {
            Err(format!(
                "{what} of {} cannot be made in place",
                std::any::type_name::<T>()
            ))
        };
        match *self {
            Recipe::Zeros => {
                if !super::pages::zero_is_default::<T>() {
                    return cannot("zeros");
                }
                // SAFETY: `T` is a primitive number type (checked), for which all-zero
                // bytes are zero; `out` is valid for writes of its own length.
                unsafe { std::ptr::write_bytes(out.as_mut_ptr(), 0, out.len()) };
                Ok(())
            }
            Recipe::Random { seed } => {
                fn fill<V: super::RandomValue>(
                    seed: u64,
                    shape: &[usize],
                    lo: usize,
                    out: &mut [V],
                ) {
                    for (x, v) in out.iter_mut().zip(random_values(seed, shape, lo)) {
                        *x = v;
                    }
                }
                if let Some(out) = as_slice_mut::<T, f32>(out) {
                    fill(seed, shape, lo, out);
                } else if let Some(out) = as_slice_mut::<T, f64>(out) {
                    fill(seed, shape, lo, out);
                } else {
                    return cannot("random values");
                }
                Ok(())
            }
            Recipe::Full { bytes } => {
                let Some(size) = super::le::wire_size::<T>().filter(|&n| n <= 8) else {
                    return cannot("a fill value");
                };
                // The value's bytes repeated, decoded a chunk of elements at a time.
                const CHUNK: usize = 1024;
                let pattern: Vec<u8> = bytes[..size]
                    .iter()
                    .copied()
                    .cycle()
                    .take(size * CHUNK)
                    .collect();
                for chunk in out.chunks_mut(CHUNK) {
                    if !super::le::get(&pattern[..chunk.len() * size], chunk) {
                        return cannot("a fill value");
                    }
                }
                Ok(())
            }
        }
    }
}

/// The values of `DistArray::random(shape, seed)` from element `lo` on, in row-major
/// order: row `r` draws its values in order from `IterRng::new(seed, [r])` (a row is
/// every element with the same first index; an element of a 1-D array).
pub(crate) fn random_values<T: super::RandomValue>(
    seed: u64,
    shape: &[usize],
    lo: usize,
) -> impl Iterator<Item = T> {
    let n = shape.iter().skip(1).product::<usize>().max(1);
    let first = lo / n;
    (first..).flat_map(move |row| {
        let mut rng = IterRng::new(seed, &[row as u64]);
        let skip = if row == first { lo - row * n } else { 0 };
        (0..n).map(move |_| T::draw(rng.xoshiro())).skip(skip)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::DistArray;

    #[test]
    fn any_part_is_made_as_the_whole_array_has_it() {
        let a = DistArray::<f32, 2>::random([7, 5], 11);
        for (lo, hi) in [(0, 35), (3, 4), (4, 13), (10, 10), (34, 35), (1, 34)] {
            let mut part = vec![0f32; hi - lo];
            Recipe::Random { seed: 11 }
                .make(&[7, 5], lo, &mut part)
                .unwrap();
            assert_eq!(part, a.as_slice()[lo..hi], "{lo}..{hi}");
        }
        // A copy of ranges, made apart from any array: the same bits.
        let bytes = Recipe::Random { seed: 11 }
            .copy::<f32>(&[7, 5], &[(3, 4), (10, 20)])
            .unwrap();
        let mut want = Vec::new();
        crate::array::le::put(&a.as_slice()[3..4], &mut want);
        crate::array::le::put(&a.as_slice()[10..20], &mut want);
        assert_eq!(bytes, want);
        assert_eq!(
            Recipe::Random { seed: 11 }.copy::<u8>(&[7, 5], &[(0, 1)]),
            None
        );
        let b = DistArray::<f64, 1>::random([9], 3);
        let mut part = vec![0f64; 4];
        Recipe::Random { seed: 3 }.make(&[9], 5, &mut part).unwrap();
        assert_eq!(part, b.as_slice()[5..]);
        let mut z = vec![7i32; 3];
        Recipe::Zeros.make(&[3], 0, &mut z).unwrap();
        assert_eq!(z, [0, 0, 0]);
        let e = Recipe::Random { seed: 1 }
            .make(&[3], 0, &mut z)
            .unwrap_err();
        assert_eq!(e, "random values of i32 cannot be made in place");
        let mut s = vec![String::new()];
        assert!(Recipe::Zeros.make(&[1], 0, &mut s).is_err());
        // A fill value, of every width, and none for a type that is not a number.
        let full = Recipe::full(&-2.5f32).unwrap();
        let mut part = vec![0f32; 2493];
        full.make(&[50, 50], 7, &mut part).unwrap();
        assert!(part.iter().all(|&x| x == -2.5));
        let mut part = vec![0u8; 3];
        Recipe::full(&7u8)
            .unwrap()
            .make(&[3], 0, &mut part)
            .unwrap();
        assert_eq!(part, [7, 7, 7]);
        let mut part = vec![0i64; 3];
        let v = i64::MIN + 5;
        Recipe::full(&v).unwrap().make(&[9], 2, &mut part).unwrap();
        assert_eq!(part, [v; 3]);
        assert_eq!(Recipe::full(&String::new()), None);
        assert_eq!(Recipe::full(&0.0f64), Some(Recipe::Zeros));
        assert!(matches!(Recipe::full(&-0.0f64), Some(Recipe::Full { .. })));
        assert_eq!(Recipe::full(&0u128), None);
    }

    #[test]
    fn a_recipes_checksum_is_that_of_the_elements_it_makes() {
        use crate::array::le::digest;
        // More than one 64 Ki chunk, and ranges that start and end inside one.
        let a = DistArray::<f32, 2>::random([700, 300], 5);
        let random = Recipe::Random { seed: 5 };
        for (lo, hi) in [(0, 210_000), (65_535, 131_073), (7, 8), (9, 9)] {
            assert_eq!(
                random.digest::<f32>(&[700, 300], lo, hi),
                Some(digest(&a.as_slice()[lo as usize..hi as usize])),
                "{lo}..{hi}"
            );
        }
        let zeros = vec![0u16; 70_000];
        assert_eq!(
            Recipe::Zeros.digest::<u16>(&[70_000], 0, 70_000),
            Some(digest(&zeros))
        );
        assert_eq!(random.digest::<i32>(&[9], 0, 9), None, "no random i32");
    }
}
