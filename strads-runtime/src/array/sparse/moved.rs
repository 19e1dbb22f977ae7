//! A spread array whose values `iter_mut()` calls changed where its parts are
//! (`itermut::spread`).

use std::sync::Arc;

use super::SparseArray;
use crate::array::spread::{Decode, SpreadOps};

impl<T, const N: usize> SparseArray<T, N> {
    /// The parts on the ranks while the array is spread and they hold its values: not
    /// once `iter_mut()` calls moved the values where they run (an operation on the
    /// parts' values, such as a sum or a split, brings the array home then).
    pub(crate) fn spread_values(&self) -> Option<&Arc<dyn SpreadOps>> {
        self.spread().filter(|ops| !ops.moved())
    }

    /// An `iter_mut()` call changed the values where the parts are: the array comes home
    /// through `decode` from now on (what `SpreadOps::gather` sends once the values moved),
    /// and its values' version moves on.
    pub(crate) fn values_moved_in_parts(&mut self, decode: Decode<T, N>) {
        if let Some(spread) = &mut self.spread {
            spread.decode = decode;
            spread.ops.values_moved();
        }
        self.values_version += 1;
        // Copies of windows of the values that were (`byvalue.rs`) are stale.
        self.peeked
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        // Blocks that copied the values (a read-only loop's, traded or not) are stale; the
        // `iter_mut()` loop's grid (`spread-<key>`), which holds no values, stays.
        self.cache.drop_where(|k| {
            k.starts_with("buckets:") || k.starts_with("by:") || k.starts_with("spread:")
        });
    }

    /// A resumed job put a checkpoint's values into the parts (`SpreadOps::restore_values`):
    /// the array comes home from them again, and its values' version moves on.
    pub(crate) fn values_restored_in_parts(&mut self)
    where
        T: 'static,
    {
        if let Some(spread) = &mut self.spread
            && !spread.ops.coded()
        {
            // Numbers in the parts come home as parts of numbers do.
            spread.decode = crate::array::spread::decode_parts::<T, N>;
        }
        self.values_version += 1;
        // Every grid's blocks, the `iter_mut()` loop's too: its next call trades again.
        self.cache.drop_where(|k| {
            k.starts_with("buckets:") || k.starts_with("by:") || k.starts_with("spread")
        });
    }
}
