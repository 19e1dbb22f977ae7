//! A resumed job's dense arrays given a checkpoint's contents where they were written:
//! each rank reads the pieces it wrote of an array (checkpoints need the same directory on
//! every rank) into its copy, and the driver takes its own elements and lists the pieces
//! away, as after the call that left them there. Nothing comes to the driver, so a job
//! whose arrays fit only in parts resumes as it ran.

use std::any::Any;

use serde::{Deserialize, Serialize};

use super::super::away;
use super::super::proto::{Elem, Region};
use super::super::session::Session;
use super::super::wire::WireArray;
use super::{Ctx, DATA_OPS, DataOp, dense, postcard_args};
use crate::array::made::Piece;
use crate::array::{DistArray, le};

/// What every rank needs to read its pieces of array `id` back.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Args {
    id: u64,
    version: u64,
    shape: Vec<usize>,
    elem: Elem,
    pieces: Vec<Piece>,
}

#[linkme::distributed_slice(DATA_OPS)]
static RESTORE: DataOp = DataOp {
    name: "strads::restore",
    run,
};

/// Driver: array `array` (a `&mut DistArray` of `elem` and `shape`, known as `id`) reads
/// the files of `home` here while every rank of `pieces` reads its own; then the pieces are away (their
/// pages here given back). An error leaves the array and the ranks' copies of it
/// disagreeing: the caller stops the job (a resumed run refuses the checkpoint).
pub(crate) fn restore(
    s: &'static Session,
    id: u64,
    elem: Elem,
    shape: &[usize],
    array: &mut dyn Any,
    home: &[crate::array::made::Piece],
    pieces: &[Piece],
) -> Result<(), String> {
    typed!(
        elem,
        shape.len(),
        U,
        N,
        match array.downcast_mut::<DistArray<U, N>>() {
            Some(a) => restore_typed(s, id, elem, a, home, pieces),
            None => Err(format!("array {id} is not of the element kind {elem:?}")),
        },
        Err(format!("array {id} has more than 4 dims"))
    )
}

fn restore_typed<U, const N: usize>(
    s: &'static Session,
    id: u64,
    elem: Elem,
    a: &mut DistArray<U, N>,
    home: &[crate::array::made::Piece],
    pieces: &[Piece],
) -> Result<(), String>
where
    U: Clone + Default + Send + Sync + 'static,
{
    // Restored contents are a change: the ranks' copies get the version the driver's has.
    let version = a.contents_key().1 + 1;
    let shape = a.shape().to_vec();
    let args = Args {
        id,
        version,
        shape: shape.clone(),
        elem,
        pieces: pieces.to_vec(),
    };
    super::run(s, RESTORE.name, postcard_args(&args))?;
    // Every rank holds its pieces now: what was away of the array (parts a re-executed
    // `from_fn` made, or parts created in place) is replaced, not fetched.
    let data = a.restoring(version);
    for p in home {
        read_piece(data, p).map_err(|e| format!("{} {e}", p.path))?;
    }
    if crate::array::pages::zero_is_default::<U>() {
        let (ptr, len) = (data.as_mut_ptr(), data.len());
        for &(lo, hi) in pieces.iter().flat_map(|p| &p.region) {
            if lo <= hi && hi as usize <= len {
                // SAFETY: elements of this array (`len` of them at `ptr`), borrowed
                // mutably here; the pieces' elements are away from now on, and the fetch
                // rewrites them before anything reads them (`array::away`).
                unsafe { crate::array::pages::release(ptr, len, lo as usize, hi as usize) };
            }
        }
    }
    a.shared_as(id);
    let parts: Vec<(Region, usize)> = pieces
        .iter()
        .map(|p| (Region(p.region.clone()), p.rank))
        .collect();
    let meta = a
        .meta(false)
        .ok_or_else(|| format!("array {id}'s elements cannot cross processes"))?;
    let fetch_parts = parts.clone();
    a.made_away(|base| away::fetch::<U>(base, shape, None, s, id, fetch_parts));
    s.directory().made_away(&meta, parts);
    Ok(())
}

/// Every rank: reads the pieces it wrote of the array into a copy of the whole shape whose
/// other pages are never written, kept as the driver's array at the driver's version.
fn run(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let a: Args =
        postcard::from_bytes(args).map_err(|e| format!("a restore that does not decode ({e})"))?;
    let mine: Vec<&Piece> = a.pieces.iter().filter(|p| p.rank == ctx.rank).collect();
    if mine.is_empty() {
        return Ok(Vec::new());
    }
    let kept = typed!(
        a.elem,
        a.shape.len(),
        U,
        N,
        read_back::<U, N>(&a, &mine),
        Err(format!("an array of {} dims", a.shape.len()))
    );
    kept.map(|()| Vec::new())
        .map_err(|e| format!("rank {} restoring array {}: {e}", ctx.rank, a.id))
}

fn read_back<U, const N: usize>(a: &Args, mine: &[&Piece]) -> Result<(), String>
where
    U: Clone + Default + Send + Sync + 'static,
{
    let shape: [usize; N] = a
        .shape
        .as_slice()
        .try_into()
        .map_err(|_| "a shape of another rank".to_string())?;
    let mut array: DistArray<U, N> = dense::zeroed(a.id, shape)?;
    let data = array.restoring(a.version);
    for p in mine {
        read_piece(data, p).map_err(|e| format!("{} {e}", p.path))?;
    }
    dense::keep(array);
    Ok(())
}

/// Reads piece `p` (its elements' little-endian bytes, then their checksum unless the
/// manifest holds it) into `data`, 1 MiB at a time, checking the checksum at the end.
fn read_piece<U: 'static>(data: &mut [U], p: &Piece) -> Result<(), String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        format!(
            "cannot be read ({e}); a checkpoint's directory must be the same path on every rank"
        )
    };
    let size = le::wire_size::<U>().ok_or("holds elements without a wire type")?;
    let mut f = std::fs::File::open(&p.path).map_err(cannot)?;
    let held = f.metadata().map_err(cannot)?.len();
    let want: u64 = p.region.iter().map(|&(lo, hi)| hi.saturating_sub(lo)).sum();
    let trailer = if p.checksum.is_some() { 0 } else { 8 };
    if held != p.len + trailer || p.len != want * size as u64 {
        return Err(format!(
            "holds {held} bytes, not the {} of its {want} elements{} (it changed since the run \
             began)",
            want * size as u64,
            if trailer > 0 {
                " and their checksum"
            } else {
                ""
            }
        ));
    }
    let mut sum = crate::checkpoint::Sum::new();
    let mut buf = vec![0u8; (1 << 20) / size * size];
    for &(lo, hi) in &p.region {
        let (lo, hi) = (lo as usize, hi as usize);
        let Some(out) = data.get_mut(lo..hi) else {
            return Err(format!(
                "names elements [{lo}, {hi}) the array does not have"
            ));
        };
        for chunk in out.chunks_mut(buf.len() / size) {
            let b = &mut buf[..chunk.len() * size];
            f.read_exact(b).map_err(cannot)?;
            sum.update(b);
            if !le::get(b, chunk) {
                return Err("holds bytes that are not the elements".into());
            }
        }
    }
    let sum = sum.finish();
    let good = match p.checksum {
        Some(c) => c == sum,
        None => {
            let mut tail = [0u8; 8];
            f.read_exact(&mut tail).map_err(cannot)?;
            sum.to_le_bytes() == tail
        }
    };
    if !good {
        return Err("fails its checksum (it changed since the run began)".into());
    }
    Ok(())
}
