//! The values of an `iter_mut()` loop that cross processes as raw little-endian bytes:
//! primitive numbers, and `Vec`s of them (a topic list, a weight vector). Encoding them is
//! a copy, and nothing they encode to can decode as another value, so unlike serde's
//! encoding (`ProbeValuesSerde`) they need no round-trip check before a call.

use std::any::TypeId;

use super::ValuesCodec;
use crate::array::le;

/// The raw codec of `T` when it is a primitive number or a `Vec` of them.
pub(super) fn codec<T: 'static>() -> Option<ValuesCodec<T>> {
    if le::wire_size::<T>().is_some() {
        return Some(ValuesCodec {
            encode: |vals, out| {
                le::put(vals, out);
                Ok(())
            },
            decode: numbers::<T>,
            exact: true,
        });
    }
    macro_rules! vec_of {
        ($($p:ty),*) => {$(
            if TypeId::of::<T>() == TypeId::of::<Vec<$p>>() {
                return Some(ValuesCodec {
                    encode: encode_vecs::<T, $p>,
                    decode: decode_vecs::<T, $p>,
                    exact: true,
                });
            }
        )*};
    }
    vec_of!(f32, f64, u8, u16, u32, u64, i8, i16, i32, i64, usize, isize);
    None
}

/// Numbers: `vals.len()` of them from the front of `bytes`.
fn numbers<T: 'static>(bytes: &mut &[u8], vals: &mut [T]) -> Result<(), String> {
    let size = le::wire_size::<T>().ok_or("values without a wire type")?;
    let n = vals.len() * size;
    if bytes.len() < n || !le::get(&bytes[..n], vals) {
        return Err(format!(
            "{} values of {size} bytes in {} bytes",
            vals.len(),
            bytes.len()
        ));
    }
    *bytes = &bytes[n..];
    Ok(())
}

/// `Vec<P>` values (`T` is `Vec<P>`): each its length (LEB128: one byte below 128), then
/// its elements.
fn encode_vecs<T: 'static, P: 'static>(vals: &[T], out: &mut Vec<u8>) -> Result<(), String> {
    let vals = le::as_slice::<T, Vec<P>>(vals).ok_or("values of another type")?;
    for v in vals {
        let mut n = v.len() as u64;
        while n >= 0x80 {
            out.push(n as u8 | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        le::put(v, out);
    }
    Ok(())
}

/// [`encode_vecs`]'s values back into `vals` (each `Vec` keeps its allocation when it is
/// large enough). A length beyond the bytes left is an error before anything is allocated
/// for it.
fn decode_vecs<T: 'static, P: Copy + Default + 'static>(
    bytes: &mut &[u8],
    vals: &mut [T],
) -> Result<(), String> {
    let vals = le::as_slice_mut::<T, Vec<P>>(vals).ok_or("values of another type")?;
    let size = le::wire_size::<P>().ok_or("elements without a wire type")?;
    for (k, v) in vals.iter_mut().enumerate() {
        let (len, rest) = length(bytes).ok_or_else(|| format!("value {k}: a bad length"))?;
        let need = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_mul(size))
            .filter(|&n| n <= rest.len())
            .ok_or_else(|| {
                format!(
                    "value {k}: {len} elements of {size} bytes, more than the {} bytes left",
                    rest.len()
                )
            })?;
        v.clear();
        v.resize(need / size, P::default());
        if !le::get(&rest[..need], v) {
            return Err(format!("value {k}: elements cut short"));
        }
        *bytes = &rest[need..];
    }
    Ok(())
}

/// A LEB128 length from the front of `bytes`, and the bytes after it; `None` when cut
/// short or over 64 bits.
fn length(bytes: &[u8]) -> Option<(u64, &[u8])> {
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

    fn round_trip<T: 'static + Clone + Default + std::fmt::Debug>(vals: Vec<T>) {
        let c = codec::<T>().expect("a raw codec");
        let mut out = Vec::new();
        (c.encode)(&vals, &mut out).unwrap();
        let mut back = vec![T::default(); vals.len()];
        let mut rest = &out[..];
        (c.decode)(&mut rest, &mut back).unwrap();
        assert!(rest.is_empty());
        // The same values, bit for bit (NaNs and signed zeros included): the same bytes.
        let mut again = Vec::new();
        (c.encode)(&back, &mut again).unwrap();
        assert_eq!(again, out);
        assert_eq!(format!("{back:?}"), format!("{vals:?}"));
        // Every cut is an error, never a panic.
        for cut in 0..out.len() {
            let mut rest = &out[..cut];
            let mut back = vec![T::default(); vals.len()];
            assert!((c.decode)(&mut rest, &mut back).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn numbers_and_vectors_of_numbers_round_trip_and_cuts_are_errors() {
        round_trip(vec![1u16, 7, u16::MAX]);
        round_trip(vec![-0.0f32, f32::NAN.copysign(-1.0), 3.5]);
        round_trip(vec![usize::MAX, 0]);
        round_trip(vec![vec![3u16, 1, 4], vec![], vec![u16::MAX]]);
        round_trip(vec![vec![1.5f64], vec![f64::INFINITY, -2.0]]);
        assert!(codec::<String>().is_none());
        assert!(codec::<Vec<Vec<u16>>>().is_none());
        assert!(codec::<(u16, u16)>().is_none());
    }

    #[test]
    fn lengths_are_leb128() {
        for n in [0u64, 1, 127, 128, 300, 1 << 40, u64::MAX] {
            let mut out = Vec::new();
            let mut m = n;
            while m >= 0x80 {
                out.push(m as u8 | 0x80);
                m >>= 7;
            }
            out.push(m as u8);
            out.push(42);
            assert_eq!(length(&out), Some((n, &[42u8][..])), "{n}");
        }
        assert_eq!(length(&[0x80]), None);
        assert_eq!(length(&[0xff; 10]), None);
        assert_eq!(
            length(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
        // Topic lists of one or two small numbers: a byte of length each.
        let c = codec::<Vec<u16>>().unwrap();
        let mut out = Vec::new();
        (c.encode)(&[vec![3u16], vec![1, 2]], &mut out).unwrap();
        assert_eq!(out, [1, 3, 0, 2, 1, 0, 2, 0]);
    }

    #[test]
    fn a_length_beyond_the_bytes_is_refused_before_allocating() {
        let c = codec::<Vec<u64>>().unwrap();
        let mut bytes = vec![0xff; 9];
        bytes.push(0x01);
        bytes.extend_from_slice(&[0; 16]);
        let mut vals = vec![Vec::new()];
        let err = (c.decode)(&mut &bytes[..], &mut vals).unwrap_err();
        assert!(err.contains("more than the 16 bytes left"), "{err}");
    }
}
