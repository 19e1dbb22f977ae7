//! The merges' arithmetic. A copy's difference from its base can be "negative" for an
//! unsigned element (a count a worker decremented) and only comes right when added back,
//! so integers wrap here, as they do in a release build; a debug build would otherwise
//! panic on the intermediate value where the serial loop does not. Other element types
//! use their own `-` and `+`.

use std::any::TypeId;
use std::ops::{Add, Sub};

/// Reinterprets `a` as `B`.
///
/// # Safety
/// `A` and `B` must be the same type.
#[inline(always)]
unsafe fn same<A: Copy, B: Copy>(a: A) -> B {
    // SAFETY: the caller guarantees `A` is `B`: the copy is the identity.
    unsafe { std::mem::transmute_copy(&a) }
}

macro_rules! wrapping {
    ($name:ident, $op:ident, $trait:ident, $wrapping:ident, $doc:literal, [$($t:ty),*]) => {
        #[doc = $doc]
        #[inline(always)]
        pub(crate) fn $name<T: Copy + $trait<Output = T> + 'static>(a: T, b: T) -> T {
            $(
                if TypeId::of::<T>() == TypeId::of::<$t>() {
                    // SAFETY: `T` has the `TypeId` of the integer type: they are the same
                    // type.
                    return unsafe { same::<$t, T>(same::<T, $t>(a).$wrapping(same::<T, $t>(b))) };
                }
            )*
            a.$op(b)
        }
    };
}

wrapping!(
    sub,
    sub,
    Sub,
    wrapping_sub,
    "`a - b`, wrapping for integers.",
    [
        u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
    ]
);
wrapping!(
    add,
    add,
    Add,
    wrapping_add,
    "`a + b`, wrapping for integers.",
    [
        u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
    ]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_and_floats_do_not() {
        assert_eq!(sub(3u32, 5), u32::MAX - 1);
        assert_eq!(add(7u32, sub(3u32, 5)), 5);
        assert_eq!(sub(i8::MIN, 1), i8::MAX);
        assert_eq!(add(u64::MAX, 2), 1);
        assert_eq!(sub(usize::MIN, 1), usize::MAX);
        assert_eq!(sub(1.5f32, 2.0), -0.5);
        assert_eq!(add(f64::MAX, f64::MAX), f64::INFINITY);
    }
}
