//! The driver's directory of parts, sans I/O: for each array the driver has sent to other
//! ranks, which ranks hold it whole at which version, which regions other ranks still
//! hold current (held), and which regions only another rank holds (parts away, left
//! there by the last call that wrote them).
//!
//! It decides how an array travels in a call ([`Directory::describe`]) and learns what a
//! call left where ([`Directory::sent_whole`], [`Directory::after_call`]). It holds no
//! array, sends nothing and takes no lock: the session keeps it behind one mutex, and the
//! tests drive it through chains of call plans checked by [`verify`](super::verify).
//!
//! Invariant: an entry is about one version of its array. A region is listed as a copy or
//! as away only at the version the array had after the call that left it; a caller asks
//! with the array's version now, and an entry of another version answers nothing.

use std::collections::HashMap;

use super::itinerary::{Itinerary, PlanArray};
use super::msg::ArrayMeta;
use super::region::Region;

/// Regions of one array on other ranks: `(region, rank)`.
pub type Parts = Vec<(Region, usize)>;

/// The driver's knowledge of where the parts of its arrays are.
#[derive(Clone, Debug, Default)]
pub struct Directory {
    /// `id → (version, ranks)`: ranks holding the whole array at that version.
    holders: HashMap<u64, (u64, Vec<usize>)>,
    /// `id → (version, parts)`: of arrays written across processes, the regions other
    /// ranks still hold current after the last such call.
    held: HashMap<u64, (u64, Parts)>,
    /// `id → (version, parts)`: of arrays written across processes, the regions only
    /// another rank holds after the last such call; the next call takes them from there,
    /// unless something fetched them home first.
    away: HashMap<u64, (u64, Parts)>,
    /// `id → (what it is, bytes, bytes per element)`: every array a call described, kept
    /// after the driver drops it, for the memory lines of `STRADS_EXPLAIN`.
    sizes: HashMap<u64, (String, u64, u64)>,
}

/// What [`Directory::describe`] needs to know of one array in a call, besides its meta.
#[derive(Clone, Copy, Debug)]
pub struct Use {
    /// The call's schedule reads the array by parts (windows that are not the whole array)
    /// and writes it nowhere.
    pub read_by_parts: bool,
    /// The array's version before the call (the meta's version, unless the call is about
    /// to change it).
    pub now: u64,
    /// Ranks in the job.
    pub ranks: usize,
}

impl Directory {
    /// The parts of array `id` that only other ranks hold, when they are of version `now`
    /// (nothing on the driver read or wrote the array since the call that left them).
    pub fn away_at(&self, id: u64, now: u64) -> Option<Parts> {
        self.away
            .get(&id)
            .filter(|(v, _)| *v == now)
            .map(|(_, p)| p.clone())
    }

    /// Fills in how array `m` travels in a call: who holds it whole, whether it travels by
    /// regions (`shipped`), and the regions other ranks hold of it (`held`). `away` is what
    /// [`away_at`](Self::away_at) answered and the driver left away (empty: the array is
    /// home).
    pub fn describe(&mut self, m: &mut ArrayMeta, away: Parts, u: Use) {
        // Said once per array: the driver's per-call path builds no text.
        self.sizes.entry(m.id).or_insert_with(|| size_of(m));
        m.away = away;
        m.holders = match self.holders.get(&m.id) {
            Some((v, ranks)) if *v == m.version && !m.shipped => ranks.clone(),
            _ => vec![0],
        };
        let partial = m.holders.len() < u.ranks;
        // A dense array the call only reads, of which other ranks still hold parts at
        // this version (left by a call that wrote it): it travels by regions, so a rank
        // gets only what it lacks instead of the whole array. Its transfers all come from
        // the driver at the call's start (no task writes it), and a worker applies them
        // before lending it.
        if !m.shipped
            && !m.sparse
            && partial
            && self
                .held
                .get(&m.id)
                .is_some_and(|(v, c)| *v == m.version && !c.is_empty())
        {
            m.shipped = true;
        }
        // A dense array the blocks read by parts travels by regions too: a rank receives
        // the rows its blocks read, none when it runs no block.
        if !m.shipped && !m.sparse && u.read_by_parts && partial {
            m.shipped = true;
        }
        if m.shipped {
            // What other ranks still hold of the array as it is now: the parts an earlier
            // written call left there, or the whole array a read-only call sent, while
            // nothing changed the array since.
            if let Some((_, regions)) = self.held.get(&m.id).filter(|(v, _)| *v == u.now) {
                m.held = regions.clone();
            }
            if let Some((_, ranks)) = self.holders.get(&m.id).filter(|(v, _)| *v == u.now) {
                let len: u64 = m.shape.iter().map(|&d| d as u64).product();
                m.held.extend(
                    ranks
                        .iter()
                        .filter(|&&r| r != 0)
                        .map(|&r| (Region::all(len), r)),
                );
            }
        }
    }

    /// A call sent the arrays it does not ship by regions whole to every rank that lacked
    /// them: every rank holds them now.
    pub fn sent_whole(&mut self, metas: &[ArrayMeta], ranks: usize) {
        for m in metas.iter().filter(|m| !m.shipped) {
            self.holders.insert(m.id, (m.version, (0..ranks).collect()));
        }
    }

    /// After a call: what other ranks now hold of the arrays it shipped by regions, at
    /// their version now. Returns, per array of the call left partly away, the parts only
    /// other ranks hold: the array must fetch them before anything on the driver reads it.
    pub fn after_call(&mut self, plan: &Itinerary, metas: &[ArrayMeta]) -> Vec<(usize, Parts)> {
        let mut left = Vec::new();
        for (a, m) in metas.iter().enumerate().filter(|(_, m)| m.shipped) {
            self.held.insert(m.id, (m.version, plan.held[a].clone()));
            let parts = plan.away(a);
            if parts.is_empty() {
                self.away.remove(&m.id);
            } else {
                self.away.insert(m.id, (m.version, parts.clone()));
                left.push((a, parts));
            }
        }
        left
    }

    /// A data operation made array `m` on every rank (`spread::dense`): `parts` are the
    /// regions only other ranks hold of it, at `m.version`. Their copies stay current once
    /// the array comes home (`came_home` keeps them), so a call that only reads it sends
    /// a rank what it lacks.
    pub fn made_away(&mut self, m: &ArrayMeta, parts: Parts) {
        self.sizes.entry(m.id).or_insert_with(|| size_of(m));
        self.set_away(m.id, m.version, parts.clone());
        self.held.insert(m.id, (m.version, parts));
    }

    /// Serial code wrote part of array `id` on the driver, which holds it now: at `version`,
    /// only `parts` are away (none: the array is home). What other ranks held of it as
    /// copies is forgotten (some of it is stale now).
    pub fn set_away(&mut self, id: u64, version: u64, parts: Parts) {
        self.held.remove(&id);
        self.holders.remove(&id);
        if parts.is_empty() {
            self.away.remove(&id);
        } else {
            self.away.insert(id, (version, parts));
        }
    }

    /// Serial code wrote array `id` on the driver again where it holds it: the parts away
    /// are the same, now at `version` (what other ranks held as copies is forgotten).
    pub fn rekey(&mut self, id: u64, version: u64) {
        self.held.remove(&id);
        self.holders.remove(&id);
        if let Some((v, _)) = self.away.get_mut(&id) {
            *v = version;
        }
    }

    /// Array `id`'s parts came home (fetched): nothing of it is away any more. The other
    /// ranks keep their copies.
    pub fn came_home(&mut self, id: u64) {
        self.away.remove(&id);
    }

    /// Every array a call described (dropped since or not), by id: what it is and its
    /// bytes.
    pub fn sizes(&self) -> Vec<(u64, String, u64)> {
        let mut out: Vec<(u64, String, u64)> = self
            .sizes
            .iter()
            .map(|(&id, (what, bytes, _))| (id, what.clone(), *bytes))
            .collect();
        out.sort_by_key(|&(id, ..)| id);
        out
    }

    /// Bytes of array `id` that only other ranks hold now (parts away; parts created in
    /// place that no rank has made count as away too: nothing holds them).
    pub fn away_bytes(&self, id: u64) -> u64 {
        let (Some((_, _, elem)), Some((_, parts))) = (self.sizes.get(&id), self.away.get(&id))
        else {
            return 0;
        };
        elem * parts.iter().map(|(r, _)| r.len()).sum::<u64>()
    }

    /// The driver dropped array `id`: the ranks drop theirs, and the directory forgets it.
    pub fn forget(&mut self, id: u64) {
        self.holders.remove(&id);
        self.held.remove(&id);
        self.away.remove(&id);
    }

    /// Whether the directory knows anything of array `id`.
    pub fn knows(&self, id: u64) -> bool {
        self.holders.contains_key(&id) || self.held.contains_key(&id) || self.away.contains_key(&id)
    }
}

/// What array `m` is, its bytes (a sparse array's indices counted, 4 bytes each) and
/// the bytes of one element.
fn size_of(m: &ArrayMeta) -> (String, u64, u64) {
    let elem = m.elem.size() as u64;
    if m.sparse {
        let index = 4 * m.shape.len() as u64;
        let what = format!(
            "sparse {:?}, {} entries of {:?}",
            m.shape, m.entries, m.elem
        );
        (what, m.entries * (elem + index), elem)
    } else {
        let len: u64 = m.shape.iter().map(|&d| d as u64).product();
        (
            format!("dense {:?} of {:?}", m.shape, m.elem),
            len * elem,
            elem,
        )
    }
}

/// The call plan's view of the arrays the driver describes (the same on every rank).
pub fn plan_arrays(metas: &[ArrayMeta]) -> Vec<PlanArray> {
    metas
        .iter()
        .map(|m| PlanArray {
            shape: m.shape.clone(),
            shipped: m.shipped,
            holders: m.holders.clone(),
            away: m.away.clone(),
            held: m.held.clone(),
        })
        .collect()
}

#[cfg(test)]
#[path = "directory_tests.rs"]
mod tests;
