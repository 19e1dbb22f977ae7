//! How a process's copies of a buffered array cross to the other processes at a merge:
//! per chunk of elements (a row, or [`FLAT_CHUNK`] elements of a 1-D array) one bit says
//! whether the copy differs, bit for bit, from the value at the last merge, and only the
//! chunks that differ follow, little-endian. Every rank holds the same value at the last
//! merge (the merges are the same everywhere), so a receiver rebuilds the copy exactly;
//! rows no worker touched since the last merge do not travel.

use crate::array::le;

/// Elements per chunk of a 1-D array.
pub(super) const FLAT_CHUNK: usize = 256;

/// Appends `copy` encoded against the last merge's value, given as its little-endian
/// bytes `base` ([`le::put`] once per merge, for every copy), in chunks of `chunk`
/// elements.
pub(super) fn encode<T: 'static>(copy: &[T], base: &[u8], chunk: usize, out: &mut Vec<u8>) {
    if copy.is_empty() {
        return;
    }
    let chunk = chunk.max(1);
    let chunks = copy.len().div_ceil(chunk);
    let size = base.len() / copy.len();
    let bitmap = out.len();
    out.resize(bitmap + chunks.div_ceil(8), 0);
    let mut a = Vec::new();
    for (k, (c, v)) in copy
        .chunks(chunk)
        .zip(base.chunks(chunk * size))
        .enumerate()
    {
        a.clear();
        le::put(c, &mut a);
        if a != v {
            out[bitmap + k / 8] |= 1 << (k % 8);
            out.extend_from_slice(&a);
        }
    }
}

/// Rebuilds into `copy` a copy [`encode`]d against `base` (the same value on every rank)
/// from the start of `bytes`, elements of `size` bytes on the wire; returns the bytes it
/// read, or what does not fit.
pub(super) fn decode<T: Copy + 'static>(
    bytes: &[u8],
    base: &[T],
    chunk: usize,
    size: usize,
    copy: &mut [T],
) -> Result<usize, String> {
    let chunk = chunk.max(1);
    let chunks = copy.len().div_ceil(chunk);
    let Some(bitmap) = bytes.get(..chunks.div_ceil(8)) else {
        return Err(format!(
            "{} bytes, fewer than the {} of its map of changed chunks",
            bytes.len(),
            chunks.div_ceil(8)
        ));
    };
    let mut at = bitmap.len();
    for (k, (c, v)) in copy.chunks_mut(chunk).zip(base.chunks(chunk)).enumerate() {
        if bitmap[k / 8] & (1 << (k % 8)) == 0 {
            c.copy_from_slice(v);
            continue;
        }
        let n = c.len() * size;
        match bytes.get(at..at + n) {
            Some(b) if le::get(b, c) => at += n,
            _ => {
                return Err(format!(
                    "{} bytes, too few for chunk {k} of {chunks} ({n} bytes at {at})",
                    bytes.len()
                ));
            }
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_chunks_travel_and_the_copy_comes_back_exactly() {
        let base: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        let mut copy = base.clone();
        copy[3] = -0.0; // 0.0 in the base: a change bit for bit
        copy[700] += 1.0;
        copy[999] = f32::NAN;
        let mut base_bytes = Vec::new();
        le::put(&base, &mut base_bytes);
        let mut out = vec![7u8]; // whatever came before
        encode(&copy, &base_bytes, 100, &mut out);
        // 10 chunks: a 2-byte map and 3 changed chunks of 100 f32.
        assert_eq!(out.len(), 1 + 2 + 3 * 400);
        let mut back = vec![0.0f32; 1000];
        assert_eq!(
            decode(&out[1..], &base, 100, 4, &mut back),
            Ok(out.len() - 1)
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&copy));
        // An unchanged copy is its map alone; a short message is an error, not a panic.
        let mut same = Vec::new();
        encode(&base, &base_bytes, 100, &mut same);
        assert_eq!(same, [0, 0]);
        assert!(decode(&out[1..out.len() - 1], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[], &base, 100, 4, &mut back).is_err());
        assert!(decode(&[0xff, 0xff], &base, 100, 4, &mut back).is_err());
        // An empty array: nothing crosses.
        let mut none = Vec::new();
        encode::<f32>(&[], &[], 100, &mut none);
        assert!(none.is_empty());
        assert_eq!(decode::<f32>(&[], &[], 100, 4, &mut []), Ok(0));
    }
}
