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
    home: &[Piece],
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
    home: &[Piece],
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
/// manifest holds it) into `data`, 1 MiB at a time, checking the checksum at the end
/// (`checkpoint::read_checked`).
fn read_piece<U: 'static>(data: &mut [U], p: &Piece) -> Result<(), String> {
    let size = le::wire_size::<U>().ok_or("holds elements without a wire type")?;
    let want: u64 = p.region.iter().map(|&(lo, hi)| hi.saturating_sub(lo)).sum();
    if p.len != want * size as u64 {
        return Err(format!("is named with {} bytes for {want} elements", p.len));
    }
    if let Some(&(lo, hi)) = p
        .region
        .iter()
        .find(|&&(lo, hi)| lo > hi || hi > data.len() as u64)
    {
        return Err(format!(
            "names elements [{lo}, {hi}) the array does not have"
        ));
    }
    // Where the next element goes: a range of the region, and a position in it. The file's
    // pieces come in whole elements (1 MiB is a multiple of every element size).
    let (mut k, mut at) = (0, p.region.first().map_or(0, |r| r.0));
    crate::checkpoint::read_checked(std::path::Path::new(&p.path), p.len, p.checksum, |mut b| {
        while !b.is_empty() {
            let hi = p.region[k].1;
            if at == hi {
                k += 1;
                at = p.region[k].0;
                continue;
            }
            let n = ((hi - at) as usize).min(b.len() / size);
            let out = &mut data[at as usize..at as usize + n];
            if !le::get(&b[..n * size], out) {
                return Err("holds bytes that are not the elements".into());
            }
            (b, at) = (&b[n * size..], at + n as u64);
        }
        Ok(())
    })
    .map_err(|e| {
        format!(
            "{e} (a checkpoint's directory must be the same path on every rank, unchanged \
             since the run began)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_is_read_into_its_ranges_across_the_files_pieces() {
        let dir = std::env::temp_dir().join(format!("strads-restore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let value = |i: u64| i as f64 * 0.25 - 7.0;
        // Ranges that a 1 MiB piece of the file crosses, an empty one among them.
        let region = vec![(10, 20), (20, 20), (100, 200_000), (250_000, 290_000)];
        let mut bytes = Vec::new();
        for &(lo, hi) in &region {
            for i in lo..hi {
                bytes.extend_from_slice(&value(i).to_le_bytes());
            }
        }
        let len = bytes.len() as u64;
        let sum = crate::checkpoint::checksum64(&bytes);
        let check = |data: &[f64]| {
            for (i, &x) in data.iter().enumerate() {
                let inside = region
                    .iter()
                    .any(|&(lo, hi)| (lo..hi).contains(&(i as u64)));
                assert_eq!(x, if inside { value(i as u64) } else { 0.0 }, "element {i}");
            }
        };
        // A rank's piece: its checksum at its end.
        let path = dir.join("piece.bin");
        let mut file = bytes.clone();
        file.extend_from_slice(&sum.to_le_bytes());
        std::fs::write(&path, &file).unwrap();
        let mut piece = Piece {
            rank: 1,
            region: region.clone(),
            path: path.to_string_lossy().into_owned(),
            len,
            checksum: None,
        };
        let mut data = vec![0f64; 300_000];
        read_piece(&mut data, &piece).unwrap();
        check(&data);
        // The driver's own file: its checksum in the manifest.
        std::fs::write(&path, &bytes).unwrap();
        piece.checksum = Some(sum);
        let mut data = vec![0f64; 300_000];
        read_piece(&mut data, &piece).unwrap();
        check(&data);
        // A changed byte, and a region beyond the array, are errors.
        piece.checksum = Some(sum ^ 1);
        assert!(
            read_piece(&mut data, &piece)
                .unwrap_err()
                .starts_with("fails its checksum")
        );
        piece.checksum = Some(sum);
        assert!(
            read_piece(&mut vec![0f64; 1000], &piece)
                .unwrap_err()
                .starts_with("names elements [100, 200000)")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
