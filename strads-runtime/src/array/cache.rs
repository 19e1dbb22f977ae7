//! Per-array caches of plans and bucketed iteration spaces.
//!
//! A plan depends on the iteration-space array and the worker count; it is computed on the
//! first call of a loop and kept inside the iterated array, so it lives exactly as long as
//! the data it describes. Arrays are immutable once built, so an array's identity is its
//! version: a changed data set is a new array with a new id and an empty cache.

use std::any::Any;
use std::sync::{Arc, Mutex};

type Entry = (String, Arc<dyn Any + Send + Sync>);

/// A small keyed store of type-erased, shared values.
#[derive(Default)]
pub(crate) struct PlanCache {
    entries: Mutex<Vec<Entry>>,
}

impl PlanCache {
    /// The value under `key`, building it with `make` on first use.
    ///
    /// Two threads asking for the same missing key may both build it; one result is kept.
    pub(crate) fn get_or_insert<V, F>(&self, key: &str, make: F) -> Arc<V>
    where
        V: Any + Send + Sync,
        F: FnOnce() -> V,
    {
        if let Some(v) = self.lookup::<V>(key) {
            return v;
        }
        let v = Arc::new(make());
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, existing)) = entries.iter().find(|(k, _)| k == key) {
            if let Ok(existing) = Arc::clone(existing).downcast::<V>() {
                return existing;
            }
        }
        entries.push((key.to_owned(), v.clone()));
        v
    }

    /// Drops the values whose keys `stale` picks (they copied what just changed); values
    /// in use stay alive where they are held.
    pub(crate) fn drop_where(&self, stale: impl Fn(&str) -> bool) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(k, _)| !stale(k));
    }

    fn lookup<V: Any + Send + Sync>(&self, key: &str) -> Option<Arc<V>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| Arc::clone(v).downcast::<V>().ok())
    }

    /// Number of cached values.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .entries
            .lock()
            .map(|e| e.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        f.debug_struct("PlanCache").field("keys", &keys).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_per_key() {
        let c = PlanCache::default();
        let mut built = 0;
        let a = c.get_or_insert("k", || {
            built += 1;
            vec![1, 2]
        });
        let b = c.get_or_insert("k", || -> Vec<i32> { unreachable!("cached") });
        assert_eq!(built, 1);
        assert!(Arc::ptr_eq(&a, &b));
        let _ = c.get_or_insert("other", || 3u8);
        assert_eq!(c.len(), 2);
    }
}
