//! Values that are `Vec`s of primitive numbers (a topic list per entry) as raw bytes: each
//! list its length in LEB128 (one byte below 128), then its elements little-endian
//! (`le`). How such values cross processes (`itermut::raw`), are made in parts
//! (`inparts::from_entries`) and come home (`spread::decode_values`).

use std::any::TypeId;

use super::le;

/// Runs `$body` with `$p` each primitive number type in turn.
macro_rules! each_number {
    ($p:ident, $body:block) => {
        each_number!(@ $p, $body, f32, f64, u8, u16, u32, u64, i8, i16, i32, i64, usize, isize)
    };
    (@ $p:ident, $body:block, $($t:ty),*) => {$({
        type $p = $t;
        $body
    })*};
}

/// The element type and its wire size, when `t` is the type of a `Vec` of primitive
/// numbers.
pub(crate) fn element(t: TypeId) -> Option<(TypeId, usize)> {
    each_number!(P, {
        if t == TypeId::of::<Vec<P>>() {
            return Some((TypeId::of::<P>(), le::wire_size::<P>()?));
        }
    });
    None
}

/// The bytes `value` takes as [`put`] writes it (`T` a `Vec` of numbers), 0 for another
/// type.
pub(crate) fn wire_len<T: 'static>(value: &T) -> usize {
    each_number!(P, {
        if let Some([v]) = le::as_slice::<T, Vec<P>>(std::slice::from_ref(value)) {
            let mut n = v.len() as u64;
            let mut len = 1;
            while n >= 0x80 {
                n >>= 7;
                len += 1;
            }
            return len + v.len() * le::wire_size::<P>().unwrap_or(8);
        }
    });
    0
}

/// Appends `n` in LEB128.
pub(crate) fn put_len(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends the lists `vals` (`T` a `Vec` of numbers); `false` when `T` is not one.
pub(crate) fn put<T: 'static>(vals: &[T], out: &mut Vec<u8>) -> bool {
    each_number!(P, {
        if let Some(v) = le::as_slice::<T, Vec<P>>(vals) {
            for list in v {
                put_len(list.len() as u64, out);
                le::put(list, out);
            }
            return true;
        }
    });
    false
}

/// Reads `dst.len()` lists from the front of `bytes` into `dst` (each `Vec` keeps its
/// allocation when it is large enough), moving `bytes` past them. A length beyond the
/// bytes left is an error before anything is allocated for it.
pub(crate) fn get<T: 'static>(bytes: &mut &[u8], dst: &mut [T]) -> Result<(), String> {
    each_number!(P, {
        if let Some(d) = le::as_slice_mut::<T, Vec<P>>(dst) {
            return get_lists(bytes, d);
        }
    });
    Err("values that are not lists of numbers".into())
}

fn get_lists<P: Copy + Default + 'static>(
    bytes: &mut &[u8],
    vals: &mut [Vec<P>],
) -> Result<(), String> {
    let size = le::wire_size::<P>().ok_or("elements without a wire type")?;
    for (k, v) in vals.iter_mut().enumerate() {
        let (need, rest) = list_bytes(bytes, size).map_err(|e| format!("value {k}: {e}"))?;
        v.clear();
        v.resize(need / size, P::default());
        if !le::get(&rest[..need], v) {
            return Err(format!("value {k}: elements cut short"));
        }
        *bytes = &rest[need..];
    }
    Ok(())
}

/// The bytes of the elements of the list at the front of `bytes` (`size` bytes each), and
/// the bytes after its length.
fn list_bytes(bytes: &[u8], size: usize) -> Result<(usize, &[u8]), String> {
    let (len, rest) = length(bytes).ok_or("a bad length")?;
    let need = usize::try_from(len)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .filter(|&n| n <= rest.len())
        .ok_or_else(|| {
            format!(
                "{len} elements of {size} bytes, more than the {} bytes left",
                rest.len()
            )
        })?;
    Ok((need, rest))
}

/// Where each of the lists (of `size`-byte elements) that `bytes` holds ends, from the
/// start of `bytes`; an error when the bytes do not hold whole lists.
pub(crate) fn ends(bytes: &[u8], size: usize) -> Result<Vec<usize>, String> {
    let mut ends = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (need, after) =
            list_bytes(rest, size).map_err(|e| format!("value {}: {e}", ends.len()))?;
        rest = &after[need..];
        ends.push(bytes.len() - rest.len());
    }
    Ok(ends)
}

/// A LEB128 length from the front of `bytes`, and the bytes after it; `None` when cut
/// short or over 64 bits.
pub(crate) fn length(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        let low = u64::from(b & 0x7f);
        if i == 9 && low > 1 {
            return None;
        }
        n |= low << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_end_where_their_elements_do() {
        let mut out = Vec::new();
        assert!(put(&[vec![3u16, 1], vec![], vec![7]], &mut out));
        assert_eq!(out, [2, 3, 0, 1, 0, 0, 1, 7, 0]);
        assert_eq!(ends(&out, 2), Ok(vec![5, 6, 9]));
        assert_eq!(
            ends(&out[..8], 2).unwrap_err(),
            "value 2: 1 elements of 2 bytes, more than the 1 bytes left"
        );
        assert_eq!(
            element(TypeId::of::<Vec<f64>>()),
            Some((TypeId::of::<f64>(), 8))
        );
        assert_eq!(element(TypeId::of::<Vec<String>>()), None);
        assert!(!put(&[1u16], &mut out));
        // What a list takes on the wire, to bound a piece's bytes.
        for v in [vec![1u16, 2], vec![], vec![7; 200]] {
            let mut one = Vec::new();
            assert!(put(std::slice::from_ref(&v), &mut one));
            assert_eq!(wire_len(&v), one.len());
        }
        assert_eq!(wire_len(&vec![0u64; 200]), 2 + 1600);
        assert_eq!(wire_len(&3u16), 0);
    }
}
