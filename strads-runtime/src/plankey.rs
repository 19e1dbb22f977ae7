//! The bytes of captured values that key a reconnaissance plan: a serde serializer that
//! writes every value unambiguously (a tag per kind, lengths before contents, floats by
//! their bits), so two byte strings are equal exactly when the values serialize equal.

use serde::Serialize;
use serde::ser::{self, Serializer};

/// Appends the key bytes of `value` to `out`. Values that fail to serialize (a map with a
/// key serde refuses, say) append a marker that never equals itself across calls, so the
/// plan is made again rather than reused wrongly.
pub fn capture_key<T: ?Sized + Serialize>(value: &T, out: &mut Vec<u8>) {
    let start = out.len();
    if value.serialize(&mut KeyWriter(out)).is_err() {
        static FRESH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        out.truncate(start);
        out.push(0xff);
        let n = FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

struct KeyWriter<'a>(&'a mut Vec<u8>);

#[derive(Debug)]
struct KeyError;

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not serializable as a plan key")
    }
}

impl std::error::Error for KeyError {}

impl ser::Error for KeyError {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        KeyError
    }
}

impl KeyWriter<'_> {
    fn tag(&mut self, t: u8) {
        self.0.push(t);
    }
    fn len(&mut self, n: usize) {
        self.0.extend_from_slice(&(n as u64).to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
}

macro_rules! number {
    ($($f:ident: $t:ty => $tag:expr, $bytes:expr;)*) => {
        $(fn $f(self, v: $t) -> Result<(), KeyError> {
            self.tag($tag);
            #[allow(clippy::redundant_closure_call)]
            self.0.extend_from_slice(&($bytes)(v));
            Ok(())
        })*
    };
}

impl<'w> Serializer for &mut KeyWriter<'w> {
    type Ok = ();
    type Error = KeyError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    number! {
        serialize_bool: bool => 1, |v: bool| [v as u8];
        serialize_i8: i8 => 2, |v: i8| v.to_le_bytes();
        serialize_i16: i16 => 3, |v: i16| v.to_le_bytes();
        serialize_i32: i32 => 4, |v: i32| v.to_le_bytes();
        serialize_i64: i64 => 5, |v: i64| v.to_le_bytes();
        serialize_i128: i128 => 6, |v: i128| v.to_le_bytes();
        serialize_u8: u8 => 7, |v: u8| v.to_le_bytes();
        serialize_u16: u16 => 8, |v: u16| v.to_le_bytes();
        serialize_u32: u32 => 9, |v: u32| v.to_le_bytes();
        serialize_u64: u64 => 10, |v: u64| v.to_le_bytes();
        serialize_u128: u128 => 11, |v: u128| v.to_le_bytes();
        serialize_f32: f32 => 12, |v: f32| v.to_bits().to_le_bytes();
        serialize_f64: f64 => 13, |v: f64| v.to_bits().to_le_bytes();
        serialize_char: char => 14, |v: char| (v as u32).to_le_bytes();
    }

    fn serialize_str(self, v: &str) -> Result<(), KeyError> {
        self.tag(15);
        self.bytes(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), KeyError> {
        self.tag(16);
        self.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), KeyError> {
        self.tag(17);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), KeyError> {
        self.tag(18);
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), KeyError> {
        self.tag(19);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), KeyError> {
        self.tag(19);
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
    ) -> Result<(), KeyError> {
        self.tag(20);
        self.len(i as usize);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), KeyError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), KeyError> {
        self.tag(21);
        self.len(i as usize);
        v.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, KeyError> {
        // Elements end with an end tag: the length need not be known.
        let _ = len;
        self.tag(22);
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self, KeyError> {
        self.tag(23);
        self.len(len);
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self, KeyError> {
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Self, KeyError> {
        self.tag(24);
        self.len(i as usize);
        self.len(len);
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, KeyError> {
        self.tag(25);
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Self, KeyError> {
        self.serialize_tuple(len)
    }
    fn serialize_struct_variant(
        self,
        n: &'static str,
        i: u32,
        v: &'static str,
        len: usize,
    ) -> Result<Self, KeyError> {
        self.serialize_tuple_variant(n, i, v, len)
    }
}

/// Every element is introduced by tag 26; the end by tag 27.
macro_rules! compound {
    ($($tr:ident { $($m:ident ($($k:ident),*);)* })*) => {
        $(impl<'w> ser::$tr for &mut KeyWriter<'w> {
            type Ok = ();
            type Error = KeyError;
            $(fn $m<T: ?Sized + Serialize>(&mut self, $($k: &'static str,)* v: &T) -> Result<(), KeyError> {
                $(let _ = $k;)*
                self.tag(26);
                v.serialize(&mut **self)
            })*
            fn end(self) -> Result<(), KeyError> {
                self.tag(27);
                Ok(())
            }
        })*
    };
}

compound! {
    SerializeSeq { serialize_element(); }
    SerializeTuple { serialize_element(); }
    SerializeTupleStruct { serialize_field(); }
    SerializeTupleVariant { serialize_field(); }
    SerializeStruct { serialize_field(key); }
    SerializeStructVariant { serialize_field(key); }
}

impl<'w> ser::SerializeMap for &mut KeyWriter<'w> {
    type Ok = ();
    type Error = KeyError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> Result<(), KeyError> {
        self.tag(26);
        k.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), KeyError> {
        v.serialize(&mut **self)
    }
    fn end(self) -> Result<(), KeyError> {
        self.tag(27);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<T: Serialize>(v: &T) -> Vec<u8> {
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
}
