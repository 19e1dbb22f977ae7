//! What a call across processes sends each rank of its own, besides the array regions of
//! its plan: an `iter_mut()` loop's values (to the rank whose task owns them, which keeps
//! them and answers with an empty message),
//! and the blocks of a sparse iteration space (each rank gets those it runs).

use crate::plan::{Schedule, Unit};

/// The values of an `iter_mut()` call's array, which travel to the rank whose task owns
/// them (the indices of its entries go as the blocks of its space).
pub trait ValuesWire: Sync {
    /// Driver: the values of rank `rank`'s tasks, encoded.
    fn out(&self, rank: usize) -> Vec<u8>;
    /// Driver: what rank `rank` answered after its tasks ran (empty: it keeps the values).
    fn back(&self, rank: usize, bytes: Vec<u8>);
    /// Driver: the call runs in this process alone after all: values an earlier call left
    /// on other ranks come home into the tasks' chunks first.
    fn home(&self) {}
    /// Driver: bytes of values an earlier call left on other ranks, as they were sent
    /// (what [`home`](Self::home) would bring back).
    fn away_bytes(&self) -> u64 {
        0
    }
}

/// The blocks of a call's sparse iteration space.
pub trait BlocksWire: Sync {
    /// The bytes of blocks `ids` (sorted); `with_ids`: with their entries' positions in
    /// the serial order (for a recorded call).
    fn bytes(&self, ids: &[usize], with_ids: bool) -> Vec<u8>;
    /// The space array's id and version: with the schedule, what names the blocks.
    fn key(&self) -> (u64, u64);
    /// The key every rank keeps its blocks under when they were traded among the ranks
    /// (a spread array's): nothing is sent.
    fn traded(&self) -> Option<u64> {
        None
    }
}

/// The rank that runs each block of `schedule` (`threads` workers per rank), by block id;
/// `None` when some block runs on two ranks.
pub(crate) fn block_ranks(schedule: &Schedule, threads: usize) -> Option<Vec<Option<usize>>> {
    let mut ranks: Vec<Option<usize>> = Vec::new();
    for (w, t) in schedule
        .steps
        .iter()
        .flat_map(|s| s.tasks.iter().enumerate())
    {
        let Some(Unit::Block(id)) = t.as_ref().map(|t| &t.unit) else {
            continue;
        };
        if ranks.len() <= *id {
            ranks.resize(id + 1, None);
        }
        let r = w / threads.max(1);
        match ranks[*id] {
            Some(other) if other != r => return None,
            _ => ranks[*id] = Some(r),
        }
    }
    Some(ranks)
}

/// The blocks of `schedule` that rank `rank`'s workers run (`threads` per rank), sorted.
pub(crate) fn rank_blocks(schedule: &Schedule, rank: usize, threads: usize) -> Vec<usize> {
    let mut ids: Vec<usize> = schedule
        .steps
        .iter()
        .flat_map(|s| s.tasks.iter().enumerate())
        .filter(|(w, _)| w / threads.max(1) == rank)
        .filter_map(|(_, t)| match t.as_ref()?.unit {
            Unit::Block(id) => Some(id),
            Unit::Ids(_) => None,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}
