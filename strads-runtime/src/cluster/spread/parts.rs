//! The parts of spread arrays this process keeps, by the driver's array id: what the
//! collective operations on a spread array (`builtin.rs`, `saved.rs`, `values.rs`) reach.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::share::Share;

/// The parts this process keeps, by the driver's array id.
static PARTS: Mutex<BTreeMap<u64, Box<dyn Share>>> = Mutex::new(BTreeMap::new());

/// Keeps `part` of the driver's array `id`.
pub(crate) fn keep(id: u64, part: Box<dyn Share>) {
    PARTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, part);
}

/// Runs `f` on this process's part of array `id`, to change it.
pub(crate) fn with_part_mut<R>(id: u64, f: impl FnOnce(&mut dyn Share) -> R) -> Result<R, String> {
    let mut parts = PARTS.lock().unwrap_or_else(|e| e.into_inner());
    let p = parts
        .get_mut(&id)
        .ok_or_else(|| format!("this rank holds no part of array {id}"))?;
    Ok(f(p.as_mut()))
}

/// Runs `f` on this process's part of array `id`.
pub(crate) fn with_part<R>(id: u64, f: impl FnOnce(&dyn Share) -> R) -> Result<R, String> {
    let parts = PARTS.lock().unwrap_or_else(|e| e.into_inner());
    let p = parts
        .get(&id)
        .ok_or_else(|| format!("this rank holds no part of array {id}"))?;
    Ok(f(p.as_ref()))
}

/// Drops this process's part of array `id` (the driver dropped the array).
pub(crate) fn forget(id: u64) {
    PARTS.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}

/// The parts kept, and their bytes.
pub(crate) fn held() -> (usize, u64) {
    let parts = PARTS.lock().unwrap_or_else(|e| e.into_inner());
    (parts.len(), parts.values().map(|p| p.bytes()).sum())
}
