//! The values of an `iter_mut()` loop that cross processes as raw little-endian bytes:
//! primitive numbers, and `Vec`s of them (a topic list, a weight vector). Encoding them is
//! a copy, and nothing they encode to can decode as another value, so unlike serde's
//! encoding (`ProbeValuesSerde`) they need no round-trip check before a call.

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
            decode: le::take::<T>,
            exact: true,
        });
    }
    if crate::array::lists::element(std::any::TypeId::of::<T>()).is_some() {
        return Some(ValuesCodec {
            encode: |vals, out| {
                if crate::array::lists::put(vals, out) {
                    Ok(())
                } else {
                    Err("values of another type".into())
                }
            },
            decode: crate::array::lists::get::<T>,
            exact: true,
        });
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
            assert_eq!(
                crate::array::lists::length(&out),
                Some((n, &[42u8][..])),
                "{n}"
            );
        }
        let length = crate::array::lists::length;
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
