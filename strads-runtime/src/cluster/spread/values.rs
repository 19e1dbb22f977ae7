//! The values of a spread array that `iter_mut()` calls run where its parts are: once its
//! entries and values were traded so that each rank holds the blocks its workers run
//! (`strads::exchange_values`), each rank keeps, by the driver's array id, the positions
//! in the array of the entries it holds and their values: coded as they were traded until
//! a call takes them, then as the last call left them (typed, in its tasks' order). The
//! driver's serial code reading the array brings them home (`strads::gather_values`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::builtin::{check_grid, decode};
use super::{Ctx, DATA_OPS, DataOp, keep_traded, with_part};
use crate::cluster::store::KeptValues;

/// This rank's values of a spread array an `iter_mut()` call runs where they are.
pub(crate) struct Held {
    /// The key of the grid whose blocks they are (the traded blocks' key).
    pub key: u64,
    /// The entries' positions in the array, in the order of the values.
    pub ids: Vec<u32>,
    pub state: State,
}

/// How a rank holds its values of a spread array.
pub(crate) enum State {
    /// As traded: the held blocks' values one after another in the array's codec, block
    /// `b`'s from byte `starts[b]` to `starts[b + 1]`.
    Coded { bytes: Vec<u8>, starts: Vec<usize> },
    /// As the last call left them, in its tasks' order (`fingerprint`: which entries, in
    /// which order, as `itermut::kept::fingerprint` names them).
    Typed {
        values: Box<dyn KeptValues>,
        fingerprint: u64,
    },
}

impl Held {
    fn bytes(&self) -> u64 {
        let values = match &self.state {
            State::Coded { bytes, starts } => (bytes.len() + 8 * starts.len()) as u64,
            State::Typed { values, .. } => values.bytes(),
        };
        4 * self.ids.len() as u64 + values
    }
}

static HELD: Mutex<BTreeMap<u64, Held>> = Mutex::new(BTreeMap::new());

/// Keeps this rank's values of the driver's spread array `id`, replacing any.
pub(crate) fn keep(id: u64, held: Held) {
    let bytes = held.bytes();
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, held);
    crate::cluster::store::note_spread_values(id, bytes);
}

/// Takes this rank's values of array `id` (a call runs them), if it holds any.
pub(crate) fn take(id: u64) -> Option<Held> {
    HELD.lock().unwrap_or_else(|e| e.into_inner()).remove(&id)
}

/// Drops this rank's values of array `id` (it came home, or the driver dropped it).
pub(crate) fn forget(id: u64) {
    let held = HELD.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    if held.is_some() {
        crate::cluster::store::note_spread_values(id, 0);
    }
}

/// Bytes of the values held, over every array.
pub(crate) fn held_bytes() -> u64 {
    let held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.values().map(Held::bytes).sum()
}

/// This rank's values of array `id` as `strads::gather_values` sends them: their count
/// (`u64`), their positions in the array (`u32`s), then the values in the array's codec.
pub(crate) fn encode(id: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    write(id, &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

/// [`encode`]'s bytes to `w`, a slice at a time from where they are held (a checkpoint's
/// piece): the count of the values and the bytes written.
pub(crate) fn write(
    id: u64,
    w: &mut dyn FnMut(&[u8]) -> Result<(), String>,
) -> Result<(u64, u64), String> {
    let held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let Some(h) = held.get(&id) else {
        return Err(format!("this rank holds no values of array {id}"));
    };
    let mut len = 0u64;
    let mut put = |b: &[u8]| {
        len += b.len() as u64;
        w(b)
    };
    put(&(h.ids.len() as u64).to_le_bytes())?;
    let mut buf = Vec::new();
    for ids in h.ids.chunks(16_384) {
        buf.clear();
        for &i in ids {
            buf.extend_from_slice(&i.to_le_bytes());
        }
        put(&buf)?;
    }
    match &h.state {
        State::Coded { bytes, .. } => put(bytes)?,
        State::Typed { values, .. } => values.write(&mut put)?,
    }
    Ok((h.ids.len() as u64, len))
}

/// Each rank sends every other the entries of its part in the blocks that rank's workers
/// run, with their values, and keeps the blocks it runs: their indices as the loop's
/// blocks, their values as [`Held`] (coded, until a call takes them).
#[linkme::distributed_slice(DATA_OPS)]
static EXCHANGE_VALUES: DataOp = DataOp {
    name: "strads::exchange_values",
    run: exchange_values,
};

fn exchange_values(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    type Args = (
        u64,
        u64,
        Vec<usize>,
        Vec<usize>,
        Vec<Vec<usize>>,
        usize,
        usize,
    );
    let (id, key, shape, dims, bounds, workers, threads): Args = decode(args, "exchange_values")?;
    check_grid(&dims, &bounds)?;
    if dims.iter().zip(&bounds).any(|(&d, b)| {
        shape
            .get(d)
            .is_none_or(|&e| b.first() != Some(&0) || b.last() != Some(&e))
    }) {
        return Err(format!(
            "a grid of bounds {bounds:?} over dims {dims:?} of the shape {shape:?}"
        ));
    }
    if workers == 0 || threads == 0 || workers / threads > ctx.size {
        return Err(format!(
            "{workers} workers of {threads} threads on {} ranks",
            ctx.size
        ));
    }
    let (block_of, n) = crate::space::grid(&dims, &bounds);
    let owner = |b: usize| crate::space::owner(b, &bounds, workers, threads);
    let out = with_part(id, |p| p.trade_out(&block_of, n, &owner, ctx.size)).and_then(|r| r);
    // Every rank takes part in the round, or none does.
    let out = ctx.agree(out)?;
    let messages = ctx.all_to_all(out);
    let me = ctx.rank;
    let fits =
        |k: &[u32]| k.len() == shape.len() && k.iter().zip(&shape).all(|(&i, &e)| (i as usize) < e);
    let traded = with_part(id, |p| {
        p.trade_in(messages, n, &|b| owner(b) == me, &|k| {
            fits(k).then(|| block_of(k))
        })
    })??;
    // The parts' values, and the blocks a loop that only reads the array traded (copies of
    // them), are stale from here: the values are where the loop's calls leave them.
    super::parts::with_part_mut(id, |p| p.drop_values())?;
    crate::cluster::store::forget_traded(id);
    keep_traded(id, key, traded.blocks, traded.index_bytes);
    keep(
        id,
        Held {
            key,
            ids: traded.ids,
            state: State::Coded {
                bytes: traded.bytes,
                starts: traded.starts,
            },
        },
    );
    Ok(Vec::new())
}

/// Each rank sends its part's indices and the values it holds (`encode`), and lets the
/// array go: it is the driver's from now on.
#[linkme::distributed_slice(DATA_OPS)]
static GATHER_VALUES: DataOp = DataOp {
    name: "strads::gather_values",
    run: |_, args| {
        let id: u64 = decode(args, "gather_values")?;
        let mut out = with_part(id, |p| p.encode_keys())?;
        out.push(1);
        out.extend(encode(id)?);
        super::forget(id);
        crate::cluster::store::forget_traded(id);
        Ok(out)
    },
};

/// Each rank makes its part of a new array `id` from its part of array `counts`: the same
/// indices, entry `i` holding its count of copies of `fill` (`Share::repeat`).
#[linkme::distributed_slice(DATA_OPS)]
static REPEATED: DataOp = DataOp {
    name: "strads::repeated",
    run: |ctx, args| {
        let (counts, id, fill): (u64, u64, Vec<u8>) = decode(args, "repeated")?;
        let part = with_part(counts, |p| p.repeat(&fill)).and_then(|r| r);
        // Every rank keeps its part, or none does.
        let part = ctx.agree(part)?;
        let made = (part.facts(), part.bytes());
        super::keep(id, part);
        Ok(super::postcard_args(&made))
    },
};
