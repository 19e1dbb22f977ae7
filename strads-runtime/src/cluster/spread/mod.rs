//! Data in parts on the ranks (docs/design.md, "Arrays"): a sparse array made in place, each
//! rank holding a contiguous range of its entries, in rank order, so that the parts one
//! after the other are the array's entries in their order.
//!
//! Everything here is a collective operation ([`DataOp`]): the driver asks every worker to
//! run it (`proto::collective`), runs it itself as rank 0, and each rank trades bytes with
//! the others in rounds ([`Ctx`]). The operations are registered by name at link time, as
//! loops are: the built-in ones here (bring the parts home, copy a window of entries,
//! count a histogram or the entries of each block, trade entries so that each rank holds the blocks its workers
//! run) and the data sets made in place (`data::generate`, `data::load`).
//!
//! - `share`: a rank's part of an array (`Share`); `parts`: the parts kept on this process.

#[macro_use]
mod typed;
mod coded;
pub(crate) mod dense;
mod from_entries;
mod from_fn;
mod parts;
mod restore;
mod saved;
mod share;
pub(crate) mod values;

pub(crate) use from_entries::{send_entries, sparse as entries_made};
pub(crate) use from_fn::{dense as rows_made, send_rows};
pub(crate) use restore::restore;

use std::any::Any;
use std::sync::Arc;

use super::proto::collective;
use super::session::Session;
use crate::array::SparseArray;
use crate::array::spread::{Spread, SpreadOps};
pub(crate) use parts::{keep, with_part};
pub(crate) use share::{Facts, part};

/// Drops this process's part of array `id`, sparse or dense (the driver dropped it).
pub(crate) fn forget(id: u64) {
    parts::forget(id);
    dense::forget(id);
    typed::forget(id);
    values::forget(id);
}

/// The parts of data made in place this process holds, and their bytes: spread arrays'
/// parts, and what it received of arrays being made in parts.
pub(crate) fn held() -> (usize, u64) {
    let (parts, bytes) = parts::held();
    let (receiving, receiving_bytes) = typed::pending();
    let values = values::held_bytes();
    (parts + receiving, bytes + receiving_bytes + values)
}

/// A collective operation every rank runs between calls, by name: `run(ctx, args)` gives
/// this rank's answer, or an error the driver's caller gets.
#[derive(Debug)]
pub struct DataOp {
    pub name: &'static str,
    pub run: fn(&mut Ctx, &[u8]) -> Result<Vec<u8>, String>,
}

/// Every collective data operation linked into this binary.
#[linkme::distributed_slice]
pub static DATA_OPS: [DataOp];

/// One rank's side of a collective operation: who it is, and the rounds in which it trades
/// bytes with the others.
#[derive(Debug)]
pub struct Ctx {
    pub rank: usize,
    pub size: usize,
    session: &'static Session,
    req: u64,
    round: u64,
}

impl Ctx {
    /// Sends rank `r` the bytes `out[r]` and returns what every rank sent this one, by
    /// rank (this rank's own `out[rank]` in its place). Every rank calls it the same number
    /// of times.
    pub fn all_to_all(&mut self, mut out: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        assert_eq!(out.len(), self.size, "one message per rank");
        self.round += 1;
        let (req, round, me) = (self.req, self.round, self.rank);
        let mine = std::mem::take(&mut out[me]);
        self.session.with(|core| {
            for (to, data) in out.into_iter().enumerate().filter(|&(to, _)| to != me) {
                collective::send_round(core, req, round, to, data);
            }
        });
        let got = self
            .session
            .wait(|core| collective::take_round(core, req, round));
        let mut all: Vec<Vec<u8>> = Vec::with_capacity(self.size);
        let mut got = got.into_iter();
        for r in 0..self.size {
            if r == me {
                all.push(Vec::new());
            } else {
                all.push(got.next().map(|(_, d)| d).unwrap_or_default());
            }
        }
        all[me] = mine;
        all
    }

    /// Sends every rank `mine` and returns what each sent, by rank.
    pub fn all_gather(&mut self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        self.all_to_all(vec![mine; self.size])
    }

    /// Sends every rank `mine` (postcard) and returns what each sent, decoded, by rank; a
    /// rank's bytes that do not decode (`what` names them) stop the job, since the ranks
    /// would no longer take part in the same rounds.
    pub fn gather_each<A>(&mut self, mine: &A, what: &str) -> Vec<A>
    where
        A: serde::Serialize + serde::de::DeserializeOwned,
    {
        let all = self.all_gather(postcard_args(mine));
        all.iter()
            .enumerate()
            .map(|(r, b)| postcard::from_bytes(b).map_err(|e| format!("rank {r}'s {what}: {e}")))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| self.fail(e))
    }

    /// Stops the job: a message from another rank does not fit the operation (the ranks
    /// would no longer take part in the same rounds, so none may go on alone).
    pub fn fail(&self, message: String) -> ! {
        self.session.fail(format!(
            "rank {} in a collective data operation: {message}",
            self.rank
        ))
    }

    /// Whether every rank got this far without an error: the first rank's error (by rank)
    /// when one did not, on every rank, so that all stop the operation together.
    pub fn agree<T>(&mut self, r: Result<T, String>) -> Result<T, String> {
        let mine = match &r {
            Ok(_) => Vec::new(),
            Err(e) => {
                let mut b = vec![1];
                b.extend_from_slice(e.as_bytes());
                b
            }
        };
        let all = self.all_gather(mine);
        if let Some((rank, e)) = all.iter().enumerate().find(|(_, b)| !b.is_empty()) {
            let text = String::from_utf8_lossy(&e[1..]).into_owned();
            return Err(format!("rank {rank} of the job: {text}"));
        }
        r
    }
}

/// An answer on the wire: `0` then the bytes, or `1` then the error.
fn encode_answer(r: Result<Vec<u8>, String>) -> Vec<u8> {
    match r {
        Ok(mut b) => {
            b.insert(0, 0);
            b
        }
        Err(e) => {
            let mut b = vec![1];
            b.extend_from_slice(e.as_bytes());
            b
        }
    }
}

fn decode_answer(mut b: Vec<u8>, rank: usize) -> Result<Vec<u8>, String> {
    match b.first() {
        Some(0) => {
            b.remove(0);
            Ok(b)
        }
        Some(1) => Err(String::from_utf8_lossy(&b[1..]).into_owned()),
        _ => Err(format!(
            "rank {rank} answered a data operation with nothing"
        )),
    }
}

fn find(name: &str) -> Option<&'static DataOp> {
    DATA_OPS.iter().find(|o| o.name == name)
}

/// Driver: runs operation `op` with `args` on every rank; every rank's answer, by rank,
/// or the first error (the driver's own first, then by rank).
pub(crate) fn run(s: &'static Session, op: &str, args: Vec<u8>) -> Result<Vec<Vec<u8>>, String> {
    let f = find(op).unwrap_or_else(|| panic!("strads: no data operation `{op}` is linked in"));
    let run = f.run;
    run_with(s, op, &args, |ctx| run(ctx, &args))
}

/// [`run`], with `mine` as the driver's side of the operation (the workers run `op`'s
/// registered function): for a driver side that holds what no worker has, as the values
/// `DistArray::from_fn` made.
pub(crate) fn run_with(
    s: &'static Session,
    op: &str,
    args: &[u8],
    mine: impl FnOnce(&mut Ctx) -> Result<Vec<u8>, String>,
) -> Result<Vec<Vec<u8>>, String> {
    let req = s.with(|core| collective::request(core, op, args));
    let mut ctx = Ctx {
        rank: 0,
        size: s.size(),
        session: s,
        req,
        round: 0,
    };
    let mine = mine(&mut ctx);
    let others = s.wait(|core| collective::take_replies(core, req));
    let mut all = vec![mine?];
    for (i, b) in others.into_iter().enumerate() {
        all.push(decode_answer(b, i + 1)?);
    }
    Ok(all)
}

/// Worker: runs operation `req` the driver asked for and answers it.
pub(crate) fn serve(s: &'static Session, req: u64, op: &str, args: &[u8]) {
    let Some(f) = find(op) else {
        s.fail(format!(
            "rank {} runs {}, which has no data operation `{op}`: run the same program on \
             every rank",
            s.rank,
            super::call::this_program()
        ));
    };
    let mut ctx = Ctx {
        rank: s.rank,
        size: s.size(),
        session: s,
        req,
        round: 0,
    };
    let answer = encode_answer((f.run)(&mut ctx, args));
    s.with(|core| collective::reply(core, req, answer));
}

/// Each rank's answer decoded (postcard).
pub(crate) fn decode_each<A: serde::de::DeserializeOwned>(
    answers: &[Vec<u8>],
) -> Result<Vec<A>, String> {
    answers
        .iter()
        .enumerate()
        .map(|(r, b)| {
            postcard::from_bytes(b).map_err(|e| format!("rank {r}'s answer does not decode ({e})"))
        })
        .collect()
}

/// Driver: a sparse array made in place, each rank keeping its part under `id`, with the
/// [`Facts`] of each rank's part.
pub(crate) fn made<T, const N: usize>(
    s: &'static Session,
    id: u64,
    shape: [usize; N],
    facts: &[Facts],
) -> Result<SparseArray<T, N>, String>
where
    T: Clone + Send + Sync + 'static,
{
    let decode = crate::array::spread::decode_parts::<T, N>;
    made_with(s, id, shape, facts, false, decode)
}

/// [`made`] for an array of lists of numbers, whose parts hold them in their codec.
pub(crate) fn made_coded<P, const N: usize>(
    s: &'static Session,
    id: u64,
    shape: [usize; N],
    facts: &[Facts],
) -> Result<SparseArray<Vec<P>, N>, String>
where
    P: Clone + Default + Send + Sync + 'static,
{
    let decode = crate::array::spread::decode_values::<Vec<P>, N>;
    made_with(s, id, shape, facts, true, decode)
}

fn made_with<T, const N: usize>(
    s: &'static Session,
    id: u64,
    shape: [usize; N],
    facts: &[Facts],
    coded: bool,
    decode: crate::array::spread::Decode<T, N>,
) -> Result<SparseArray<T, N>, String>
where
    T: Clone + Send + Sync + 'static,
{
    let each = (std::mem::size_of::<T>() + 4 * N) as u64;
    let counts: Vec<u64> = facts.iter().map(|f| f.count).collect();
    let nnz: u64 = counts.iter().sum();
    let bytes: Vec<u64> = counts.iter().map(|&n| n * each).collect();
    explain_made(id, &format!("sparse {shape:?}"), "entries", &counts, &bytes);
    let nnz = usize::try_from(nnz).map_err(|_| format!("{nnz} entries"))?;
    let sorted = Facts::in_order(facts);
    let ops: Arc<dyn SpreadOps> = Arc::new(Handle::new(s, id, coded));
    Ok(SparseArray::from_spread(
        shape,
        nnz,
        sorted,
        id,
        Spread { ops, decode },
    ))
}

/// Says (`STRADS_EXPLAIN`) that array `id` (`what`) was made in place, with the `unit`s of
/// each rank's part and their bytes, by rank.
pub(crate) fn explain_made(id: u64, what: &str, unit: &str, counts: &[u64], bytes: &[u64]) {
    if !crate::config::get().explain {
        return;
    }
    let by_rank: Vec<String> = counts
        .iter()
        .zip(bytes)
        .map(|(n, &b)| format!("{n} ({:.1} MiB)", b as f64 / (1 << 20) as f64))
        .collect();
    crate::log::say!(
        Explain,
        "strads data: array {id} ({what}) made in place; its {unit} by rank: {}",
        by_rank.join(", ")
    );
}

/// Keeps this rank's part of a spread array `id` made of `keys` and `values` (its entries
/// in order): the part's facts, for the driver.
pub(crate) fn keep_new<T, const N: usize>(id: u64, keys: Vec<[u32; N]>, values: Vec<T>) -> Facts
where
    T: Clone + Send + Sync + 'static,
{
    let part = part(keys, values);
    let facts = part.facts();
    keep(id, part);
    facts
}

/// The driver's side of a spread array: the collective operations on its parts.
struct Handle {
    s: &'static Session,
    id: u64,
    /// The parts' checksums, once asked for (the parts change only when a checkpoint's
    /// values are restored into them).
    digest: std::sync::Mutex<Option<[crate::checkpoint::Poly; 2]>>,
    /// Whether the parts hold values in a codec (`SpreadOps::coded`).
    coded: bool,
    /// Whether `iter_mut()` calls changed the values where they are (`SpreadOps::moved`).
    moved: std::sync::atomic::AtomicBool,
    /// Where each rank's part starts among the entries (`P + 1` bounds), once a window of
    /// them was read (the parts' entries never change): later windows need no count.
    starts: std::sync::Mutex<Option<Vec<u64>>>,
}

impl Handle {
    fn new(s: &'static Session, id: u64, coded: bool) -> Self {
        Handle {
            s,
            id,
            digest: Default::default(),
            coded,
            moved: Default::default(),
            starts: Default::default(),
        }
    }

    fn run(&self, op: &str, args: Vec<u8>) -> Vec<Vec<u8>> {
        run(self.s, op, args).unwrap_or_else(|e| {
            self.s
                .fail(format!("a spread array's parts on the ranks ({op}): {e}"))
        })
    }

    /// Every rank's counts of `len` slots (`builtin::encode_counts`), summed.
    fn sums(&self, op: &str, args: Vec<u8>, len: usize) -> Vec<u64> {
        let mut sum = vec![0u64; len];
        for (r, b) in self.run(op, args).iter().enumerate() {
            if !builtin::add_counts(b, &mut sum) {
                self.s
                    .fail(format!("rank {r}'s counts of {op} do not decode"));
            }
        }
        sum
    }
}

impl SpreadOps for Handle {
    fn window(&self, lo: u64, hi: u64) -> Vec<Vec<u8>> {
        builtin::window(self.s, self.id, &self.starts, lo, hi)
    }

    fn gather(&self) -> Vec<Vec<u8>> {
        let op = if self.moved() {
            "strads::gather_values"
        } else {
            "strads::gather"
        };
        self.run(op, postcard_args(&self.id))
    }

    fn exchange_values(
        &self,
        shape: &[usize],
        dims: &[usize],
        bounds: &[Vec<usize>],
        workers: usize,
        threads: usize,
    ) -> (u64, Arc<dyn Any + Send + Sync>) {
        // Not the key of a trade of the entries alone (`exchange`): these blocks are a
        // loop's indices, kept with the values.
        let key = grid_key(self.id, dims, bounds, workers, threads) ^ 2;
        let args = postcard_args(&(self.id, key, shape, dims, bounds, workers, threads));
        // From here the values are where the loop's calls leave them, never in the parts.
        self.values_moved();
        self.run("strads::exchange_values", args);
        let blocks = super::store::kept_blocks(&traded_name(key), key).unwrap_or_else(|| {
            self.s
                .fail("the driver kept none of its blocks of a spread array".into())
        });
        (key, blocks)
    }

    fn values_moved(&self) {
        self.moved.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn moved(&self) -> bool {
        self.moved.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn coded(&self) -> bool {
        self.coded
    }

    fn repeat(&self, fill: &[u8]) -> Result<(Arc<dyn SpreadOps>, u64), String> {
        if self.moved() {
            return Err("counts whose values `iter_mut()` calls changed where they are".into());
        }
        let id = crate::array::fresh_id();
        let answers = run(
            self.s,
            "strads::repeated",
            postcard_args(&(self.id, id, fill)),
        )?;
        let made: Vec<(Facts, u64)> = decode_each(&answers)?;
        let counts: Vec<u64> = made.iter().map(|(f, _)| f.count).collect();
        let bytes: Vec<u64> = made.iter().map(|&(_, b)| b).collect();
        explain_made(id, "SparseArray::repeated", "entries", &counts, &bytes);
        Ok((Arc::new(Handle::new(self.s, id, true)), id))
    }

    fn histogram(&self, dim: usize, extent: usize) -> Vec<u64> {
        let args = postcard_args(&(self.id, dim, extent));
        self.sums("strads::histogram", args, extent)
    }

    fn block_counts(&self, dims: &[usize], bounds: &[Vec<usize>]) -> Vec<u64> {
        let n = bounds.iter().map(|b| b.len().saturating_sub(1)).product();
        let args = postcard_args(&(self.id, dims, bounds));
        self.sums("strads::block_counts", args, n)
    }

    fn exchange(
        &self,
        dims: &[usize],
        bounds: &[Vec<usize>],
        workers: usize,
        threads: usize,
    ) -> (u64, Arc<dyn Any + Send + Sync>) {
        let key = grid_key(self.id, dims, bounds, workers, threads);
        let args = postcard_args(&(self.id, key, dims, bounds, workers, threads));
        self.run("strads::exchange", args);
        let blocks = super::store::kept_blocks(&traded_name(key), key).unwrap_or_else(|| {
            self.s
                .fail("the driver kept none of its blocks of a spread array".into())
        });
        (key, blocks)
    }

    fn digest(&self) -> [crate::checkpoint::Poly; 2] {
        use crate::checkpoint::Poly;
        let mut digest = self.digest.lock().unwrap_or_else(|e| e.into_inner());
        *digest.get_or_insert_with(|| {
            let answers = self.run("strads::digest", postcard_args(&self.id));
            let mut whole = [Poly::new(), Poly::new()];
            for (r, b) in answers.iter().enumerate() {
                let d: [Poly; 2] = postcard::from_bytes(b).unwrap_or_else(|e| {
                    self.s.fail(format!(
                        "rank {r}'s checksums of a spread array do not decode ({e})"
                    ))
                });
                whole = [whole[0].then(d[0]), whole[1].then(d[1])];
            }
            whole
        })
    }

    fn save_values(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        home: &mut dyn FnMut(&[u8]),
    ) -> Result<(u64, u64, Vec<crate::array::away::SavedAway>), String> {
        let paths: Vec<String> = (0..self.s.size())
            .map(|r| {
                if r == 0 {
                    String::new()
                } else {
                    path_of(r, r - 1)
                }
            })
            .collect();
        // The checkpoint's writer waits for every rank's piece to be on disk (`Msg::Saved`).
        self.s.with(|core| core.expect_saved(&paths[1..]));
        let args = postcard_args(&(self.id, paths));
        let answers = run_with(self.s, saved::SAVE_VALUES.name, &args, |_| {
            saved::save_home(self.id, home)
        })?;
        let each: Vec<(u64, u64)> = decode_each(&answers)?;
        let away = each[1..]
            .iter()
            .enumerate()
            .map(|(i, &(count, len))| crate::array::away::SavedAway {
                rank: i + 1,
                region: vec![(0, count)],
                len,
            })
            .collect();
        Ok((each[0].0, each[0].1, away))
    }

    fn restore_values(
        &self,
        pieces: &[crate::array::made::Piece],
        layout: crate::array::spread::Layout,
    ) -> Result<(), String> {
        let args = postcard_args(&(self.id, layout, pieces));
        run(self.s, saved::RESTORE_VALUES.name, args)?;
        // The parts hold the values again, and other ones than their checksums said.
        self.moved
            .store(false, std::sync::atomic::Ordering::Relaxed);
        *self.digest.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }

    fn fail(&self, message: String) -> ! {
        self.s.fail(message)
    }
}

/// The arguments of an operation, postcard.
pub(crate) fn postcard_args<A: serde::Serialize>(a: &A) -> Vec<u8> {
    postcard::to_allocvec(a).expect("arguments encode")
}

/// The key array `id`'s blocks of a grid, for a layout of ranks, are traded and kept under:
/// the same on every rank of the same build.
fn grid_key(id: u64, dims: &[usize], bounds: &[Vec<usize>], workers: usize, threads: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (id, dims, bounds, workers, threads).hash(&mut h);
    h.finish() | 1
}

/// The name traded blocks are kept under in the store of blocks (one set per grid).
pub(crate) fn traded_name(key: u64) -> String {
    format!("traded:{key:x}")
}

/// Keeps this rank's traded blocks of array `id` under `key`.
fn keep_traded(id: u64, key: u64, blocks: Arc<dyn Any + Send + Sync>, bytes: usize) {
    super::store::keep_blocks(&traded_name(key), key, id, blocks, bytes);
}

mod builtin;
