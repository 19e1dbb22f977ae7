//! `DistArray::from_fn` made in parts on a cluster job's driver (`array::inparts` makes
//! the values and the pieces): each piece of a rank's rows is a collective operation of
//! its own ([`PUT`]), in which the driver sends it to its rank. A rank keeps its rows in
//! an array of the whole shape whose other pages are never written, until its last piece
//! arrives; then the array goes to its store as a data operation's (`dense::keep`). The
//! driver lists the others' rows as parts away (`dense::take`).

use std::any::Any;

use serde::{Deserialize, Serialize};

use super::super::proto::{Elem, Region};
use super::super::session::Session;
use super::{Ctx, DATA_OPS, DataOp, dense, postcard_args};
use crate::array::{DistArray, le};

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

/// Driver: sends rank `to` elements `at..at + bytes / size` of array `id`, whose rows on
/// that rank end at `end`; a rank that cannot keep them stops the job.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_rows(
    s: &'static Session,
    id: u64,
    elem: Elem,
    shape: &[usize],
    to: usize,
    at: usize,
    end: usize,
    bytes: Vec<u8>,
) {
    let args = Piece {
        id,
        shape: shape.to_vec(),
        elem,
        to,
        at,
        len: bytes.len() / elem.size(),
        end,
    };
    let what = format!("DistArray::from_fn of shape {shape:?}");
    super::typed::send_piece(s, PUT.name, &postcard_args(&args), id, to, bytes, &what);
}

/// Driver: its array `id` of `shape` (`array`, with `starts[r]..starts[r + 1]` on rank
/// `r`) listed with the others' elements as parts away; said under `STRADS_EXPLAIN`.
pub(crate) fn dense(
    s: &'static Session,
    id: u64,
    elem: Elem,
    shape: &[usize],
    array: Box<dyn Any>,
    starts: &[usize],
) -> Box<dyn Any> {
    let counts: Vec<u64> = starts.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
    let bytes: Vec<u64> = counts.iter().map(|&c| c * elem.size() as u64).collect();
    super::explain_made(
        id,
        &format!("DistArray::from_fn {shape:?}"),
        "elements",
        &counts,
        &bytes,
    );
    let parts: Vec<(Region, usize)> = (1..starts.len() - 1)
        .map(|r| (Region(vec![(starts[r] as u64, starts[r + 1] as u64)]), r))
        .collect();
    let taken = typed!(
        elem,
        shape.len(),
        U,
        N,
        {
            let a = array
                .downcast::<DistArray<U, N>>()
                .map_err(|_| format!("array {id} is not of the element kind {elem:?}"));
            a.and_then(|a| {
                dense::keep(*a);
                dense::take::<U, N>(s, id, parts).map(|a| Box::new(a) as Box<dyn Any>)
            })
        },
        Err(format!("array {id} has more than 4 dims"))
    );
    taken.unwrap_or_else(|e| {
        dense::abandon([id]);
        s.fail(format!(
            "DistArray::from_fn of shape {shape:?} in parts: {e}"
        ))
    })
}

#[linkme::distributed_slice(DATA_OPS)]
static PUT: DataOp = DataOp {
    name: "strads::from_fn",
    run: put,
};

/// Every rank: one piece of `DistArray::from_fn`'s rows; rank `to` writes it into its array
/// (made at its first piece) and keeps the array after its last.
fn put(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let Some((piece, bytes)) = super::typed::take_piece(ctx, args, "rows", |p: &Piece| p.to)?
    else {
        return Ok(Vec::new());
    };
    let kept = typed!(
        piece.elem,
        piece.shape.len(),
        U,
        N,
        receive::<U, N>(&piece, &bytes),
        Err(format!("an array of {} dims", piece.shape.len()))
    );
    kept.map(|()| Vec::new()).map_err(|e| {
        super::typed::forget(piece.id);
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
    let mut pending = super::typed::PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let at = match pending.iter().position(|(i, ..)| *i == piece.id) {
        Some(at) => at,
        None => {
            let a: DistArray<U, N> = dense::zeroed(piece.id, shape)?;
            pending.push((piece.id, 0, Box::new(a)));
            pending.len() - 1
        }
    };
    pending[at].1 += bytes.len() as u64;
    let a = pending[at]
        .2
        .downcast_mut::<DistArray<U, N>>()
        .ok_or("rows of another element type")?;
    let end = piece
        .at
        .checked_add(piece.len)
        .filter(|&e| e <= piece.end && piece.end <= a.len());
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
        let (.., a) = pending.swap_remove(at);
        drop(pending);
        let a = a
            .downcast::<DistArray<U, N>>()
            .map_err(|_| "rows of another element type")?;
        dense::keep(*a);
    }
    Ok(())
}
