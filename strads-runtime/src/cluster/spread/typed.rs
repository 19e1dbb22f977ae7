//! The element kinds arrays made in parts may have, as Rust types.

/// Runs `$body` with `$u` the Rust type of element kind `$elem` and `$n` the dims (1 to
/// 4), or evaluates `$none` for more dims.
macro_rules! typed {
    ($elem:expr, $dims:expr, $u:ident, $n:ident, $body:expr, $none:expr) => {{
        macro_rules! dims {
            ($t:ty) => {{
                type $u = $t;
                match $dims {
                    1 => {
                        const $n: usize = 1;
                        $body
                    }
                    2 => {
                        const $n: usize = 2;
                        $body
                    }
                    3 => {
                        const $n: usize = 3;
                        $body
                    }
                    4 => {
                        const $n: usize = 4;
                        $body
                    }
                    _ => $none,
                }
            }};
        }
        match $elem {
            $crate::cluster::proto::Elem::F32 => dims!(f32),
            $crate::cluster::proto::Elem::F64 => dims!(f64),
            $crate::cluster::proto::Elem::U8 => dims!(u8),
            $crate::cluster::proto::Elem::U16 => dims!(u16),
            $crate::cluster::proto::Elem::U32 => dims!(u32),
            $crate::cluster::proto::Elem::U64 => dims!(u64),
            $crate::cluster::proto::Elem::I8 => dims!(i8),
            $crate::cluster::proto::Elem::I16 => dims!(i16),
            $crate::cluster::proto::Elem::I32 => dims!(i32),
            $crate::cluster::proto::Elem::I64 => dims!(i64),
            $crate::cluster::proto::Elem::Usize => dims!(usize),
            $crate::cluster::proto::Elem::Isize => dims!(isize),
        }
    }};
}
