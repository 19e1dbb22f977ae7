//! Dense indices agreed by a cluster job's ranks for ids each met in its own ranges of the
//! files: every id gets its index in order of first appearance across the files, one after
//! the other, as one process reading them would give it (CSV ratings' users and items, the
//! names of a knowledge graph's text triples).
//!
//! No rank holds every id. Each id has an owner rank (a hash of the id); the owner learns
//! where the id first appears, the ranks count their ids that appear first with them, and
//! the owner hands every rank the indices of the ids it met: five rounds of messages of a
//! rank's own ids.

use std::collections::HashMap;
use std::hash::Hash;

use crate::cluster::spread::Ctx;
use crate::data::load::U64BuildHasher;

/// An id the ranks agree on: a number, or a name. Its bytes on the wire, read back, and a
/// hash of it that every process computes alike (whatever its build: no hasher's seed or
/// version), which names its owner.
pub(crate) trait Key: Clone + Eq + Hash {
    /// Appends the id's bytes.
    fn put(&self, out: &mut Vec<u8>);
    /// The id at `*at` of `b`, moving `at` past it; `None` when `b` is cut short there or
    /// is not an id.
    fn take(b: &[u8], at: &mut usize) -> Option<Self>;
    /// A number every process makes of the id alike.
    fn stable_hash(&self) -> u64;
}

impl Key for u64 {
    fn stable_hash(&self) -> u64 {
        *self
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(b: &[u8], at: &mut usize) -> Option<u64> {
        let x = b.get(*at..*at + 8)?;
        *at += 8;
        Some(u64::from_le_bytes(x.try_into().expect("8 bytes")))
    }
}

impl Key for String {
    /// FNV-1a over the name's bytes.
    fn stable_hash(&self) -> u64 {
        self.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
        })
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        out.extend_from_slice(self.as_bytes());
    }
    fn take(b: &[u8], at: &mut usize) -> Option<String> {
        let n = usize::try_from(u64::take(b, at)?).ok()?;
        let bytes = b.get(*at..at.checked_add(n)?)?;
        *at += n;
        String::from_utf8(bytes.to_vec()).ok()
    }
}

/// The rank that owns `id`'s index.
fn owner<K: Key>(id: &K, size: usize) -> usize {
    let mut z = id.stable_hash().wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) % size as u64) as usize
}

fn put_u64s(xs: impl IntoIterator<Item = u64>, out: &mut Vec<u8>) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn u64s(b: &[u8], from: usize) -> Result<Vec<u64>, String> {
    if b.len() % 8 != 0 {
        return Err(format!("a message of ids from rank {from} is cut short"));
    }
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// Where an id appears first: the file, then the rank (files one after the other, each
/// read by the ranks in order).
type Source = (u32, u32);

/// The dense index of each id this rank met, and how many distinct ids all ranks met.
///
/// `ids` are the ids this rank met, in order of first appearance within its ranges;
/// `ends[f]` is how many of them it had met by the end of its range of file `f` (so the
/// ids `ends[f - 1]..ends[f]` appear first, here, in file `f`). Every rank calls this
/// together, with its own ids. Also says, for each id, whether it appears first here.
///
/// A message that does not fit (cut short) stops the job: the ranks would no longer take
/// part in the same rounds. Too many distinct ids is an error every rank gives alike.
pub(super) fn agree<K: Key>(ctx: &mut Ctx, ids: &[K], ends: &[usize]) -> Result<Agreed, String> {
    match rounds(ctx, ids, ends) {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(too_many)) => Err(too_many),
        Err(garbled) => ctx.fail(garbled),
    }
}

/// What the ranks agreed: the index of each id this rank met, how many distinct ids all
/// ranks met, and whether each of this rank's ids appears first here.
pub(super) type Agreed = (Vec<u32>, usize, Vec<bool>);

/// [`agree`]'s rounds: `Err` for a message that does not fit, `Ok(Err)` for too many ids.
fn rounds<K: Key>(
    ctx: &mut Ctx,
    ids: &[K],
    ends: &[usize],
) -> Result<Result<Agreed, String>, String> {
    let (me, size) = (ctx.rank, ctx.size);
    let file_of = |i: usize| ends.partition_point(|&e| e <= i) as u32;
    // Round 1: each id, with the file it first appears in here, to its owner.
    let mut sent: Vec<Vec<usize>> = vec![Vec::new(); size];
    for (i, id) in ids.iter().enumerate() {
        sent[owner(id, size)].push(i);
    }
    let out = sent
        .iter()
        .map(|is| {
            let mut b = Vec::with_capacity(12 * is.len());
            for &i in is {
                ids[i].put(&mut b);
                b.extend_from_slice(&file_of(i).to_le_bytes());
            }
            b
        })
        .collect();
    let got = ctx.all_to_all(out);
    // The owner's side: each of its ids' first source, and what each rank sent it.
    let mut first: HashMap<K, (Source, u32), U64BuildHasher> = HashMap::default();
    let mut asked: Vec<Vec<K>> = Vec::with_capacity(size);
    for (r, b) in got.iter().enumerate() {
        let cut = || format!("a message of ids from rank {r} is cut short");
        let (mut at, mut these) = (0, Vec::new());
        while at < b.len() {
            let id = K::take(b, &mut at).ok_or_else(cut)?;
            let f = b.get(at..at + 4).ok_or_else(cut)?;
            at += 4;
            let source = (u32::from_le_bytes(f.try_into().expect("4")), r as u32);
            let e = first.entry(id.clone()).or_insert((source, u32::MAX));
            e.0 = e.0.min(source);
            these.push(id);
        }
        asked.push(these);
    }
    // Round 2: to each rank, one bit per id it sent: whether it appears first there.
    let out = asked
        .iter()
        .enumerate()
        .map(|(r, these)| {
            let mut bits = vec![0u8; these.len().div_ceil(8)];
            for (k, id) in these.iter().enumerate() {
                if first[id].0.1 == r as u32 {
                    bits[k / 8] |= 1 << (k % 8);
                }
            }
            bits
        })
        .collect();
    let got = ctx.all_to_all(out);
    let mut new = vec![false; ids.len()];
    for (o, bits) in got.iter().enumerate() {
        for (k, &i) in sent[o].iter().enumerate() {
            let bit = bits
                .get(k / 8)
                .ok_or_else(|| format!("rank {o}'s answer about ids is cut short"))?;
            new[i] = bit & (1 << (k % 8)) != 0;
        }
    }
    // Round 3: how many ids appear first here, per file; the offsets of every source.
    let mut counts = vec![0u64; ends.len()];
    for (i, _) in new.iter().enumerate().filter(|&(_, &n)| n) {
        counts[file_of(i) as usize] += 1;
    }
    let mut b = Vec::new();
    put_u64s(counts.iter().copied(), &mut b);
    let all: Vec<Vec<u64>> = ctx
        .all_gather(b)
        .iter()
        .enumerate()
        .map(|(r, b)| u64s(b, r))
        .collect::<Result<_, _>>()?;
    if all.iter().any(|c| c.len() != ends.len()) {
        return Err("ranks counted ids of different numbers of files".into());
    }
    let mut next = vec![0u64; ends.len()];
    let mut total = 0u64;
    for (f, slot) in next.iter_mut().enumerate() {
        for (r, c) in all.iter().enumerate() {
            if r == me {
                *slot = total;
            }
            total += c[f];
        }
    }
    let Some(total) = usize::try_from(total)
        .ok()
        .filter(|&t| t <= u32::MAX as usize + 1)
    else {
        return Ok(Err(format!(
            "{total} distinct ids: at most 2^32 fit an index"
        )));
    };
    let mut index = vec![u32::MAX; ids.len()];
    for (i, _) in new.iter().enumerate().filter(|&(_, &n)| n) {
        let f = file_of(i) as usize;
        index[i] = next[f] as u32;
        next[f] += 1;
    }
    // Round 4: the indices of the ids that appear first here, to their owners.
    let out = sent
        .iter()
        .map(|is| {
            let mut b = Vec::new();
            for &i in is.iter().filter(|&&i| new[i]) {
                b.extend_from_slice(&index[i].to_le_bytes());
            }
            b
        })
        .collect();
    let got = ctx.all_to_all(out);
    for (r, b) in got.iter().enumerate() {
        let mut at = b.chunks_exact(4);
        for id in &asked[r] {
            let e = first.get_mut(id).expect("asked ids are known");
            if e.0.1 == r as u32 {
                let x = at
                    .next()
                    .ok_or_else(|| format!("rank {r}'s indices are cut short"))?;
                e.1 = u32::from_le_bytes(x.try_into().expect("4"));
            }
        }
    }
    // Round 5: every rank gets the index of each id it sent.
    let out = asked
        .iter()
        .map(|these| {
            let mut b = Vec::with_capacity(4 * these.len());
            for id in these {
                b.extend_from_slice(&first[id].1.to_le_bytes());
            }
            b
        })
        .collect();
    let got = ctx.all_to_all(out);
    for (o, b) in got.iter().enumerate() {
        if b.len() != 4 * sent[o].len() {
            return Err(format!("rank {o}'s indices are cut short"));
        }
        for (&i, x) in sent[o].iter().zip(b.chunks_exact(4)) {
            index[i] = u32::from_le_bytes(x.try_into().expect("4"));
        }
    }
    Ok(Ok((index, total, new)))
}
