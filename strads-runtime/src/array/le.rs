//! Numbers as raw little-endian bytes: how elements cross processes (the cluster's arrays,
//! and the workers' copies of a write-back buffer at an application point).

use std::any::TypeId;

/// Bytes per value of `T` on the wire, when `T` is a primitive number (`usize` and
/// `isize` travel as 8).
pub(crate) fn wire_size<T: 'static>() -> Option<usize> {
    let t = TypeId::of::<T>();
    macro_rules! size {
        ($($ty:ty => $via:ty),*) => {
            $(if t == TypeId::of::<$ty>() { return Some(std::mem::size_of::<$via>()); })*
        };
    }
    size!(f32 => f32, f64 => f64, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
          i8 => i8, i16 => i16, i32 => i32, i64 => i64, usize => u64, isize => i64);
    None
}

/// Appends `src`'s values, little-endian, to `out`. `T` must have a wire type.
pub(crate) fn put<T: 'static>(src: &[T], out: &mut Vec<u8>) {
    if let Some(b) = bytes(src) {
        out.extend_from_slice(b);
        return;
    }
    macro_rules! each {
        ($($ty:ty => $via:ty),*) => {$(
            if let Some(s) = as_slice::<T, $ty>(src) {
                for &x in s {
                    out.extend_from_slice(&(x as $via).to_le_bytes());
                }
                return;
            }
        )*};
    }
    each!(f32 => f32, f64 => f64, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
          i8 => i8, i16 => i16, i32 => i32, i64 => i64, usize => u64, isize => i64);
    unreachable!("only arrays with a wire type are sent");
}

/// Gives `f` `src`'s little-endian bytes (what [`put`] would append) in order, 64 Ki values
/// at a time: borrowed where memory holds them so ([`bytes`]), else through a buffer.
/// `T` must have a wire type.
pub(crate) fn each_bytes<T: 'static, E>(
    src: &[T],
    mut f: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut buf = Vec::new();
    for chunk in src.chunks(1 << 16) {
        match bytes(chunk) {
            Some(b) => f(b)?,
            None => {
                buf.clear();
                put(chunk, &mut buf);
                f(&buf)?;
            }
        }
    }
    Ok(())
}

/// The checksum of `src`'s little-endian bytes (what [`put`] would append). `T` must have
/// a wire type.
pub(crate) fn digest<T: 'static>(src: &[T]) -> crate::checkpoint::Poly {
    let mut sum = crate::checkpoint::Poly::new();
    let _ = each_bytes(src, |b| {
        sum.update(b);
        Ok::<(), ()>(())
    });
    sum
}

/// `src`'s wire bytes borrowed, when its memory holds them as they are: `T` a primitive
/// number of its wire size on a little-endian target (what [`put`] would append).
pub(crate) fn bytes<T: 'static>(src: &[T]) -> Option<&[u8]> {
    macro_rules! each {
        ($($ty:ty => $via:ty),*) => {$(
            if let Some(s) = as_slice::<T, $ty>(src) {
                if cfg!(target_endian = "little")
                    && std::mem::size_of::<$ty>() == std::mem::size_of::<$via>()
                {
                    // SAFETY: `$ty` is a primitive number, without padding; on a
                    // little-endian target its bytes in memory are its wire bytes (those of
                    // `$via`, of the same size), `size_of_val(s)` of them, borrowed for as
                    // long as `src`.
                    return Some(unsafe {
                        std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s))
                    });
                }
                return None;
            }
        )*};
    }
    each!(f32 => f32, f64 => f64, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
          i8 => i8, i16 => i16, i32 => i32, i64 => i64, usize => u64, isize => i64);
    None
}

/// `src` as `&[U]` when `T` is `U`.
pub(crate) fn as_slice<T: 'static, U: 'static>(src: &[T]) -> Option<&[U]> {
    (TypeId::of::<T>() == TypeId::of::<U>()).then(|| {
        // SAFETY: `T` and `U` are the same type (equal `TypeId`s), so the slice's pointer
        // and length describe valid `U`s.
        unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<U>(), src.len()) }
    })
}

/// `dst` as `&mut [U]` when `T` is `U`.
pub(crate) fn as_slice_mut<T: 'static, U: 'static>(dst: &mut [T]) -> Option<&mut [U]> {
    (TypeId::of::<T>() == TypeId::of::<U>()).then(|| {
        // SAFETY: as in `as_slice`, and the borrow is unique.
        unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<U>(), dst.len()) }
    })
}

/// Reads values from `bytes` into `dst` (as many as `dst` holds); `false` when `T` has no
/// wire type or the bytes are too few.
pub(crate) fn get<T: 'static>(bytes: &[u8], dst: &mut [T]) -> bool {
    macro_rules! each {
        ($($ty:ty => $via:ty),*) => {$(
            if let Some(d) = as_slice_mut::<T, $ty>(dst) {
                const S: usize = std::mem::size_of::<$via>();
                if bytes.len() < d.len() * S {
                    return false;
                }
                if cfg!(target_endian = "little") && std::mem::size_of::<$ty>() == S {
                    // SAFETY: every bit pattern is a valid `$ty` (a primitive number), whose
                    // little-endian memory bytes are its wire bytes; `d` is borrowed
                    // uniquely and spans `size_of_val(d)` bytes.
                    let db = unsafe {
                        std::slice::from_raw_parts_mut(
                            d.as_mut_ptr().cast::<u8>(),
                            std::mem::size_of_val(d),
                        )
                    };
                    let n = db.len();
                    db.copy_from_slice(&bytes[..n]);
                    return true;
                }
                for (x, b) in d.iter_mut().zip(bytes.chunks_exact(S)) {
                    *x = <$via>::from_le_bytes(b.try_into().expect("chunk of S")) as $ty;
                }
                return true;
            }
        )*};
    }
    each!(f32 => f32, f64 => f64, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
          i8 => i8, i16 => i16, i32 => i32, i64 => i64, usize => u64, isize => i64);
    false
}

/// The count (`u64`) at the front of `bytes`, and where that many items of `width` bytes
/// after it end; an error when the bytes are cut short (or the count is beyond memory).
pub(crate) fn counted(bytes: &[u8], width: usize) -> Result<(u64, usize), String> {
    let n = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or("cut short before its count")?;
    let end = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_mul(width))
        .and_then(|b| b.checked_add(8))
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            format!(
                "{n} counted, of {width} bytes each, in {} bytes",
                bytes.len()
            )
        })?;
    Ok((n, end))
}

/// Reads `dst.len()` values from the front of `bytes` into `dst` and moves `bytes` past
/// them; an error when `T` has no wire type or the bytes are too few.
pub(crate) fn take<T: 'static>(bytes: &mut &[u8], dst: &mut [T]) -> Result<(), String> {
    let size = wire_size::<T>().ok_or("values without a wire type")?;
    let n = dst.len() * size;
    if bytes.len() < n || !get(&bytes[..n], dst) {
        return Err(format!(
            "{} values of {size} bytes in {} bytes",
            dst.len(),
            bytes.len()
        ));
    }
    *bytes = &bytes[n..];
    Ok(())
}

/// The values `bytes` holds (little-endian, as [`put`] writes them), as a new vector;
/// `None` when `T` has no wire type or the bytes are not a whole number of values.
#[allow(clippy::modulo_one)] // one-byte types
pub(crate) fn get_vec<T: 'static>(bytes: &[u8]) -> Option<Vec<T>> {
    macro_rules! each {
        ($($ty:ty => $via:ty),*) => {$(
            if TypeId::of::<T>() == TypeId::of::<$ty>() {
                const S: usize = std::mem::size_of::<$via>();
                if bytes.len() % S != 0 {
                    return None;
                }
                let v: Vec<$ty> = bytes
                    .chunks_exact(S)
                    .map(|b| <$via>::from_le_bytes(b.try_into().expect("chunk of S")) as $ty)
                    .collect();
                let any: Box<dyn std::any::Any> = Box::new(v);
                return any.downcast::<Vec<T>>().ok().map(|b| *b);
            }
        )*};
    }
    each!(f32 => f32, f64 => f64, u8 => u8, u16 => u16, u32 => u32, u64 => u64,
          i8 => i8, i16 => i16, i32 => i32, i64 => i64, usize => u64, isize => i64);
    None
}

/// Appends the sparse indices `bytes` holds (`N` little-endian `u32`s per entry) to
/// `keys`; `Err(e)`: entry `e` (counted from the first of `bytes`) lies outside `shape`.
pub(crate) fn get_keys<const N: usize>(
    bytes: &[u8],
    shape: &[usize; N],
    keys: &mut Vec<[u32; N]>,
) -> Result<(), usize> {
    for (e, chunk) in bytes.chunks_exact(4 * N).enumerate() {
        let mut k = [0u32; N];
        for (d, x) in chunk.chunks_exact(4).enumerate() {
            k[d] = u32::from_le_bytes(x.try_into().expect("4 bytes"));
            if k[d] as usize >= shape[d] {
                return Err(e);
            }
        }
        keys.push(k);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_bytes_are_the_little_endian_wire_bytes() {
        // Each against bytes written out with `to_le_bytes` (not `put`, which reads memory
        // the same way on this target).
        fn check<T: 'static>(v: &[T], wire: Vec<u8>) {
            let mut put_bytes = Vec::new();
            put(v, &mut put_bytes);
            assert_eq!(put_bytes, wire);
            match bytes(v) {
                Some(b) => assert_eq!(b, &wire[..]),
                // Only where memory and wire forms differ (big-endian, a 32-bit `usize`).
                None => {
                    assert!(cfg!(target_endian = "big") || std::mem::size_of_val(v) != wire.len())
                }
            }
        }
        let f = [1.5f32, -0.0, f32::NAN];
        check(&f, f.iter().flat_map(|x| x.to_le_bytes()).collect());
        check(&[-1i8, 2], vec![0xff, 2]);
        check(&[0xabcdu16, 7], vec![0xcd, 0xab, 7, 0]);
        check(
            &[usize::MAX, 3],
            [u64::MAX, 3].iter().flat_map(|x| x.to_le_bytes()).collect(),
        );
        check(&[-5isize], (-5i64).to_le_bytes().to_vec());
        check::<f64>(&[], Vec::new());
        assert!(
            bytes(&[(1u8, 2u8)]).is_none(),
            "no wire type: nothing borrowed"
        );
    }
}
