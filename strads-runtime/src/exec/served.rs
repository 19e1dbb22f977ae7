//! A sparse iteration space across processes by blocks: the driver sends each worker
//! rank only the blocks its workers run (`cluster::call::BlocksWire`), once per contents
//! and schedule; the worker runs the driver's schedule on them instead of planning from a
//! whole copy of the space, so it holds its part of the data, not all of it.

use std::sync::Arc;

use super::{Call, StaticPlan};
use crate::cluster;
use crate::plan::Unit;
use crate::space::Space;

/// The driver's side: a call's space and its blocks.
pub(crate) struct SpaceBlocks<'s, S: Space> {
    pub(crate) space: &'s S,
    pub(crate) blocks: &'s S::Blocks,
    /// The space array's id and version.
    pub(crate) key: (u64, u64),
}

impl<S: Space> cluster::call::BlocksWire for SpaceBlocks<'_, S> {
    fn bytes(&self, ids: &[usize]) -> Vec<u8> {
        self.space
            .blocks_bytes(self.blocks, ids)
            .expect("checked before the blocks were shipped")
    }

    fn key(&self) -> (u64, u64) {
        self.key
    }
}

/// On a worker rank serving a call whose space crosses by blocks: the driver's schedule
/// with this rank's blocks (received with this call, or kept from the loop's last one).
/// `None` otherwise: the call plans here.
pub(crate) fn by_blocks<S: Space>(call: &Call<'_>, space: &S) -> Option<StaticPlan<S::Blocks>> {
    let (Some(msg), Some(s)) = (cluster::call::serving(), cluster::session::worker()) else {
        return None;
    };
    if msg.blocks == 0 || call.ship.is_none() || call.replay.is_some() {
        return None;
    }
    let schedule = cluster::call::their_schedule(s, &msg);
    let fail = |e: String| -> ! { s.fail(format!("loop `{}`: {e}", msg.name)) };
    // Blocks only: no lists of iterations, no ownership windows.
    if let Err(e) = schedule.check_against(msg.arrays.len(), 0, 0) {
        fail(format!("the driver's schedule does not fit here ({e})"));
    }
    let space_id = call
        .state
        .spec()
        .space_array()
        .and_then(|i| msg.arrays.get(i))
        .map_or(0, |m| m.id);
    let blocks: Arc<S::Blocks> = if msg.blocks_sent {
        let bytes = s.wait(|core| core.take_values(msg.seq, 0));
        let ids = cluster::call::rank_blocks(&schedule, s.rank, msg.threads);
        let at_least = schedule
            .steps
            .iter()
            .flat_map(|st| st.tasks.iter().flatten())
            .filter_map(|t| match t.unit {
                Unit::Block(id) => Some(id + 1),
                Unit::Ids(_) => None,
            })
            .max()
            .unwrap_or(0);
        let blocks = match space.blocks_from_bytes(at_least, &ids, &bytes) {
            Some(Ok(b)) => Arc::new(b),
            Some(Err(e)) => fail(format!("the driver's blocks of its space: {e}")),
            None => fail("the driver sent blocks of a space that does not cross by blocks".into()),
        };
        cluster::store::keep_blocks(&msg.name, msg.blocks, space_id, blocks.clone(), bytes.len());
        blocks
    } else {
        match cluster::store::kept_blocks(&msg.name, msg.blocks).map(|b| b.downcast()) {
            Some(Ok(b)) => b,
            _ => fail("the driver sent no blocks and this rank keeps none under their key".into()),
        }
    };
    Some(StaticPlan {
        schedule: (*schedule).clone(),
        blocks,
        summary: String::new(),
        // A worker rank runs the driver's decision.
        timed: false,
        alone: None,
    })
}
