//! The driver's arrays with parts on other ranks: the fetch that brings them home when
//! serial code reads them, and the lease of a call that reads them where they are
//! (`array::away` says why both are sound).

use std::marker::PhantomData;

use super::proto::msg::elem_of;
use super::proto::{ArrayMeta, Itinerary, MADE, Recipe, Region};
use super::session::Session;
use crate::array::away::{Copied, Fetch, Fetcher, Lease, Meanwhile, SavedAway};
use crate::array::le::get;
use crate::array::spans::{Spans, window};

/// The fetch of `parts` of array `id` (elements at `base`, of `shape`): parts on another
/// rank come from it, parts made in place (`MADE`) are made here from `recipe`; all of
/// them, or those around elements serial code reads.
pub(super) fn fetch<T: 'static>(
    base: usize,
    shape: Vec<usize>,
    recipe: Option<Recipe>,
    session: &'static Session,
    id: u64,
    parts: Vec<(Region, usize)>,
) -> Fetch {
    Box::new(Parts::<T> {
        base,
        shape,
        recipe,
        session,
        id,
        parts,
        _elem: PhantomData,
    })
}

/// The parts of an array away, and how to bring them (see [`fetch`]).
struct Parts<T> {
    base: usize,
    shape: Vec<usize>,
    recipe: Option<Recipe>,
    session: &'static Session,
    id: u64,
    parts: Vec<(Region, usize)>,
    _elem: PhantomData<fn() -> T>,
}

impl<T: 'static> Parts<T> {
    /// Brings `parts` here; `whole`: they are every element away (the array is home after).
    fn bring(&self, parts: Vec<(Region, usize)>, whole: bool) {
        let (base, id, session) = (self.base, self.id, self.session);
        let len: usize = self.shape.iter().product();
        let (made, parts): (Vec<_>, Vec<_>) = parts.into_iter().partition(|(_, r)| *r == MADE);
        for (region, _) in &made {
            let done = self
                .recipe
                .ok_or_else(|| "no recipe".to_string())
                .and_then(|recipe| {
                    // SAFETY: as for the fetched parts below.
                    unsafe { make_at(base as *mut T, &self.shape, region, recipe) }
                });
            if let Err(e) = done {
                session.fail(format!("the parts of array {id} made here failed: {e}"));
            }
        }
        if parts.is_empty() {
            if whole {
                session.directory().came_home(id);
            }
            return;
        }
        let fetched = session.fetch(id, &parts, whole);
        for ((region, r), bytes) in parts.iter().zip(fetched) {
            // SAFETY: `base` is the array's elements (valid for writes while the array
            // lives, and the array drops this fetch with it); no reference to the elements
            // away exists (`array::away`), and the regions brought leave out what serial
            // code read (`read`), which may be referenced.
            if let Err(e) = unsafe { write_at(base as *mut T, len, region, &bytes) } {
                session.fail(format!("the parts rank {r} sent back do not fit: {e}"));
            }
        }
    }

    /// `parts` cut to elements `lo..hi`, without those in `read`; the empty ones dropped.
    fn cut(&self, lo: usize, hi: usize, read: &Spans) -> Vec<(Region, usize)> {
        self.parts
            .iter()
            .filter_map(|(region, r)| {
                let inside: Vec<(u64, u64)> = region
                    .0
                    .iter()
                    .map(|&(a, b)| (a.max(lo as u64), b.min(hi as u64)))
                    .filter(|&(a, b)| a < b)
                    .collect();
                let left = Region(read.outside(&inside));
                (!left.is_empty()).then_some((left, *r))
            })
            .collect()
    }
}

impl<T: 'static> Parts<T> {
    fn window(&self, lo: usize, hi: usize) -> (usize, usize) {
        let size = elem_of::<T>().map_or(std::mem::size_of::<T>(), |e| e.size());
        window(&self.shape, size, lo, hi)
    }
}

impl<T: 'static> Fetcher for Parts<T> {
    fn save_into(
        &self,
        read: &Spans,
        path_of: &dyn Fn(usize, usize) -> String,
        meanwhile: Meanwhile<'_>,
    ) -> Option<Vec<SavedAway>> {
        let parts = self.cut(0, usize::MAX, read);
        if parts.iter().any(|(_, r)| *r == MADE) {
            // Parts no rank has made yet: the caller copies the array (they are made here).
            return None;
        }
        let paths: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(i, (_, r))| path_of(*r, i))
            .collect();
        let regions: Vec<&[(u64, u64)]> = parts.iter().map(|(r, _)| &r.0[..]).collect();
        self.session
            .save(self.id, &parts, &paths, &mut || meanwhile(&regions));
        let size = elem_of::<T>().map_or(std::mem::size_of::<T>(), |e| e.size()) as u64;
        Some(
            parts
                .into_iter()
                .map(|(region, rank)| {
                    let len = region.0.iter().map(|&(lo, hi)| hi - lo).sum::<u64>() * size;
                    SavedAway {
                        rank,
                        region: region.0,
                        len,
                    }
                })
                .collect(),
        )
    }

    fn digest_away(&self, read: &Spans) -> Option<Vec<(u64, u64, crate::checkpoint::Poly)>> {
        let (made, parts): (Vec<_>, Vec<_>) = self
            .cut(0, usize::MAX, read)
            .into_iter()
            .partition(|(_, r)| *r == MADE);
        // Parts no rank has made yet: made here from the recipe, a chunk at a time (nothing
        // kept).
        let mut out = Vec::new();
        for (region, _) in &made {
            for &(lo, hi) in &region.0 {
                out.push((lo, hi, self.recipe?.digest::<T>(&self.shape, lo, hi)?));
            }
        }
        let sums = self.session.digest(self.id, &parts);
        out.extend(parts.iter().zip(sums).flat_map(|((region, _), sums)| {
            region.0.iter().zip(sums).map(|(&(lo, hi), p)| (lo, hi, p))
        }));
        Some(out)
    }

    fn all(self: Box<Self>, read: &Spans) {
        let parts = self.cut(0, usize::MAX, read);
        self.bring(parts, true);
    }

    fn away_within(&self, lo: usize, hi: usize) -> bool {
        let (lo, hi) = (lo as u64, hi as u64);
        self.parts
            .iter()
            .any(|(region, _)| region.0.iter().any(|&(x, y)| x < hi && y > lo))
    }

    fn peek(&self, lo: usize, hi: usize, read: &Spans) -> Option<Copied> {
        let size = elem_of::<T>()?.size();
        let (a, b) = self.window(lo, hi);
        let (made, parts): (Vec<_>, Vec<_>) = self
            .cut(a, b, read)
            .into_iter()
            .partition(|(_, r)| *r == MADE);
        // Parts no rank has made yet: their copy is made here from the recipe (the bits
        // the ranks would make), and the array stays as it was.
        let made: Vec<(u64, u64)> = made.into_iter().flat_map(|(region, _)| region.0).collect();
        let mut copied = Copied {
            window: (a as u64, b as u64),
            bytes: match made.is_empty() {
                true => Vec::new(),
                false => self.recipe?.copy::<T>(&self.shape, &made)?,
            },
            ranges: made,
        };
        let copies = match parts.is_empty() {
            true => Vec::new(),
            false => self.session.copy(self.id, &parts),
        };
        for ((region, r), bytes) in parts.into_iter().zip(copies) {
            let n: u64 = region.0.iter().map(|&(x, y)| y - x).sum();
            if bytes.len() as u64 != n * size as u64 {
                self.session.fail(format!(
                    "rank {r} sent {} bytes of array {}'s {n} elements of {size} bytes",
                    bytes.len(),
                    self.id
                ));
            }
            copied.ranges.extend(region.0);
            copied.bytes.extend(bytes);
        }
        Some(copied)
    }

    fn write_through(&mut self, items: &mut Vec<(usize, Vec<u8>)>, version: u64) {
        // Each element's part, by rank: parts made nowhere yet stay with the caller.
        let owner = |o: u64| {
            self.parts.iter().position(|(region, r)| {
                *r != MADE && region.0.iter().any(|&(x, y)| x <= o && o < y)
            })
        };
        // In offset order, the last write of an element kept (as in serial order).
        let mut by_part = vec![std::collections::BTreeMap::new(); self.parts.len()];
        items.retain_mut(|(o, bytes)| match owner(*o as u64) {
            Some(p) => {
                by_part[p].insert(*o as u64, std::mem::take(bytes));
                false
            }
            None => true,
        });
        let mut parts = Vec::new();
        let mut data = Vec::new();
        for (p, got) in by_part.into_iter().enumerate() {
            let got: Vec<(u64, Vec<u8>)> = got.into_iter().collect();
            if got.is_empty() {
                continue;
            }
            // Messages of at most 16 MiB of elements each.
            let each = (16 << 20) / got[0].1.len().max(1);
            for chunk in got.chunks(each.max(1)) {
                let mut ranges: Vec<(u64, u64)> = Vec::new();
                let mut bytes = Vec::new();
                for (o, b) in chunk {
                    match ranges.last_mut() {
                        Some((_, hi)) if *hi == *o => *hi += 1,
                        _ => ranges.push((*o, o + 1)),
                    }
                    bytes.extend_from_slice(b);
                }
                parts.push((Region(ranges), self.parts[p].1));
                data.push(bytes);
            }
        }
        if !parts.is_empty() {
            self.session.write(self.id, &parts, data);
            // The parts away are the same, at the array's new version.
            self.session.directory().rekey(self.id, version);
        }
    }

    fn around(&mut self, lo: usize, hi: usize, read: &Spans) -> Option<(usize, usize)> {
        let (a, b) = self.window(lo, hi);
        let parts = self.cut(a, b, read);
        self.bring(parts, false);
        Some((a, b))
    }

    fn take(&mut self, lo: usize, hi: usize, read: &Spans, version: u64) -> Option<(usize, usize)> {
        let (a, b) = self.window(lo, hi);
        let inside = |region: &Region| region.0.iter().any(|&(x, y)| x < b as u64 && y > a as u64);
        if !self.parts.iter().any(|(region, _)| inside(region)) {
            // The window is here already (taken before, or never away): the parts away
            // are the same, at the array's new version.
            self.session.directory().rekey(self.id, version);
            return (!self.parts.is_empty()).then_some((a, b));
        }
        let parts = self.cut(a, b, read);
        self.bring(parts, false);
        // The window lives here now: neither this fetch nor the next call takes it from
        // the ranks, whose copies are stale once serial code writes it.
        let outside = |region: &Region| {
            let mut out = Vec::new();
            for &(lo, hi) in &region.0 {
                if lo < a as u64 {
                    out.push((lo, hi.min(a as u64)));
                }
                if hi > b as u64 {
                    out.push((lo.max(b as u64), hi));
                }
            }
            Region(out)
        };
        self.parts = self
            .parts
            .iter()
            .map(|(region, r)| (outside(region), *r))
            .filter(|(region, _)| !region.is_empty())
            .collect();
        self.session
            .directory()
            .set_away(self.id, version, self.parts.clone());
        // Nothing away any more: the array is home (an empty fetch ends it).
        (!self.parts.is_empty()).then_some((a, b))
    }
}

/// A call's lease on an array it only reads (see `WireArray::lease`): the parts its
/// workers read are written in before they start, and what stays away is told after.
pub trait Leased {
    /// Writes `bytes` (little-endian elements) into `region`.
    fn write(&self, region: &Region, bytes: &[u8]) -> Result<(), String>;
    /// Makes `region` from `recipe`.
    fn make(&self, region: &Region, recipe: Recipe) -> Result<(), String>;
    /// After the call: `parts` are still away (none: the array is home); the lease ends.
    fn settle(
        self: Box<Self>,
        session: &'static Session,
        id: u64,
        recipe: Option<Recipe>,
        parts: Vec<(Region, usize)>,
    );
}

/// The lease on a dense array of `T`.
pub(crate) struct LeasedDense<'a, T> {
    lease: Lease<'a>,
    shape: Vec<usize>,
    _elem: PhantomData<fn() -> T>,
}

impl<'a, T> LeasedDense<'a, T> {
    pub(crate) fn new(lease: Lease<'a>, shape: Vec<usize>) -> Self {
        LeasedDense {
            lease,
            shape,
            _elem: PhantomData,
        }
    }
}

impl<T: 'static> Leased for LeasedDense<'_, T> {
    fn write(&self, region: &Region, bytes: &[u8]) -> Result<(), String> {
        let len = self.shape.iter().product();
        let read = self.lease.read();
        if read.is_empty() {
            // SAFETY: the array's elements, under the lease: the regions written are away,
            // so no reference reaches them, and the lease's workers have not started.
            return unsafe { write_at(self.lease.base() as *mut T, len, region, bytes) };
        }
        // What serial code read home is current and may be referenced: only the rest of
        // the region is written, from its place in `bytes`.
        let size = fitting::<T>(region, bytes)?;
        let mut at = 0;
        for &(lo, hi) in &region.0 {
            for (a, b) in read.outside(&[(lo, hi)]) {
                let from = at + (a - lo) as usize * size;
                let part = Region(vec![(a, b)]);
                let to = from + (b - a) as usize * size;
                // SAFETY: as above, for elements away and not read home.
                unsafe { write_at(self.lease.base() as *mut T, len, &part, &bytes[from..to])? };
            }
            at += (hi - lo) as usize * size;
        }
        Ok(())
    }

    fn make(&self, region: &Region, recipe: Recipe) -> Result<(), String> {
        let region = Region(self.lease.read().outside(&region.0));
        // SAFETY: as in `write`: the elements away and not read home.
        unsafe { make_at(self.lease.base() as *mut T, &self.shape, &region, recipe) }
    }

    fn settle(
        self: Box<Self>,
        session: &'static Session,
        id: u64,
        recipe: Option<Recipe>,
        parts: Vec<(Region, usize)>,
    ) {
        let fetch = (!parts.is_empty()).then(|| {
            fetch::<T>(
                self.lease.base(),
                self.shape.clone(),
                recipe,
                session,
                id,
                parts,
            )
        });
        self.lease.settle(fetch);
    }
}

/// Driver: writes into the leased arrays the parts this process's workers read, before
/// they start (sent by the ranks that hold them, or made here).
pub(super) fn lease_parts(
    session: &Session,
    plan: &Itinerary,
    metas: &[ArrayMeta],
    leases: &[Option<Box<dyn Leased + '_>>],
) {
    for tid in plan.initial() {
        let tr = &plan.transfers[tid];
        let Some(lease) = leases.get(tr.array).and_then(Option::as_ref) else {
            continue;
        };
        if tr.to != 0 {
            continue;
        }
        let part = session.wait(|core| core.take_part(tid));
        let done = part.apply(
            metas[tr.array].made,
            lease,
            |lease, bytes| lease.write(&tr.region, bytes),
            |lease, recipe| lease.make(&tr.region, recipe),
        );
        if let Err(e) = done {
            session.fail(format!(
                "transfer {tid} from rank {} does not fit array {}: {e}",
                tr.from, tr.array
            ));
        }
        session.with(|core| core.applied(tid));
    }
}

/// Writes `bytes` (little-endian elements) into `region` of the `len` elements at `ptr`.
///
/// # Safety
/// `ptr` must be valid for writes of `len` elements, and no other thread may access the
/// elements of `region` meanwhile.
pub(super) unsafe fn write_at<T: 'static>(
    ptr: *mut T,
    len: usize,
    region: &Region,
    bytes: &[u8],
) -> Result<(), String> {
    let size = fitting::<T>(region, bytes)?;
    let mut at = 0;
    for &(lo, hi) in &region.0 {
        if hi as usize > len || lo > hi {
            return Err(format!("elements {lo}..{hi} of an array of {len}"));
        }
        let n = (hi - lo) as usize;
        // SAFETY: inside the array (checked above), valid and unshared (the caller's
        // contract).
        let d = unsafe { std::slice::from_raw_parts_mut(ptr.add(lo as usize), n) };
        get(&bytes[at..at + n * size], d);
        at += n * size;
    }
    Ok(())
}

/// Makes `region` of the array of `shape` at `ptr` from `recipe`.
///
/// # Safety
/// `ptr` must be valid for writes of the array's elements, and no other thread may access
/// the elements of `region` meanwhile.
pub(super) unsafe fn make_at<T: 'static>(
    ptr: *mut T,
    shape: &[usize],
    region: &Region,
    recipe: Recipe,
) -> Result<(), String> {
    let len: usize = shape.iter().product();
    for &(lo, hi) in &region.0 {
        if hi as usize > len || lo > hi {
            return Err(format!("elements {lo}..{hi} of an array of {len}"));
        }
        // SAFETY: inside the array (checked above), valid and unshared (the caller's
        // contract).
        let d = unsafe { std::slice::from_raw_parts_mut(ptr.add(lo as usize), (hi - lo) as usize) };
        recipe.make(shape, lo as usize, d)?;
    }
    Ok(())
}

/// The element size of `T` on the wire, when `bytes` hold exactly `region`'s elements.
fn fitting<T: 'static>(region: &Region, bytes: &[u8]) -> Result<usize, String> {
    let size = elem_of::<T>().ok_or("an array without a wire type")?.size();
    if region.len() as usize * size != bytes.len() {
        return Err(format!(
            "{} bytes for {} elements of {size} bytes",
            bytes.len(),
            region.len()
        ));
    }
    Ok(size)
}
