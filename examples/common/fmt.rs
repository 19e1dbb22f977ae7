//! Number formatting the examples and benches share: printed results that a test or a
//! reader compares across runs. Compiled into each through `#[path]`.

/// `x` with 9 significant digits.
pub(crate) fn sig9(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = 9 - 1 - x.abs().log10().floor() as i32;
    format!("{:.*}", digits.max(0) as usize, x)
}
