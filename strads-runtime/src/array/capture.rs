//! How the loop body sees captured outer variables: by value when `Copy` (as the serial
//! loop did), by reference otherwise. Autoref specialisation picks the impl at compile time
//! for the concrete field type.

/// A captured field, borrowed from the loop's struct.
#[derive(Debug)]
pub struct Capture<'a, T>(pub &'a T);

/// Chosen when `T: Copy`: the body gets the value.
pub trait CaptureByCopy<T> {
    /// The captured value.
    fn get(&self) -> T;
}

impl<T: Copy> CaptureByCopy<T> for Capture<'_, T> {
    #[inline(always)]
    fn get(&self) -> T {
        *self.0
    }
}

/// Chosen otherwise: the body gets a reference.
pub trait CaptureByRef<'a, T> {
    /// A reference to the captured value.
    fn get(&self) -> &'a T;
}

impl<'a, T> CaptureByRef<'a, T> for &Capture<'a, T> {
    #[inline(always)]
    fn get(&self) -> &'a T {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The explicit borrow is what selects the impl, as in generated code.
    #[allow(clippy::needless_borrow)]
    #[test]
    fn copy_by_value_else_by_ref() {
        let x = 2.5f32;
        let v = vec![1, 2];
        let a: f32 = (&Capture(&x)).get();
        let b: &Vec<i32> = (&Capture(&v)).get();
        assert_eq!(a, 2.5);
        assert_eq!(b.len(), 2);
    }
}
