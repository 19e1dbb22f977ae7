//! [`DistArray`] and [`SparseArray`] with serde: an array is its shape and its elements
//! (a sparse array's indices, `N` per entry, then its values), so a saved model reads back
//! as the same array, whatever wrote it. Deserializing checks that the parts fit together
//! (the number of dims, the element count, every index inside the shape) and says what
//! does not, so a file from elsewhere is an error, never a wrong array.
//!
//! On a cluster job's driver, serializing an array whose parts are on other ranks brings
//! it home first, as any whole-array access does.

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{DistArray, SparseArray};

impl<T: Serialize, const N: usize> Serialize for DistArray<T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("DistArray", 2)?;
        st.serialize_field("shape", &self.shape()[..])?;
        st.serialize_field("data", self.as_slice())?;
        st.end()
    }
}

/// A dense array as it is stored: shape, then the row-major elements.
#[derive(Deserialize)]
#[serde(rename = "DistArray")]
struct DenseRaw<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

/// `shape` as `N` dims, or an error saying how many it has.
fn dims<const N: usize>(shape: &[usize], what: &str) -> Result<[usize; N], String> {
    shape.try_into().map_err(|_| {
        format!(
            "a {what} of {} dims (shape {shape:?}) where {N} are expected",
            shape.len()
        )
    })
}

/// A dense array from its stored parts, or what does not fit.
pub(crate) fn dense_from_raw<T, const N: usize>(
    shape: &[usize],
    data: Vec<T>,
) -> Result<DistArray<T, N>, String> {
    let shape = dims::<N>(shape, "dense array")?;
    if shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .is_none()
    {
        return Err(format!(
            "a dense array of shape {shape:?} has too many elements"
        ));
    }
    DistArray::from_vec(shape, data).map_err(|e| e.to_string())
}

/// A sparse array from its stored parts (`N` indices an entry), or what does not fit.
pub(crate) fn sparse_from_raw<T: 'static, const N: usize>(
    shape: &[usize],
    keys: &[u32],
    values: Vec<T>,
) -> Result<SparseArray<T, N>, String> {
    let shape = dims::<N>(shape, "sparse array")?;
    if keys.len() != values.len() * N {
        return Err(format!(
            "{} indices for {} entries of {N} dims",
            keys.len(),
            values.len()
        ));
    }
    let entries = keys
        .chunks_exact(N.max(1))
        .zip(values)
        .map(|(k, v)| {
            let mut idx = [0usize; N];
            for (i, &x) in idx.iter_mut().zip(k) {
                *i = x as usize;
            }
            (idx, v)
        })
        .collect();
    SparseArray::from_entries(shape, entries).map_err(|e| e.to_string())
}

impl<'de, T: DeserializeOwned, const N: usize> Deserialize<'de> for DistArray<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = DenseRaw::<T>::deserialize(d)?;
        dense_from_raw(&raw.shape, raw.data).map_err(D::Error::custom)
    }
}

impl<T: Serialize + Clone + Send + Sync + 'static, const N: usize> Serialize for SparseArray<T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut keys = Vec::with_capacity(self.nnz() * N);
        let mut values = Vec::with_capacity(self.nnz());
        for (k, v) in self.iter() {
            keys.extend(k.iter().map(|&i| i as u32));
            values.push(v);
        }
        let mut st = s.serialize_struct("SparseArray", 3)?;
        st.serialize_field("shape", &self.shape()[..])?;
        st.serialize_field("keys", &keys)?;
        st.serialize_field("values", &values)?;
        st.end()
    }
}

/// A sparse array as it is stored: shape, every entry's indices (`N` each), the values.
#[derive(Deserialize)]
#[serde(rename = "SparseArray")]
struct SparseRaw<T> {
    shape: Vec<usize>,
    keys: Vec<u32>,
    values: Vec<T>,
}

impl<'de, T: DeserializeOwned + 'static, const N: usize> Deserialize<'de> for SparseArray<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = SparseRaw::<T>::deserialize(d)?;
        sparse_from_raw(&raw.shape, &raw.keys, raw.values).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_arrays_round_trip() {
        let a = DistArray::<f32, 2>::from_fn([3, 4], |[i, j]| (i * 10 + j) as f32 + 0.5);
        let bytes = postcard::to_allocvec(&a).unwrap();
        let b: DistArray<f32, 2> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(a, b);
        let s = SparseArray::from_entries([5, 7], vec![([4, 1], 2.5f64), ([0, 6], -1.0)]).unwrap();
        let bytes = postcard::to_allocvec(&s).unwrap();
        let t: SparseArray<f64, 2> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(t.shape(), [5, 7]);
        assert_eq!(t.iter().collect::<Vec<_>>(), s.iter().collect::<Vec<_>>());
        // Values of any serde type: an `iter_mut()` loop's topic lists.
        let z = SparseArray::from_entries([2, 2], vec![([1, 0], vec![3u16, 1])]).unwrap();
        let back: SparseArray<Vec<u16>, 2> =
            postcard::from_bytes(&postcard::to_allocvec(&z).unwrap()).unwrap();
        assert_eq!(back.entry(0), ([1, 0], &vec![3u16, 1]));
    }

    /// What does not fit is an error saying what, never a wrong array.
    #[test]
    fn arrays_that_do_not_fit_are_refused() {
        let a = DistArray::<f32, 2>::zeros([3, 4]);
        let bytes = postcard::to_allocvec(&a).unwrap();
        assert!(postcard::from_bytes::<DistArray<f32, 1>>(&bytes).is_err());
        assert!(postcard::from_bytes::<DistArray<f32, 2>>(&bytes[..bytes.len() - 1]).is_err());
        let e = dense_from_raw::<f32, 2>(&[2, 2], vec![1.0, 2.0, 3.0]).unwrap_err();
        assert_eq!(
            e,
            "shape mismatch: shape [2, 2] holds 4 elements but the data has 3"
        );
        let e = dense_from_raw::<f32, 2>(&[1 << 40, 1 << 40], vec![]).unwrap_err();
        assert_eq!(
            e,
            "a dense array of shape [1099511627776, 1099511627776] has too many elements"
        );
        let e = dense_from_raw::<f32, 2>(&[2, 3, 4], vec![]).unwrap_err();
        assert_eq!(
            e,
            "a dense array of 3 dims (shape [2, 3, 4]) where 2 are expected"
        );
        let e = sparse_from_raw::<f32, 2>(&[2, 2], &[0, 1, 2, 0], vec![1.0, 2.0]).unwrap_err();
        assert_eq!(
            e,
            "entry 1: index [2, 0] is outside the array's shape [2, 2]"
        );
        let e = sparse_from_raw::<f32, 2>(&[2, 2], &[0, 1, 1], vec![1.0, 2.0]).unwrap_err();
        assert_eq!(e, "3 indices for 2 entries of 2 dims");
    }
}
