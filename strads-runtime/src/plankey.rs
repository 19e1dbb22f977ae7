//! The bytes of captured values that key a reconnaissance plan: their postcard encoding.
//! For a given type it is injective (every value decodes back from its bytes, floats are
//! written by their bits) and self-delimiting, so the concatenated bytes of a loop's
//! captured values are equal exactly when every value serializes equal.

use serde::Serialize;

/// Appends the key bytes of `value` to `out`. Values postcard cannot write (a sequence of
/// unknown length, say) append a marker that never equals itself across calls, so the
/// plan is made again rather than reused wrongly.
pub fn capture_key<T: ?Sized + Serialize>(value: &T, out: &mut Vec<u8>) {
    match postcard::to_allocvec(value) {
        Ok(bytes) => {
            out.push(0);
            out.extend_from_slice(&bytes);
        }
        Err(_) => {
            static FRESH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            out.push(0xff);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<T: ?Sized + Serialize>(v: &T) -> Vec<u8> {
        let mut out = Vec::new();
        capture_key(v, &mut out);
        out
    }

    #[test]
    fn equal_values_equal_keys_and_different_values_differ() {
        assert_eq!(key(&(3usize, 0.5f32)), key(&(3usize, 0.5f32)));
        assert_ne!(key(&3usize), key(&4usize));
        assert_ne!(key(&0.0f64), key(&-0.0f64));
        assert_ne!(key(&f32::NAN), key(&f32::INFINITY));
        assert_ne!(key(&vec![1u8, 2]), key(&vec![1u8]));
        assert_ne!(
            key(&(vec![1u32], vec![2u32])),
            key(&(vec![1u32, 2], Vec::<u32>::new()))
        );
        assert_ne!(key(&Some(0u8)), key(&None::<u8>));
        assert_ne!(key(&"ab"), key(&"a"));
    }

    /// A value postcard cannot write keys a plan of its own every time.
    #[test]
    fn values_that_cannot_be_written_never_reuse_a_plan() {
        struct Unsized;
        impl Serialize for Unsized {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq((0..3u8).filter(|x| x % 2 == 0))
            }
        }
        assert_ne!(key(&Unsized), key(&Unsized));
    }
}
