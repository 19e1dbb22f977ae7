//! `iter_mut()` values that stay on the rank that runs their entries between calls (issue
//! 28, item 2): after a call that crossed processes each worker rank keeps the values of
//! its tasks (typed, `cluster::store::keep_values`) and sends none back; the driver's
//! array holds its own and knows the others are away ([`Kept`]). The next call whose
//! schedule has the same tasks in the same order sends each rank a note instead of its
//! values, naming its entries ([`fingerprint`], which the rank checks); any other call, and
//! serial code reading the array, brings them home first (`Msg::Fetch` of the array's id
//! with [`VALUES_BIT`](crate::cluster::store::VALUES_BIT)).

use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use super::ranks::{KEPT, SENT, decode_rank};
use super::{Layout, ValuesCodec};
use crate::array::AwayValues;
use crate::cluster::proto::Region;
use crate::cluster::session::Session;
use crate::cluster::store::VALUES_BIT;

/// A fingerprint of the entries rank `rank`'s tasks run, in their order (`order`: the
/// entries' ids task after task; `tasks`: each task's worker and range of `order`).
pub(super) fn fingerprint(
    order: &[u32],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    rank: usize,
) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (layout.ranks, layout.threads).hash(&mut h);
    for &(_, (lo, hi)) in tasks.iter().filter(|(w, _)| w / layout.threads == rank) {
        order[lo..hi].hash(&mut h);
    }
    h.finish()
}

/// The driver's record of the values a crossed call left on the other ranks.
pub(super) struct Kept<T> {
    pub(super) order: Vec<u32>,
    pub(super) tasks: Vec<(usize, (usize, usize))>,
    pub(super) layout: Layout,
    pub(super) codec: ValuesCodec<T>,
    pub(super) session: &'static Session,
    /// The driver's array id.
    pub(super) id: u64,
    /// Bytes of the values on the other ranks, as they were sent.
    pub(super) bytes: u64,
}

impl<T: Default> Kept<T> {
    /// Fetches rank `rank`'s values and hands each task's chunk to `put(task, values)`.
    pub(super) fn fetch(&self, rank: usize, mut put: impl FnMut(usize, Vec<T>)) {
        let bytes = self
            .session
            .fetch(self.id | VALUES_BIT, &[(Region(Vec::new()), rank)], false)
            .pop()
            .unwrap_or_default();
        let mut rest = &bytes[..];
        for (k, &(_, (lo, hi))) in self.tasks.iter().enumerate() {
            if self.tasks[k].0 / self.layout.threads != rank {
                continue;
            }
            let mut chunk: Vec<T> = std::iter::repeat_with(T::default).take(hi - lo).collect();
            if let Err(e) = (self.codec.decode)(&mut rest, &mut chunk) {
                self.session.fail(format!(
                    "rank {rank} sent the values it kept of array {} that do not decode: {e}",
                    self.id
                ));
            }
            put(k, chunk);
        }
        if !rest.is_empty() {
            self.session.fail(format!(
                "rank {rank} sent {} bytes after the values it kept of array {}",
                rest.len(),
                self.id
            ));
        }
    }
}

impl<T: Default + Send + Sync + 'static> AwayValues<T> for Kept<T> {
    fn bring_home(&self, values: &mut [T]) {
        for r in 1..self.layout.ranks {
            self.fetch(r, |k, chunk| {
                let (lo, _) = self.tasks[k].1;
                for (j, v) in chunk.into_iter().enumerate() {
                    values[self.order[lo + j] as usize] = v;
                }
            });
        }
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// A worker's values of its tasks, kept between calls: its tasks' chunks one after
/// another, and how to encode them for the driver.
pub(super) struct Values<T> {
    pub(super) values: Vec<T>,
    pub(super) codec: ValuesCodec<T>,
}

impl<T: Send + 'static> crate::cluster::store::KeptValues for Values<T> {
    fn encode(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        (self.codec.encode)(&self.values, &mut out)?;
        Ok(out)
    }

    fn write(&self, w: &mut dyn FnMut(&[u8]) -> Result<(), String>) -> Result<(), String> {
        // A raw codec's bytes of values one after another are each value's: they go a chunk
        // at a time. Another codec's go whole.
        let chunk = match crate::array::spread::Layout::of::<T>() {
            Some(_) => 16_384,
            None => self.values.len().max(1),
        };
        let mut out = Vec::new();
        for values in self.values.chunks(chunk) {
            out.clear();
            (self.codec.encode)(values, &mut out)?;
            w(&out)?;
        }
        Ok(())
    }

    fn bytes(&self) -> u64 {
        (self.values.len() * std::mem::size_of::<T>()) as u64
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// The chunks of `ordered` that this rank's tasks own, in order.
fn own_chunks<'o, T>(
    ordered: &'o mut [T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
) -> impl Iterator<Item = &'o mut T> {
    let mut rest = ordered;
    let mut at = 0;
    let mut chunks = Vec::new();
    for &(w, (lo, hi)) in tasks {
        // Tasks cover `ordered` one after another (`lo == at`); skip any gap all the same.
        let tail = &mut std::mem::take(&mut rest)[lo - at..];
        let (chunk, tail) = tail.split_at_mut(hi - lo);
        rest = tail;
        at = hi;
        if w / layout.threads == layout.rank {
            chunks.push(chunk);
        }
    }
    chunks.into_iter().flatten()
}

/// A worker's values of its tasks from the driver's message: decoded from it, or, when
/// the message says this rank kept them from the last call, moved back from where they
/// were kept (the driver's array `id`, this rank's entries `mine`).
#[allow(clippy::too_many_arguments)]
pub(super) fn received<T: Send + 'static>(
    codec: &ValuesCodec<T>,
    ordered: &mut [T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    id: u64,
    mine: u64,
    message: &[u8],
) -> Result<(), String> {
    match message.split_first() {
        Some((&SENT, bytes)) => decode_rank(codec, ordered, tasks, layout, layout.rank, bytes)
            .map_err(|e| format!("the driver's {e}")),
        Some((&KEPT, fp)) => {
            let fp = <[u8; 8]>::try_from(fp)
                .map(u64::from_le_bytes)
                .map_err(|_| format!("a note of {} bytes for kept values", message.len()))?;
            if fp != mine {
                return Err(format!(
                    "the driver's note names other entries than this rank's tasks run \
                     ({fp:016x}, here {mine:016x})"
                ));
            }
            let kept = crate::cluster::store::take_kept_values(id, fp)
                .map_err(|e| format!("the driver left values here, but {e}"))?;
            let kept = kept
                .into_any()
                .downcast::<Values<T>>()
                .map_err(|_| "the values kept here are of another type".to_string())?;
            let want: usize = tasks
                .iter()
                .filter(|(w, _)| w / layout.threads == layout.rank)
                .map(|(_, (lo, hi))| hi - lo)
                .sum();
            if kept.values.len() != want {
                return Err(format!(
                    "{} values kept here for {want} entries",
                    kept.values.len()
                ));
            }
            for (slot, v) in own_chunks(ordered, tasks, layout).zip(kept.values) {
                *slot = v;
            }
            Ok(())
        }
        _ => Err(format!(
            "a values message of {} bytes without its kind",
            message.len()
        )),
    }
}

/// After a worker's tasks ran: keeps their values here (moved out of `ordered`) for the
/// driver's array `id`, this rank's entries `mine`.
pub(super) fn keep<T: Default + Send + 'static>(
    codec: &ValuesCodec<T>,
    ordered: &mut [T],
    tasks: &[(usize, (usize, usize))],
    layout: Layout,
    id: u64,
    mine: u64,
) {
    let values: Vec<T> = own_chunks(ordered, tasks, layout)
        .map(std::mem::take)
        .collect();
    crate::cluster::store::keep_values(
        id,
        mine,
        Box::new(Values {
            values,
            codec: *codec,
        }),
    );
}

/// The driver's values for the other ranks (or notes that they keep them), and what they
/// send back; with the values an earlier call left on them (`kept`), how to bring those
/// home into the tasks' chunks (`slots`, task `k`'s at `slot_of[k]`) if the call runs here
/// alone after all.
pub(super) struct ValuesOut<'x, 'c, T> {
    pub(super) out: Mutex<Vec<Vec<u8>>>,
    pub(super) back: Mutex<Vec<(usize, Vec<u8>)>>,
    pub(super) kept: Option<&'x Kept<T>>,
    pub(super) slots: &'x [Mutex<Option<&'c mut [T]>>],
    pub(super) slot_of: &'x [usize],
    pub(super) came_home: std::sync::atomic::AtomicBool,
    /// Bytes of `kept`'s values.
    pub(super) away_bytes: u64,
}

impl<T: Default + Send + Sync> crate::cluster::call::ValuesWire for ValuesOut<'_, '_, T> {
    fn away_bytes(&self) -> u64 {
        self.away_bytes
    }

    fn home(&self) {
        let Some(k) = self.kept else {
            return;
        };
        if self
            .came_home
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        for r in 1..k.layout.ranks {
            k.fetch(r, |task, chunk| {
                let mut slot = self.slots[self.slot_of[task]]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let dest = slot
                    .as_mut()
                    .expect("values come home before the tasks run");
                for (d, v) in dest.iter_mut().zip(chunk) {
                    *d = v;
                }
            });
        }
    }

    fn out(&self, rank: usize) -> Vec<u8> {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.get_mut(rank - 1)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn back(&self, rank: usize, bytes: Vec<u8>) {
        self.back
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((rank, bytes));
    }
}
