//! [`Kept`]: what a checkpoint needs of an array a call names.

use super::manifest::checksum;
use crate::array::away::SavedAway;
use crate::array::le::{get, wire_size};
use crate::array::spread::Layout;
use crate::array::{DistArray, SparseArray};

/// An array a checkpoint can write and fast re-execution can restore: every
/// [`DistArray`] and [`SparseArray`] (generated code names them as `&dyn Kept` or
/// `&mut dyn Kept` after each call).
pub trait Kept {
    /// `(id, version)`: the array, and whether its contents changed.
    fn kept_key(&self) -> (u64, u64);
    /// Its type and shape, for the manifest and for errors.
    fn kept_kind(&self) -> String;
    /// Its contents as little-endian bytes (a sparse array's indices as `u32`, then its
    /// values) to `out`, a slice at a time from where they live (no copy of the array is
    /// made): their count; an error for elements a checkpoint cannot write.
    fn kept_write(&self, out: &mut dyn FnMut(&[u8])) -> Result<u64, String>;
    /// [`kept_write`](Kept::kept_write)'s bytes, together.
    fn kept_bytes(&self) -> Result<Vec<u8>, String> {
        let mut bytes = Vec::new();
        self.kept_write(&mut |b| bytes.extend_from_slice(b))?;
        Ok(bytes)
    }
    /// A checksum of [`kept_bytes`](Kept::kept_bytes) (of parts other ranks hold composed
    /// from theirs, taken there), `None` when it cannot be taken (elements a checkpoint
    /// cannot write, a dense array's parts made nowhere yet).
    fn kept_checksum(&self) -> Option<u64>;
    /// Sets the contents from `bytes` (what `kept_bytes` gave): an error when they do not
    /// fit (another length; for a sparse array, other indices).
    fn kept_restore(&mut self, bytes: &[u8]) -> Result<(), String>;
    /// Checkpoints track the array: its drop tells them.
    fn kept_track(&self);
    /// With parts on other ranks: they write them to `path_of(rank, piece)`, and the
    /// elements at home go to `out` as little-endian bytes, a slice at a time (no copy
    /// kept); their byte count and index ranges come back. `None` when nothing is away (or
    /// it cannot be done so; nothing went to `out`): [`kept_bytes`](Kept::kept_bytes) then.
    #[allow(clippy::type_complexity)]
    fn kept_parts(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<(u64, Vec<(u64, u64)>, Vec<SavedAway>)> {
        let _ = (path_of, out);
        None
    }
    /// Sets the elements of index ranges `region` from `bytes` (their little-endian bytes,
    /// in order).
    fn kept_restore_region(&mut self, region: &[(u64, u64)], bytes: &[u8]) -> Result<(), String> {
        let _ = (region, bytes);
        Err(format!("{} is not saved in pieces", self.kept_kind()))
    }
    /// Whether [`kept_restore_in_parts`](Kept::kept_restore_in_parts) can restore the
    /// array with `pieces` left where they were written (else the caller reads them here).
    fn kept_in_parts(&self, pieces: &[crate::array::made::Piece]) -> bool {
        let _ = pieces;
        false
    }
    /// On a resumed cluster job's driver: sets the elements of each region of `home` from
    /// its bytes, while the ranks that wrote `pieces` read them back, where they stay.
    fn kept_restore_in_parts(
        &mut self,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String> {
        let _ = (home, pieces);
        Err(format!("{} is not restored in parts", self.kept_kind()))
    }
}

/// The little-endian bytes of `values` to `out`, a chunk at a time: `written` plus their
/// count.
fn write_all<T: 'static>(values: &[T], written: u64, out: &mut dyn FnMut(&[u8])) -> u64 {
    let mut n = written;
    let _ = crate::array::le::each_bytes(values, |b| {
        n += b.len() as u64;
        out(b);
        Ok::<(), ()>(())
    });
    n
}

fn unsupported<T>() -> String {
    format!(
        "its elements, of type `{}`, are not numbers a checkpoint can write",
        std::any::type_name::<T>()
    )
}

impl<T: Send + Sync + 'static, const N: usize> Kept for DistArray<T, N> {
    fn kept_key(&self) -> (u64, u64) {
        self.contents_key()
    }

    fn kept_kind(&self) -> String {
        format!(
            "DistArray<{}, {N}> {:?}",
            std::any::type_name::<T>(),
            self.shape()
        )
    }

    fn kept_write(&self, out: &mut dyn FnMut(&[u8])) -> Result<u64, String> {
        // Parts other ranks hold are written by them (`kept_parts`); this brings home only
        // parts made nowhere yet.
        wire_size::<T>().ok_or_else(unsupported::<T>)?;
        Ok(write_all(self.as_slice(), 0, out))
    }

    fn kept_checksum(&self) -> Option<u64> {
        // Parts on other ranks are taken there: nothing comes home.
        self.checksum().map(|p| p.finish())
    }

    fn kept_restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        let size = wire_size::<T>().ok_or_else(unsupported::<T>)?;
        let len = self.len();
        if bytes.len() != len * size || !get(bytes, self.as_mut_slice()) {
            return Err(format!(
                "{} bytes do not hold the {len} elements of {}",
                bytes.len(),
                self.kept_kind()
            ));
        }
        Ok(())
    }

    fn kept_track(&self) {
        self.away().forget.tracked(self.id());
    }

    fn kept_parts(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<(u64, Vec<(u64, u64)>, Vec<SavedAway>)> {
        self.save_parts(path_of, out)
    }

    fn kept_in_parts(&self, pieces: &[crate::array::made::Piece]) -> bool {
        self.can_restore_in_parts(pieces)
    }

    fn kept_restore_in_parts(
        &mut self,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String> {
        self.restore_in_parts(home, pieces)
    }

    fn kept_restore_region(&mut self, region: &[(u64, u64)], bytes: &[u8]) -> Result<(), String> {
        let size = wire_size::<T>().ok_or_else(unsupported::<T>)?;
        let kind = self.kept_kind();
        let data = self.as_mut_slice();
        let want: u64 = region.iter().map(|&(lo, hi)| hi.saturating_sub(lo)).sum();
        if bytes.len() as u64 != want * size as u64
            || region
                .iter()
                .any(|&(lo, hi)| lo > hi || hi > data.len() as u64)
        {
            return Err(format!(
                "{} bytes do not hold the elements {region:?} of {kind}",
                bytes.len()
            ));
        }
        let mut at = 0;
        for &(lo, hi) in region {
            let n = (hi - lo) as usize * size;
            get(&bytes[at..at + n], &mut data[lo as usize..hi as usize]);
            at += n;
        }
        Ok(())
    }
}

impl<T: Send + Sync + 'static, const N: usize> SparseArray<T, N> {
    /// The indices' bytes, once `bytes` (a saved array) starts with them: a restore puts
    /// only the values back.
    fn saved_keys(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let keys = self.key_bytes();
        if bytes.len() < keys.len() || bytes[..keys.len()] != keys[..] {
            return Err(format!(
                "the saved entries' indices are not those of {}",
                self.kept_kind()
            ));
        }
        Ok(keys)
    }

    /// [`key_bytes`](Self::key_bytes) to `out`, a chunk at a time: their count.
    fn write_keys(&self, out: &mut dyn FnMut(&[u8])) -> u64 {
        let mut buf = Vec::new();
        let mut n = 0;
        for chunk in self.raw_keys().chunks(1 << 14) {
            buf.clear();
            for &i in chunk.iter().flatten() {
                buf.extend_from_slice(&i.to_le_bytes());
            }
            out(&buf);
            n += buf.len() as u64;
        }
        n
    }

    fn key_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw_keys().len() * N * 4);
        self.write_keys(&mut |b| out.extend_from_slice(b));
        out
    }
}

impl<T: Send + Sync + 'static, const N: usize> Kept for SparseArray<T, N> {
    fn kept_key(&self) -> (u64, u64) {
        self.wire_key()
    }

    fn kept_kind(&self) -> String {
        format!(
            "SparseArray<{}, {N}> {:?} with {} entries",
            std::any::type_name::<T>(),
            self.shape(),
            self.nnz()
        )
    }

    fn kept_write(&self, out: &mut dyn FnMut(&[u8])) -> Result<u64, String> {
        wire_size::<T>().ok_or_else(unsupported::<T>)?;
        // The values first: a spread array comes home before its indices are read.
        let values = self.values();
        let keys = self.write_keys(out);
        Ok(write_all(values, keys, out))
    }

    fn kept_checksum(&self) -> Option<u64> {
        // Composed of the parts' checksums when the entries are in parts on the ranks
        // (none comes home), the same number as of the entries here: the checksum of
        // `kept_bytes`, the indices then the values.
        wire_size::<T>()?;
        let [keys, values] = match self.spread() {
            Some(ops) if !ops.moved() => ops.digest(),
            Some(_) => return None,
            None => crate::array::spread::digest_entries(self.raw_keys(), self.values()),
        };
        Some(keys.then(values).finish())
    }

    fn kept_restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        let size = wire_size::<T>().ok_or_else(unsupported::<T>)?;
        let keys = self.saved_keys(bytes)?;
        let mut values = self.take_values();
        let rest = &bytes[keys.len()..];
        let fits = rest.len() == values.len() * size && get(rest, &mut values);
        self.restore_values(values);
        if !fits {
            return Err(format!(
                "{} bytes do not hold the values of {}",
                bytes.len() - keys.len(),
                self.kept_kind()
            ));
        }
        Ok(())
    }

    fn kept_track(&self) {
        self.forget.tracked(self.id());
    }

    /// Values that `iter_mut()` calls moved where they run: each rank writes those it holds,
    /// the driver its own to `out` (nothing comes home).
    fn kept_parts(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<(u64, Vec<(u64, u64)>, Vec<SavedAway>)> {
        let ops = self.spread().filter(|ops| ops.moved())?;
        Layout::of::<T>()?;
        let (count, len, away) = ops
            .save_values(path_of, out)
            .unwrap_or_else(|e| ops.fail(format!("checkpoint of {}: {e}", self.kept_kind())));
        Some((len, vec![(0, count)], away))
    }

    fn kept_in_parts(&self, pieces: &[crate::array::made::Piece]) -> bool {
        let _ = pieces;
        self.is_spread() && Layout::of::<T>().is_some()
    }

    fn kept_restore_in_parts(
        &mut self,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String> {
        let (Some(ops), Some(layout)) = (self.spread(), Layout::of::<T>()) else {
            return Err(format!("{} is not in parts here", self.kept_kind()));
        };
        let all: Vec<_> = home.iter().chain(pieces).cloned().collect();
        ops.restore_values(&all, layout)?;
        self.values_restored_in_parts();
        Ok(())
    }

    fn kept_restore_region(&mut self, _: &[(u64, u64)], _: &[u8]) -> Result<(), String> {
        Err(format!(
            "{}'s values were saved in pieces where they were, and are restored only in parts, \
             on a cluster job of the same ranks",
            self.kept_kind()
        ))
    }
}

/// An `iter_mut()` loop's array with the codec of its values (which may be other than
/// numbers: LDA's lists of topics): what generated code names the loop's space as.
pub struct Coded<'a, T, const N: usize>(
    pub &'a mut SparseArray<T, N>,
    pub Option<crate::itermut::ValuesCodec<T>>,
);

impl<T, const N: usize> std::fmt::Debug for Coded<'_, T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Coded").finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static, const N: usize> Kept for Coded<'_, T, N> {
    fn kept_key(&self) -> (u64, u64) {
        self.0.kept_key()
    }

    fn kept_kind(&self) -> String {
        self.0.kept_kind()
    }

    fn kept_write(&self, out: &mut dyn FnMut(&[u8])) -> Result<u64, String> {
        let codec = match &self.1 {
            _ if wire_size::<T>().is_some() => return self.0.kept_write(out),
            Some(codec) => codec,
            None => return Err(unsupported::<T>() + " or values that serialize"),
        };
        let values = self.0.values();
        let mut n = self.0.write_keys(out);
        // A raw codec's bytes of values one after another are each value's: a chunk at a
        // time. Another codec's go whole.
        let chunk = match Layout::of::<T>() {
            Some(_) => 1 << 14,
            None => values.len().max(1),
        };
        let mut buf = Vec::new();
        for vals in values.chunks(chunk) {
            buf.clear();
            (codec.encode)(vals, &mut buf)
                .map_err(|e| format!("its values do not encode ({e})"))?;
            out(&buf);
            n += buf.len() as u64;
        }
        Ok(n)
    }

    fn kept_checksum(&self) -> Option<u64> {
        if self.0.is_spread() {
            return None;
        }
        self.kept_bytes().ok().map(|b| checksum(&b))
    }

    fn kept_restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        let Some(codec) = self.1.as_ref().filter(|_| wire_size::<T>().is_none()) else {
            return self.0.kept_restore(bytes);
        };
        let keys = self.0.saved_keys(bytes)?;
        let mut values = self.0.take_values();
        let mut rest = &bytes[keys.len()..];
        let done = (codec.decode)(&mut rest, &mut values);
        self.0.restore_values(values);
        match done {
            Ok(()) if rest.is_empty() => Ok(()),
            Ok(()) => Err(format!("{} bytes are left over", rest.len())),
            Err(e) => Err(format!("the saved values do not decode ({e})")),
        }
    }

    fn kept_track(&self) {
        self.0.kept_track();
    }

    fn kept_parts(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<(u64, Vec<(u64, u64)>, Vec<SavedAway>)> {
        self.0.kept_parts(path_of, out)
    }

    fn kept_in_parts(&self, pieces: &[crate::array::made::Piece]) -> bool {
        self.0.kept_in_parts(pieces)
    }

    fn kept_restore_in_parts(
        &mut self,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String> {
        self.0.kept_restore_in_parts(home, pieces)
    }

    fn kept_restore_region(&mut self, region: &[(u64, u64)], bytes: &[u8]) -> Result<(), String> {
        self.0.kept_restore_region(region, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_and_refuse_what_does_not_fit() {
        let a = DistArray::<f32, 2>::from_fn([3, 2], |[i, j]| (i * 2 + j) as f32 - 2.5);
        let mut b = DistArray::<f32, 2>::zeros([3, 2]);
        b.kept_restore(&a.kept_bytes().unwrap()).unwrap();
        assert_eq!(a, b);
        // Pieces: elements 1..3 and 4..6 from their bytes.
        let mut c = DistArray::<f32, 2>::zeros([3, 2]);
        let bytes = a.kept_bytes().unwrap();
        c.kept_restore_region(&[(1, 3), (4, 6)], &[&bytes[4..12], &bytes[16..24]].concat())
            .unwrap();
        assert_eq!(c.as_slice(), &[0.0, -1.5, -0.5, 0.0, 1.5, 2.5]);
        assert!(c.kept_restore_region(&[(5, 7)], &[0; 8]).is_err());
        assert!(c.kept_restore_region(&[(0, 1)], &[0; 5]).is_err());
        assert_eq!(a.kept_checksum(), b.kept_checksum());
        assert!(b.kept_restore(&[0u8; 5]).is_err());
        let s = SparseArray::<f64, 2>::from_entries([4, 4], vec![([1, 2], 0.5), ([3, 0], -1.0)])
            .unwrap();
        let mut t = SparseArray::<f64, 2>::from_entries([4, 4], vec![([1, 2], 0.0), ([3, 0], 0.0)])
            .unwrap();
        // A sparse array's checksum is its `kept_bytes`' (indices, then values), composed.
        let whole = |b: &[u8]| {
            let mut p = crate::checkpoint::Poly::new();
            p.update(b);
            p.finish()
        };
        assert_eq!(s.kept_checksum(), Some(whole(&s.kept_bytes().unwrap())));
        assert_ne!(s.kept_checksum(), t.kept_checksum());
        let (_, v0) = t.kept_key();
        t.kept_restore(&s.kept_bytes().unwrap()).unwrap();
        assert_eq!(t.kept_checksum(), s.kept_checksum());
        assert_eq!(t.values(), s.values());
        assert_ne!(t.kept_key().1, v0, "a restore changes the version");
        let mut u = SparseArray::<f64, 2>::from_entries([4, 4], vec![([1, 1], 0.0), ([3, 0], 0.0)])
            .unwrap();
        let e = u.kept_restore(&s.kept_bytes().unwrap()).unwrap_err();
        assert!(e.contains("indices"), "{e}");
        let odd = DistArray::<(u8, u8), 1>::from_fn([2], |_| (1, 2));
        assert!(odd.kept_bytes().unwrap_err().contains("not numbers"));
        // Values that are lists, through their codec.
        use crate::itermut::{ProbeValuesSerde as _, ValuesProbe};
        let entries = vec![([0, 1], vec![1u16, 2]), ([2, 0], vec![3])];
        let mut lists = SparseArray::<Vec<u16>, 2>::from_entries([3, 3], entries).unwrap();
        let bytes = Coded(&mut lists, ValuesProbe::new().codec())
            .kept_bytes()
            .unwrap();
        let entries = vec![([0, 1], vec![0u16, 0]), ([2, 0], vec![0])];
        let mut other = SparseArray::<Vec<u16>, 2>::from_entries([3, 3], entries).unwrap();
        Coded(&mut other, ValuesProbe::new().codec())
            .kept_restore(&bytes)
            .unwrap();
        assert_eq!(other.values(), lists.values());
        let e = Coded(&mut other, None).kept_bytes().unwrap_err();
        assert!(e.contains("values that serialize"), "{e}");
    }
}
