//! Loops over `a.iter_mut()`: every entry's value belongs to its iteration alone, so
//! updating it creates no dependence. For a call the values are moved out of the array in
//! the plan's block order and split into one disjoint `&mut [T]` per block; the block that
//! runs gets its chunk, and afterwards (or after a panic) every value goes back to the
//! array, which keeps them in that order: the next call in the same order (a sweep after
//! a sweep) takes them as they are, and only serial code that reads them puts them back in
//! entry order. All safe: `split_at_mut` is what keeps two workers from ever sharing a
//! value.

mod kept;
mod keys;
mod ranks;
mod raw;
mod spread;

pub use crate::space::KeyBuckets;
pub use keys::Keys;

use std::fmt;
use std::sync::Mutex;

use crate::array::SparseArray;
use crate::exec::{Block, Call};
use crate::plan::Unit;

/// How an `iter_mut()` loop's values cross processes (postcard, value after value), when
/// they serialize. Decoding goes into the values already there (`deserialize_in_place`),
/// so a `Vec` value reuses its allocation from one call to the next.
pub struct ValuesCodec<T> {
    pub(crate) encode: fn(&[T], &mut Vec<u8>) -> Result<(), String>,
    pub(crate) decode: fn(&mut &[u8], &mut [T]) -> Result<(), String>,
    /// Whether every value decodes from its encoding as it was (`raw.rs`'s codecs), so
    /// the round-trip check before a call is not needed.
    exact: bool,
}

impl<T> Clone for ValuesCodec<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ValuesCodec<T> {}

impl<T> fmt::Debug for ValuesCodec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ValuesCodec")
    }
}

/// The values' type seen through a probe that gives their [`ValuesCodec`] when they
/// serialize and `None` otherwise (autoref specialization, as the loop struct's
/// `Probe`): generated code calls `(&ValuesProbe::<T>::new()).codec()`.
pub struct ValuesProbe<T>(std::marker::PhantomData<fn() -> T>);

impl<T> ValuesProbe<T> {
    /// The probe.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        ValuesProbe(std::marker::PhantomData)
    }
}

impl<T> fmt::Debug for ValuesProbe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ValuesProbe")
    }
}

/// [`ValuesProbe`] when the values serialize.
pub trait ProbeValuesSerde<T> {
    /// Their codec.
    fn codec(&self) -> Option<ValuesCodec<T>>;
}

impl<T: serde::Serialize + serde::de::DeserializeOwned + 'static> ProbeValuesSerde<T>
    for ValuesProbe<T>
{
    fn codec(&self) -> Option<ValuesCodec<T>> {
        if let Some(raw) = raw::codec::<T>() {
            return Some(raw);
        }
        Some(ValuesCodec {
            encode: |vals, out| {
                for v in vals {
                    let buf = std::mem::take(out);
                    *out = postcard::to_extend(v, buf).map_err(|e| e.to_string())?;
                }
                Ok(())
            },
            decode: |bytes, vals| {
                let mut de = postcard::Deserializer::from_bytes(bytes);
                for v in vals.iter_mut() {
                    T::deserialize_in_place(&mut de, v).map_err(|e| e.to_string())?;
                }
                *bytes = de.finalize().map_err(|e| e.to_string())?;
                Ok(())
            },
            exact: false,
        })
    }
}

/// [`ValuesProbe`] when they do not: the loop stays on the driver's threads.
pub trait ProbeValuesNone<T> {
    /// `None`.
    fn codec(&self) -> Option<ValuesCodec<T>>;
}

impl<T> ProbeValuesNone<T> for &ValuesProbe<T> {
    fn codec(&self) -> Option<ValuesCodec<T>> {
        None
    }
}

/// Where this process stands in a call across processes: its rank, the ranks and the
/// worker threads per rank.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Layout {
    rank: usize,
    ranks: usize,
    threads: usize,
}

impl Call<'_> {
    /// Runs a call of a loop over `array.iter_mut()`. `f` runs one block, given its chunk
    /// of values. In a cluster job the values of each rank's tasks travel to it (`codec`;
    /// without one, the values do not serialize and the call stays on the driver's
    /// threads) and stay there, and each rank gets the indices of its tasks' entries as
    /// blocks (`Keys::blocks_bytes`): the array crosses as its shape (under a plan of
    /// lists, which has no blocks, as its indices, `wire::KeysWire`).
    pub fn run_mut<T, const N: usize, F>(
        self,
        array: &mut SparseArray<T, N>,
        codec: Option<ValuesCodec<T>>,
        f: F,
    ) -> crate::exec::Ran
    where
        T: Clone + Default + Send + Sync + 'static,
        F: Fn(&mut Block<'_, Keys<'_, T, N>>, &mut [T]) + Sync,
    {
        use crate::exec::Ran;
        let state = self.state;
        let len = array.len();
        let decides = crate::exec::cost::decides(&self.side);
        // An array in parts on the ranks whose values cross as raw bytes runs where the
        // parts are (`spread.rs`): the serial loop, which would bring it home, is not tried.
        let in_parts = array.is_spread() && codec.is_some_and(|c| c.exact);
        // The serial loop would bring values away home too: within the budget with parts.
        let times = decides && !in_parts && self.may_time_with(array.values_away_bytes());
        if times && let Some(serial) = state.serial_before_plan(len) {
            return Ran::handed_back(serial);
        }
        if times && let Some(serial) = self.serial_before_setup(&Keys(&*array)) {
            return Ran::handed_back(serial);
        }
        // Planning may panic (an ordered loop over unsorted entries): plan before any value
        // moves out of the array, so that the array keeps its values then.
        let mut job = self.prepare(&Keys(&*array));
        if decides
            && !in_parts
            && let Some(serial) = state.serial_with_plan(&job.shape(&Keys(&*array), times))
        {
            return Ran::handed_back(serial);
        }
        // The driver of a call over an array in parts: the key its entries and values are
        // traded under when the call runs where they are; otherwise it comes home now.
        let spread_key = if in_parts {
            let key = spread::trade(&job, &Keys(&*array));
            if key.is_none() {
                array.gather();
            }
            key
        } else {
            None
        };
        // As `Call::run`: the run alone is timed.
        let t = std::time::Instant::now();
        // In a cluster job: a worker serving the driver's call, or the driver of a call
        // that may cross (the values must serialize).
        let served = job.side().served().cloned();
        let serving = served.as_ref().map(|sv| Layout {
            rank: sv.session().rank,
            ranks: sv.session().size(),
            threads: sv.msg().threads,
        });
        // A worker holds the values of its own tasks alone (its copy of the array is its
        // shape, or for a plan of lists its indices without values, `store::fill_sparse`):
        // the order and chunks below are its tasks', one after another.
        let own_only = serving.filter(|_| codec.is_some());
        // ... and so does the driver of a call that runs where an array's parts are.
        let own_only = own_only.or(spread_key.and(match job.side() {
            crate::exec::Side::Driver(s) => Some(Layout {
                rank: 0,
                ranks: s.size(),
                threads: s.threads,
            }),
            _ => None,
        }));
        // Each of this rank's tasks' block and number of entries, in order.
        let mut own_blocks: Vec<(usize, usize)> = Vec::new();
        // Each task's iteration ids, in its order: the chunks.
        let sched = job.schedule();
        let p = sched.workers;
        let mut order: Vec<u32> = Vec::new();
        let mut bounds: Vec<Option<(usize, usize)>> = vec![None; sched.steps.len() * p];
        let mut tasks: Vec<(usize, (usize, usize))> = Vec::new();
        let mut slot_of: Vec<usize> = Vec::new();
        for (t, w, task) in sched.serial_order() {
            if own_only.is_some_and(|l| w / l.threads != l.rank) {
                continue;
            }
            let start = order.len();
            match task.unit {
                Unit::Ids(k) => order.extend_from_slice(&sched.lists[k]),
                Unit::Block(id) => {
                    let b = job.blocks().expect("blocks of a static plan");
                    let ids = b.block_ids(id, || array.raw_keys());
                    order.extend_from_slice(ids);
                    own_blocks.push((id, ids.len()));
                }
            }
            bounds[t * p + w] = Some((start, order.len()));
            tasks.push((w, (start, order.len())));
            slot_of.push(t * p + w);
        }
        let (driving, session) = match job.side() {
            crate::exec::Side::Driver(s) if job.ships() && spread_key.is_some() => {
                let l = own_only.expect("the driver's layout");
                (Some(l), Some(*s))
            }
            crate::exec::Side::Driver(s) if job.ships() => {
                let s = *s;
                if codec.is_none() {
                    job.stay_local();
                    crate::exec::explain_local(
                        job.side(),
                        state,
                        "its values do not serialize (derive serde's Serialize and Deserialize \
                         for them)",
                    );
                    (None, None)
                } else {
                    let l = Layout {
                        rank: 0,
                        ranks: s.size(),
                        threads: s.threads,
                    };
                    (Some(l), Some(s))
                }
            }
            _ => (None, None),
        };
        // Values an earlier call left on the other ranks stay there when this call may
        // cross with the same entries on every rank; otherwise they come home now.
        // `home`: serial code read them since (all are here, and the ranks' copies equal
        // them). Values the last call left in this call's order stay in it.
        // An order of every entry must hold each once: refused before any value leaves
        // the array (a plan's bug, never a user's).
        if order.len() == len && !crate::array::is_permutation(&order) {
            crate::cluster::job::fail_job(format!(
                "loop `{}`: the call's order does not hold every entry once (please report it)",
                state.spec().name
            ));
        }
        let crate::array::Lent {
            mut values,
            ordered: mut pre,
            away,
        } = match own_only {
            // A worker's copy holds no values: its tasks' come with the call.
            Some(_) => crate::array::Lent {
                values: Vec::new(),
                ordered: Some(
                    std::iter::repeat_with(T::default)
                        .take(order.len())
                        .collect(),
                ),
                away: None,
            },
            None => array.take_for_call(&order),
        };
        let away: Option<(Box<kept::Kept<T>>, bool)> = away.map(|(a, home)| {
            let a = a
                .into_any()
                .downcast::<kept::Kept<T>>()
                .unwrap_or_else(|_| unreachable!("only `Kept` leaves values away"));
            (a, home)
        });
        // Kept only for the same tasks in the same order (so each rank's entries, and the
        // chunks they fill if the call runs here after all, are the same).
        let away = match away {
            Some((a, home))
                if Some(a.layout) == driving && a.order == order && a.tasks == tasks =>
            {
                Some((a, home))
            }
            Some((a, false)) => {
                if let Some(mut p) = pre.take() {
                    crate::array::unpermute(&mut p, &order);
                    values = p;
                }
                crate::array::AwayValues::bring_home(&*a, &mut values);
                None
            }
            _ => None,
        };
        // The driver's array id, on a worker (under which its values are kept).
        let driver_id = served
            .as_ref()
            .and_then(|sv| sv.msg().arrays.get(state.spec().space_array()?))
            .map_or(array.id(), |m| m.id);
        let keys_wire = crate::cluster::wire::KeysWire(&*array);
        let outcome = {
            let keys = Keys(&*array);
            // The values in the call's order: permuted in place when the call runs every
            // entry once (no second array of them for the call's length).
            let mut ordered: Vec<T> = match pre {
                Some(p) => p,
                None if order.len() == len && crate::array::permute(&mut values, &order) => {
                    std::mem::take(&mut values)
                }
                None => order
                    .iter()
                    .map(|&id| std::mem::take(&mut values[id as usize]))
                    .collect(),
            };
            let fail = |e: String| -> ! {
                crate::cluster::job::fail_job(format!("loop `{}`: {e}", state.spec().name))
            };
            let mine = own_only.map_or(0, |l| kept::fingerprint(&order, &tasks, l, l.rank));
            // The key the values are held under on every rank, when the call runs where an
            // array's parts are.
            let mut spread_at = spread_key;
            if let (Some(l), Some(c), Some(sv)) = (serving, &codec, &served) {
                let message = sv.values();
                let got = match spread::note_key(&message) {
                    Some(key) => {
                        spread_at = Some(key);
                        spread::take(c, driver_id, key, mine, &order, &own_blocks, &mut ordered)
                    }
                    None => kept::received(c, &mut ordered, &tasks, l, driver_id, mine, &message),
                };
                if let Err(e) = got {
                    fail(e);
                }
            }
            if let (Some(key), Some(c), None) = (spread_key, &codec, &served)
                && let Err(e) =
                    spread::take(c, driver_id, key, mine, &order, &own_blocks, &mut ordered)
            {
                fail(e);
            }
            let out: Option<Vec<Vec<u8>>> = match (driving, &codec, &away) {
                // Each rank takes its values from what it holds.
                (Some(l), Some(_), _) if spread_key.is_some() => {
                    let key = spread_key.unwrap_or_default();
                    Some((1..l.ranks).map(|_| spread::note(key)).collect())
                }
                // Each rank keeps its values: a note naming its entries instead.
                (Some(l), Some(_), Some(_)) => Some(
                    (1..l.ranks)
                        .map(|r| {
                            let mut note = vec![ranks::KEPT];
                            note.extend_from_slice(
                                &kept::fingerprint(&order, &tasks, l, r).to_le_bytes(),
                            );
                            note
                        })
                        .collect(),
                ),
                (Some(l), Some(c), None) => {
                    let out: Result<Vec<Vec<u8>>, String> = (1..l.ranks)
                        .map(|r| {
                            if c.exact {
                                ranks::encode_rank(c, &ordered, &tasks, l, r)
                            } else {
                                ranks::encode_checked(c, &ordered, &tasks, l, r)
                            }
                        })
                        .collect();
                    match out {
                        Ok(out) => Some(out),
                        Err(e) => {
                            job.stay_local();
                            crate::exec::explain_local(
                                job.side(),
                                state,
                                &format!(
                                    "its values do not cross processes exactly ({e}); values \
                                     must come back from serde's encoding as they were"
                                ),
                            );
                            None
                        }
                    }
                }
                _ => None,
            };
            // What the ranks hold after the call, as sent (kept: as the last call sent).
            let held = match (&away, &out) {
                _ if spread_key.is_some() => 0,
                (Some((a, _)), _) => a.bytes,
                (None, Some(out)) => out.iter().map(|o| o.len().saturating_sub(1) as u64).sum(),
                (None, None) => 0,
            };
            let (result, crossed) = {
                let mut slots: Vec<Mutex<Option<&mut [T]>>> = Vec::with_capacity(bounds.len());
                let mut rest: &mut [T] = &mut ordered;
                let mut at = 0;
                for b in &bounds {
                    let chunk = b.map(|(lo, hi)| {
                        debug_assert_eq!(lo, at);
                        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(hi - lo);
                        rest = tail;
                        at = hi;
                        chunk
                    });
                    slots.push(Mutex::new(chunk));
                }
                let shipped = out.map(|out| kept::ValuesOut {
                    out: Mutex::new(out),
                    back: Mutex::new(Vec::new()),
                    // Values away that a run here must bring into the chunks.
                    kept: away.as_ref().filter(|(_, home)| !home).map(|(a, _)| &**a),
                    away_bytes: away
                        .as_ref()
                        .filter(|(_, home)| !home)
                        .map_or(0, |(a, _)| a.bytes),
                    slots: &slots,
                    slot_of: &slot_of,
                    came_home: Default::default(),
                });
                if let Some(space) = state.spec().space_array() {
                    job.iterated(space, &keys_wire, shipped.as_ref().map(|v| v as _));
                }
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let block = |blk: &mut Block<'_, Keys<'_, T, N>>| {
                        let (t, w) = blk.seq();
                        let chunk = slots[t * p + w]
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .take();
                        // Only a call that ran where an array's parts are, on the driver
                        // alone after all, has tasks without their values here.
                        let chunk = chunk.unwrap_or_else(|| {
                            crate::cluster::job::fail_job(format!(
                                "loop `{}`: a task ran without its values here (please \
                                 report it)",
                                state.spec().name
                            ))
                        });
                        f(blk, chunk)
                    };
                    job.run(&keys, &block);
                }));
                // Every other rank answers a call that crossed (keeping its values).
                let crossed = shipped.as_ref().is_some_and(|v| {
                    let back = v.back.lock().unwrap_or_else(|e| e.into_inner());
                    driving.is_some_and(|l| back.len() + 1 == l.ranks)
                });
                if away.as_ref().is_some_and(|(_, home)| !home)
                    && !crossed
                    && result.is_ok()
                    && !shipped
                        .as_ref()
                        .is_some_and(|v| v.came_home.load(std::sync::atomic::Ordering::Relaxed))
                {
                    fail(
                        "its values stayed on other ranks, but the call ran on the driver \
                         alone without them (please report it)"
                            .into(),
                    );
                }
                if crossed && away.is_some() {
                    state.explain_kept();
                }
                if spread_key.is_some() && crossed {
                    state.explain_in_parts();
                }
                if spread_key.is_some() && !crossed && result.is_ok() {
                    fail(
                        "its array's parts stayed on their ranks, but the call ran on the \
                         driver alone (please report it)"
                            .into(),
                    );
                }
                (result, crossed)
            };
            // A worker keeps its tasks' values for the next call and says so; so does
            // every rank of a call that ran where an array's parts are.
            if let (Some(key), Some(c)) = (spread_at, &codec)
                && own_only.is_some()
                && result.is_ok()
            {
                spread::keep(c, driver_id, key, mine, &order, &mut ordered);
                if let Some(sv) = &served {
                    sv.give_back_values(Vec::new());
                }
            } else if let (Some(l), Some(c), Some(sv)) = (serving, &codec, &served)
                && result.is_ok()
            {
                kept::keep(c, &mut ordered, &tasks, l, driver_id, mine);
                sv.give_back_values(Vec::new());
            }
            (result, crossed, held, ordered)
        };
        let (outcome, crossed, held, ordered) = outcome;
        // The values of the entries other ranks ran stay there.
        let left: Option<Box<dyn crate::array::AwayValues<T>>> =
            match (crossed, &outcome, driving, codec, session) {
                (true, Ok(()), Some(l), Some(c), Some(s)) if spread_key.is_none() => {
                    Some(Box::new(kept::Kept {
                        order: order.clone(),
                        tasks,
                        layout: l,
                        codec: c,
                        session: s,
                        id: array.id(),
                        bytes: held,
                    }))
                }
                _ => None,
            };
        if spread_key.is_some() {
            // Every rank holds its tasks' values: the array's values moved where its parts
            // are, and it comes home through them from now on.
            drop(ordered);
            if outcome.is_ok() {
                array.values_moved_in_parts(crate::array::spread::decode_values::<T, N>);
            }
        } else if own_only.is_some() {
            // A worker kept its tasks' values (`kept::keep`); its copy stays indices.
            drop(ordered);
        } else if order.len() == len {
            // The values stay in this call's order: the next call in it takes them so.
            array.keep_out(ordered, Some(order), left);
        } else {
            for (j, v) in ordered.into_iter().enumerate() {
                values[order[j] as usize] = v;
            }
            array.keep_out(values, None, left);
        }
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
        if times {
            state.ran_plan(len, t.elapsed().as_nanos() as u64, None);
        }
        Ran::plan()
    }
}
