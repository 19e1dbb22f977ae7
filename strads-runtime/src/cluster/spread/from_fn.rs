//! `DistArray::from_fn` on a cluster job's driver, made in parts (docs/cluster.md, "Arrays
//! created in place"): the closure runs on the driver, in row-major order as on threads
//! (it may be any `FnMut`, a sequential generator too), but no process holds the whole
//! array. The rows are split evenly over the ranks in rank order; the driver writes its own
//! rows into an array of the whole shape whose other pages are never written, and sends
//! every other rank its rows in pieces of at most [`PIECE_BYTES`], each by a collective
//! operation of its own ([`PUT`]), made after the closure made the piece: between pieces
//! no operation is under way, so the closure may read other arrays (whose parts a worker
//! serves) or make arrays itself. A rank keeps its rows in an array of the whole shape
//! until its last piece arrives, then gives it to its store as a data operation's array
//! (`dense::keep`); the driver lists the others' rows as parts away (`dense::take`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::super::proto::{Elem, Region, msg::elem_of};
use super::super::session::Session;
use super::{Ctx, DATA_OPS, DataOp, dense, postcard_args};
use crate::array::{DistArray, fresh_id, le, next_index};

/// The smallest array (bytes on the wire) `from_fn` makes in parts on a job's driver:
/// below it the array is made whole there (a collective operation and the parts' later
/// moves cost more than the memory saved).
pub const FROM_FN_IN_PLACE_BYTES: usize = 1 << 20;

/// The most bytes of another rank's rows the driver makes before it sends them.
const PIECE_BYTES: usize = 1 << 20;

/// One piece of a rank's rows: elements `at..at + len` of array `id` go to rank `to`,
/// whose rows end at element `end` (the piece is its last when `at + len == end`).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Piece {
    id: u64,
    shape: Vec<usize>,
    elem: Elem,
    to: usize,
    at: usize,
    len: usize,
    end: usize,
}

/// The arrays this process is receiving rows of (typed `DistArray`s, boxed), by id.
static PENDING: Mutex<Vec<(u64, Box<dyn Any + Send>)>> = Mutex::new(Vec::new());

/// Drops what this process received of array `id` and did not keep yet.
pub(crate) fn forget(id: u64) {
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(i, _)| *i != id);
}

/// Runs `$body` with `$u` the Rust type of element kind `$elem` and `$n` the dims (1 to
/// 4), or evaluates `$none` for more dims.
macro_rules! typed {
    ($elem:expr, $dims:expr, $u:ident, $n:ident, $body:expr, $none:expr) => {{
        macro_rules! dims {
            ($t:ty) => {{
                type $u = $t;
                match $dims {
                    1 => {
                        const $n: usize = 1;
                        $body
                    }
                    2 => {
                        const $n: usize = 2;
                        $body
                    }
                    3 => {
                        const $n: usize = 3;
                        $body
                    }
                    4 => {
                        const $n: usize = 4;
                        $body
                    }
                    _ => $none,
                }
            }};
        }
        match $elem {
            Elem::F32 => dims!(f32),
            Elem::F64 => dims!(f64),
            Elem::U8 => dims!(u8),
            Elem::U16 => dims!(u16),
            Elem::U32 => dims!(u32),
            Elem::U64 => dims!(u64),
            Elem::I8 => dims!(i8),
            Elem::I16 => dims!(i16),
            Elem::I32 => dims!(i32),
            Elem::I64 => dims!(i64),
            Elem::Usize => dims!(usize),
            Elem::Isize => dims!(isize),
        }
    }};
}

/// `DistArray::from_fn(shape, f)` made in parts on a job's driver, or `None` (not a job's
/// driver outside a loop, not numbers, more than 4 dims, or under
/// [`FROM_FN_IN_PLACE_BYTES`]): then the caller makes it whole.
pub(crate) fn from_fn_in_place<T: 'static, const N: usize>(
    shape: [usize; N],
    len: usize,
    f: &mut dyn FnMut([usize; N]) -> T,
) -> Option<DistArray<T, N>> {
    let elem = elem_of::<T>()?;
    if !(1..=4).contains(&N) || len.checked_mul(elem.size())? < FROM_FN_IN_PLACE_BYTES {
        return None;
    }
    let s = super::super::job::data_driver()?;
    let id = fresh_id();
    let mut array = DistArray::<T, N>::reserved(shape, len, id)?;
    // Rows split evenly over the ranks: rank r's elements are `starts[r]..starts[r + 1]`.
    let p = s.size();
    let (rows, per_row) = (shape[0] as u128, (len / shape[0].max(1)) as u128);
    let starts: Vec<usize> = (0..=p)
        .map(|r| (rows * r as u128 / p as u128 * per_row) as usize)
        .collect();
    let mut idx = [0usize; N];
    let made = catch_unwind(AssertUnwindSafe(|| {
        for x in &mut array.making()[..starts[1]] {
            *x = f(idx);
            next_index(&mut idx, &shape);
        }
    }));
    if let Err(panic) = made {
        resume_unwind(panic);
    }
    let piece = (PIECE_BYTES / elem.size()).max(1);
    let mut values: Vec<T> = Vec::with_capacity(piece.min(len));
    for to in 1..p {
        let mut at = starts[to];
        while at < starts[to + 1] {
            let n = piece.min(starts[to + 1] - at);
            values.clear();
            let made = catch_unwind(AssertUnwindSafe(|| {
                for _ in 0..n {
                    values.push(f(idx));
                    next_index(&mut idx, &shape);
                }
            }));
            if let Err(panic) = made {
                dense::abandon([id]);
                resume_unwind(panic);
            }
            let mut bytes = Vec::with_capacity(n * elem.size());
            le::put(&values, &mut bytes);
            let args = Piece {
                id,
                shape: shape.to_vec(),
                elem,
                to,
                at,
                len: n,
                end: starts[to + 1],
            };
            let sent = super::run_with(s, PUT.name, &postcard_args(&args), |ctx: &mut Ctx| {
                let mut out = vec![Vec::new(); ctx.size];
                out[to] = std::mem::take(&mut bytes);
                ctx.all_to_all(out);
                Ok(Vec::new())
            });
            if let Err(e) = sent {
                dense::abandon([id]);
                s.fail(format!(
                    "DistArray::from_fn of shape {shape:?} in parts: {e}"
                ));
            }
            at += n;
        }
    }
    drop(values);
    let counts: Vec<u64> = starts.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
    let bytes: Vec<u64> = counts.iter().map(|&c| c * elem.size() as u64).collect();
    super::explain_made(
        id,
        &format!("DistArray::from_fn {shape:?}"),
        "elements",
        &counts,
        &bytes,
    );
    let parts: Vec<(Region, usize)> = (1..p)
        .map(|r| (Region(vec![(starts[r] as u64, starts[r + 1] as u64)]), r))
        .collect();
    let taken = finish(s, id, elem, N, Box::new(array), parts);
    match taken.map(|a| a.downcast::<DistArray<T, N>>()) {
        Ok(Ok(a)) => Some(*a),
        Ok(Err(_)) => unreachable!("`elem_of` named the array's element type"),
        Err(e) => {
            dense::abandon([id]);
            s.fail(format!(
                "DistArray::from_fn of shape {shape:?} in parts: {e}"
            ))
        }
    }
}

/// The driver's array (`N` = `dims`), its rows of other ranks listed as parts away
/// (`dense::take`).
fn finish(
    s: &'static Session,
    id: u64,
    elem: Elem,
    dims: usize,
    array: Box<dyn Any>,
    parts: Vec<(Region, usize)>,
) -> Result<Box<dyn Any>, String> {
    typed!(
        elem,
        dims,
        U,
        N,
        {
            let a = array
                .downcast::<DistArray<U, N>>()
                .map_err(|_| format!("array {id} is not of the element kind {elem:?}"))?;
            dense::keep(*a);
            dense::take::<U, N>(s, id, parts).map(|a| Box::new(a) as Box<dyn Any>)
        },
        Err(format!("array {id} has more than 4 dims"))
    )
}

#[linkme::distributed_slice(DATA_OPS)]
static PUT: DataOp = DataOp {
    name: "strads::from_fn",
    run: put,
};

/// Every rank: one piece of `DistArray::from_fn`'s rows; rank `to` writes it into its array
/// (made at its first piece) and keeps the array after its last.
fn put(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let piece: Piece = postcard::from_bytes(args)
        .map_err(|e| format!("a piece of rows that does not decode ({e})"))?;
    let got = ctx.all_to_all(vec![Vec::new(); ctx.size]);
    if ctx.rank != piece.to {
        return Ok(Vec::new());
    }
    let bytes = got.into_iter().next().unwrap_or_default();
    let kept = typed!(
        piece.elem,
        piece.shape.len(),
        U,
        N,
        receive::<U, N>(&piece, &bytes),
        Err(format!("an array of {} dims", piece.shape.len()))
    );
    kept.map(|()| Vec::new()).map_err(|e| {
        forget(piece.id);
        format!(
            "DistArray::from_fn's rows {}..{}: {e}",
            piece.at,
            piece.at + piece.len
        )
    })
}

/// Writes `bytes`, elements `piece.at..` of array `piece.id`, into this rank's array.
fn receive<U, const N: usize>(piece: &Piece, bytes: &[u8]) -> Result<(), String>
where
    U: Clone + Default + Send + Sync + 'static,
{
    let shape: [usize; N] = piece
        .shape
        .as_slice()
        .try_into()
        .map_err(|_| "a shape of another rank".to_string())?;
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let at = match pending.iter().position(|(i, _)| *i == piece.id) {
        Some(at) => at,
        None => {
            let a: DistArray<U, N> = dense::zeroed(piece.id, shape)?;
            pending.push((piece.id, Box::new(a)));
            pending.len() - 1
        }
    };
    let a = pending[at]
        .1
        .downcast_mut::<DistArray<U, N>>()
        .ok_or("rows of another element type")?;
    let end = piece
        .at
        .checked_add(piece.len)
        .filter(|&e| e <= a.len() && e <= piece.end);
    let Some(end) = end else {
        return Err(format!("rows beyond the array's {} elements", a.len()));
    };
    if bytes.len() != piece.len * piece.elem.size()
        || !le::get(bytes, &mut a.making()[piece.at..end])
    {
        return Err(format!(
            "{} bytes for {} elements of {} bytes",
            bytes.len(),
            piece.len,
            piece.elem.size()
        ));
    }
    if end == piece.end {
        let (_, a) = pending.swap_remove(at);
        drop(pending);
        let a = a
            .downcast::<DistArray<U, N>>()
            .map_err(|_| "rows of another element type")?;
        dense::keep(*a);
    }
    Ok(())
}
