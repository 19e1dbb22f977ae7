//! An `iter_mut()` loop's values by rank: each rank's tasks' chunks encoded one after
//! another behind a byte that says whether they follow ([`SENT`]) or stay where the last
//! call left them ([`KEPT`], `kept.rs`).

use super::{Layout, ValuesCodec};

/// A values message's first byte: the values follow, encoded.
pub(super) const SENT: u8 = 0;
/// A values message's first byte: the rank keeps them from the last call; the
/// fingerprint of its entries follows (8 bytes, little-endian).
pub(super) const KEPT: u8 = 1;

/// The chunks of `ordered` that `rank`'s tasks own (`tasks`: each task's worker and
/// range, in the serial order), encoded one after another after a byte saying so.
pub(super) fn encode_rank<T>(
    codec: &ValuesCodec<T>,
    ordered: &[T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    rank: usize,
) -> Result<Vec<u8>, String> {
    let mut out = vec![SENT];
    for &(_, (lo, hi)) in tasks.iter().filter(|(w, _)| w / layout.threads == rank) {
        (codec.encode)(&ordered[lo..hi], &mut out)?;
    }
    Ok(out)
}

/// The driver's values for `rank`, encoded and checked to come back exactly: decoded into
/// a copy of its chunks and encoded again, they must give the same bytes (a value postcard
/// cannot carry faithfully, such as serde's `skip_serializing_if`, `untagged` or
/// `flatten`, fails here, before the call, instead of giving other values on the rank).
pub(super) fn encode_checked<T: Default + 'static>(
    codec: &ValuesCodec<T>,
    ordered: &[T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    rank: usize,
) -> Result<Vec<u8>, String> {
    thread_local! {
        /// Values decoded for the check, kept from call to call: a `Vec` value decodes into
        /// the allocation it had (`deserialize_in_place`).
        static SCRATCH: std::cell::RefCell<Option<Box<dyn std::any::Any>>> =
            const { std::cell::RefCell::new(None) };
    }
    let mut copy: Vec<T> = SCRATCH
        .with(|s| s.borrow_mut().take())
        .and_then(|b| b.downcast::<Vec<T>>().ok())
        .map_or_else(Vec::new, |b| *b);
    let mut out = vec![SENT];
    let mut again = Vec::new();
    let mut checked = Ok(());
    for &(_, (lo, hi)) in tasks.iter().filter(|(w, _)| w / layout.threads == rank) {
        let start = out.len();
        (codec.encode)(&ordered[lo..hi], &mut out)?;
        copy.resize_with(hi - lo, T::default);
        let mut rest = &out[start..];
        checked = (codec.decode)(&mut rest, &mut copy);
        if checked.is_err() {
            break;
        }
        again.clear();
        (codec.encode)(&copy, &mut again)?;
        if !rest.is_empty() || again[..] != out[start..] {
            checked = Err("values that decode to other values".into());
            break;
        }
    }
    SCRATCH.with(|s| *s.borrow_mut() = Some(Box::new(copy)));
    checked.map(|()| out)
}

/// Puts what `rank` sent ([`encode_rank`]) into its tasks' chunks of `ordered`.
pub(super) fn decode_rank<T>(
    codec: &ValuesCodec<T>,
    ordered: &mut [T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    rank: usize,
    bytes: &[u8],
) -> Result<(), String> {
    let mut rest = bytes;
    for &(_, (lo, hi)) in tasks.iter().filter(|(w, _)| w / layout.threads == rank) {
        (codec.decode)(&mut rest, &mut ordered[lo..hi])
            .map_err(|e| format!("values that do not decode: {e}"))?;
    }
    if !rest.is_empty() {
        return Err(format!(
            "{} bytes after the values of its tasks",
            rest.len()
        ));
    }
    Ok(())
}
