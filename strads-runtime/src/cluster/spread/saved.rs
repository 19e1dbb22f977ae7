//! Checkpoints of a spread array whose values `iter_mut()` calls moved where they run
//! ([`values::Held`](super::values::Held)): each rank writes the values it holds, where they
//! are (`strads::save_values`), and a resumed job's ranks read them back and send each to
//! the rank whose part holds its entry (`strads::restore_values`), so that the parts hold
//! the checkpoint's values, as before any call moved them. Neither brings the array to the
//! driver.
//!
//! A rank's piece: the checksum of its part's indices (a `Poly`'s `h` and `len`, `u64`s),
//! then the values it holds as `strads::gather_values` sends them (their count, their
//! positions in the array as `u32`s, the values in the array's codec). The checksum ties
//! the piece to the entries it was written for: a resumed job whose parts hold other
//! entries refuses it.

use super::builtin::decode;
use super::parts::{with_part, with_part_mut};
use super::{Ctx, DATA_OPS, DataOp, values};
use crate::array::made::Piece;
use crate::array::spread::Layout;

#[linkme::distributed_slice(DATA_OPS)]
pub(super) static SAVE_VALUES: DataOp = DataOp {
    name: "strads::save_values",
    run: |ctx, args| {
        let (id, paths): (u64, Vec<String>) = decode(args, "save_values")?;
        let path = paths
            .get(ctx.rank)
            .ok_or_else(|| format!("no file named for rank {}", ctx.rank))?;
        let header = header(id)?;
        // Written from where the values are held (no copy); a file that cannot be made or
        // written is said to the driver by the writing thread (`Msg::Saved`), which keeps
        // the checkpoint from completing.
        let mut written = (0, 0);
        super::super::save::write_piece(ctx.session, path.into(), |w| {
            w(&header)?;
            let (count, len) = values::write(id, w)?;
            written = (count, len + header.len() as u64);
            Ok(())
        });
        Ok(super::postcard_args(&written))
    },
};

/// The driver's side of `strads::save_values`: its piece goes to `home`.
pub(super) fn save_home(id: u64, home: &mut dyn FnMut(&[u8])) -> Result<Vec<u8>, String> {
    let header = header(id)?;
    home(&header);
    let (count, len) = values::write(id, &mut |b| {
        home(b);
        Ok(())
    })?;
    Ok(super::postcard_args(&(count, len + header.len() as u64)))
}

/// A piece's first bytes: the checksum of this rank's part's indices.
fn header(id: u64) -> Result<Vec<u8>, String> {
    let keys = with_part(id, |p| p.digest()[0])?;
    Ok([keys.h.to_le_bytes(), keys.len.to_le_bytes()].concat())
}

#[linkme::distributed_slice(DATA_OPS)]
pub(super) static RESTORE_VALUES: DataOp = DataOp {
    name: "strads::restore_values",
    run: restore,
};

fn restore(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let (id, layout, pieces): (u64, Layout, Vec<Piece>) = decode(args, "restore_values")?;
    // Where each rank's part starts among the array's entries.
    let count = with_part(id, |p| p.facts().count);
    let count = ctx.agree(count)?;
    let counts: Vec<u64> = ctx.gather_each(&count, "count of entries");
    let mut starts = vec![0u64];
    for c in &counts {
        starts.push(starts.last().expect("a start").saturating_add(*c));
    }
    let out = read(ctx.rank, id, &pieces)
        .and_then(|bytes| route(&bytes[HEADER..], layout, &starts))
        .map_err(|e| format!("rank {}: {e}", ctx.rank));
    let out = ctx.agree(out)?;
    // Every piece is the checkpoint's and fits its part: the part's values (a resumed
    // run's, made again) give way to the checkpoint's.
    with_part_mut(id, |p| p.drop_values())?;
    let messages = ctx.all_to_all(out);
    let set = assemble(messages, layout, starts[ctx.rank], count)
        .and_then(|(bytes, ends)| with_part_mut(id, |p| p.set_values(bytes, ends))?)
        .map_err(|e| format!("rank {}: {e}", ctx.rank));
    ctx.agree(set)?;
    // The parts hold the values now: nothing held from calls before stays.
    values::forget(id);
    crate::cluster::store::forget_traded(id);
    Ok(Vec::new())
}

/// The bytes a piece starts with: the checksum of the indices of the part it was written
/// for.
const HEADER: usize = 16;

/// This rank's piece of `pieces`, read and checked (its values' part, count, positions and
/// values, from byte [`HEADER`]), once the piece's checksum of indices is that of this
/// rank's part.
fn read(rank: usize, id: u64, pieces: &[Piece]) -> Result<Vec<u8>, String> {
    let p = pieces
        .iter()
        .find(|p| p.rank == rank)
        .ok_or("the checkpoint names no piece of its values for this rank")?;
    let len = usize::try_from(p.len).map_err(|_| format!("{} is too large", p.path))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len)
        .map_err(|_| format!("{}: {len} bytes do not fit in memory", p.path))?;
    crate::checkpoint::read_checked(std::path::Path::new(&p.path), p.len, p.checksum, |b| {
        bytes.extend_from_slice(b);
        Ok(())
    })
    .map_err(|e| {
        format!(
            "{} {e} (a checkpoint's directory must be the same path on every rank, unchanged \
             since the run began)",
            p.path
        )
    })?;
    let keys = with_part(id, |part| part.digest()[0])?;
    let word = |at: usize| {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    if bytes.len() < HEADER || word(0) != Some(keys.h) || word(8) != Some(keys.len) {
        return Err(format!(
            "{} was written for other entries than this rank's part of the array holds (did \
             an input change?)",
            p.path
        ));
    }
    Ok(bytes)
}

/// Values `count`, `positions` and values as `values::encode` writes them: the positions,
/// and where each value ends in the values' bytes (after the positions).
fn split(bytes: &[u8], layout: Layout) -> Result<(Vec<u32>, usize, Vec<usize>), String> {
    let (_, at) =
        crate::array::le::counted(bytes, 4).map_err(|e| format!("values' positions: {e}"))?;
    let positions: Vec<u32> = bytes[8..at]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let ends = layout.ends(&bytes[at..], positions.len())?;
    Ok((positions, at, ends))
}

/// The values of a piece by the rank whose part holds their entries (`starts`: where each
/// rank's part starts, then the array's count): for each rank, values as `values::encode`
/// writes them.
fn route(bytes: &[u8], layout: Layout, starts: &[u64]) -> Result<Vec<Vec<u8>>, String> {
    let (positions, at, ends) = split(bytes, layout)?;
    let ranks = starts.len() - 1;
    let total = starts[ranks];
    let mut by_rank: Vec<Vec<usize>> = vec![Vec::new(); ranks];
    for (j, &pos) in positions.iter().enumerate() {
        if u64::from(pos) >= total {
            return Err(format!("a value of entry {pos} of an array of {total}"));
        }
        let r = starts.partition_point(|&s| s <= u64::from(pos)) - 1;
        by_rank[r].push(j);
    }
    let values = &bytes[at..];
    let span = |j: usize| if j == 0 { 0 } else { ends[j - 1] }..ends[j];
    Ok(by_rank
        .into_iter()
        .map(|js| {
            let mut out = Vec::with_capacity(8 + 4 * js.len());
            out.extend_from_slice(&(js.len() as u64).to_le_bytes());
            for &j in &js {
                out.extend_from_slice(&positions[j].to_le_bytes());
            }
            for &j in &js {
                out.extend_from_slice(&values[span(j)]);
            }
            out
        })
        .collect())
}

/// This rank's part's values from every rank's messages: its `count` entries from
/// `start` each once, in order, and where each value ends.
fn assemble(
    messages: Vec<Vec<u8>>,
    layout: Layout,
    start: u64,
    count: u64,
) -> Result<(Vec<u8>, Vec<usize>), String> {
    let mut got: Vec<(u64, &[u8])> = Vec::new();
    for (r, m) in messages.iter().enumerate() {
        let (positions, at, ends) = split(m, layout).map_err(|e| format!("rank {r}'s {e}"))?;
        for (j, &pos) in positions.iter().enumerate() {
            let lo = if j == 0 { at } else { at + ends[j - 1] };
            got.push((u64::from(pos), &m[lo..at + ends[j]]));
        }
    }
    got.sort_unstable_by_key(|&(pos, _)| pos);
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(got.len());
    for (i, &(pos, value)) in got.iter().enumerate() {
        if pos != start + i as u64 || i as u64 >= count {
            return Err(format!(
                "the values of entries {start}..{} came as entry {pos} in place {i}",
                start + count
            ));
        }
        bytes.extend_from_slice(value);
        ends.push(bytes.len());
    }
    if got.len() as u64 != count {
        return Err(format!(
            "{} of the {count} values of entries from {start} came",
            got.len()
        ));
    }
    drop(got);
    drop(messages);
    Ok((bytes, ends))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values as `values::encode` writes them: `(position, value bytes)`.
    fn encoded(values: &[(u32, &[u8])]) -> Vec<u8> {
        let mut out = (values.len() as u64).to_le_bytes().to_vec();
        for (p, _) in values {
            out.extend_from_slice(&p.to_le_bytes());
        }
        for (_, v) in values {
            out.extend_from_slice(v);
        }
        out
    }

    #[test]
    fn values_go_to_the_rank_of_their_entry_and_come_together_in_order() {
        // Lists of u16: [1, 7] is `2, 1, 0, 7, 0`; [] is `0`; [9] is `1, 9, 0`.
        let layout = Layout::Lists(2);
        let (a, b, c): (&[u8], &[u8], &[u8]) = (&[2, 1, 0, 7, 0], &[0], &[1, 9, 0]);
        // Parts of 2, 1 and 2 entries; one rank held entries 4, 0 and 2.
        let starts = [0, 2, 3, 5];
        let out = route(&encoded(&[(4, a), (0, b), (2, c)]), layout, &starts).unwrap();
        assert_eq!(out[0], encoded(&[(0, b)]));
        assert_eq!(out[1], encoded(&[(2, c)]));
        assert_eq!(out[2], encoded(&[(4, a)]));
        // Rank 2's part (entries 3, 4): the other rank held entry 3.
        let other = encoded(&[(3, c)]);
        let (bytes, ends) = assemble(vec![other.clone(), out[2].clone()], layout, 3, 2).unwrap();
        assert_eq!(bytes, [c, a].concat());
        assert_eq!(ends, [3, 8]);
        // A value missing, twice, or beyond the part: refused.
        assert!(assemble(vec![out[2].clone()], layout, 3, 2).is_err());
        assert!(assemble(vec![other.clone(), other.clone()], layout, 3, 2).is_err());
        assert!(assemble(vec![other, out[2].clone(), out[1].clone()], layout, 3, 2).is_err());
        // A position beyond the array, values cut short, a count that lies.
        assert!(route(&encoded(&[(5, a)]), layout, &starts).is_err());
        let mut cut = encoded(&[(4, a)]);
        cut.pop();
        assert!(route(&cut, layout, &starts).is_err());
        let mut lies = encoded(&[(4, a)]);
        lies[0] = 9;
        assert!(route(&lies, layout, &starts).is_err());
        // Numbers: fixed sizes.
        let n = Layout::Numbers(4);
        let out = route(
            &encoded(&[(1, &[1, 0, 0, 0]), (0, &[2, 0, 0, 0])]),
            n,
            &[0, 2],
        )
        .unwrap();
        let (bytes, ends) = assemble(out, n, 0, 2).unwrap();
        assert_eq!(bytes, [2, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(ends, [4, 8]);
    }

    #[test]
    fn a_piece_is_read_back_by_the_rank_whose_part_it_was_written_for() {
        use super::super::parts::{forget, keep};
        use super::super::share::part;
        let id = u64::MAX - 4242;
        keep(id, part(vec![[0u32, 1], [2, 0]], vec![5u32, 6]));
        // This rank holds entries 7 and 3 of the array (traded to it), as numbers.
        let held = |bytes: Vec<u8>| values::Held {
            key: 1,
            ids: vec![7, 3],
            state: values::State::Coded {
                starts: vec![0, bytes.len()],
                bytes,
            },
        };
        values::keep(id, held([1, 0, 0, 0, 2, 0, 0, 0].to_vec()));
        let mut bytes = Vec::new();
        let answer = save_home(id, &mut |b| bytes.extend_from_slice(b)).unwrap();
        assert_eq!(
            postcard::from_bytes::<(u64, u64)>(&answer).unwrap(),
            (2, bytes.len() as u64)
        );
        assert_eq!(bytes[HEADER..], values::encode(id).unwrap());
        let dir = std::env::temp_dir().join(format!("strads-saved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("piece.bin");
        let sum = crate::checkpoint::checksum64(&bytes);
        std::fs::write(&path, [&bytes[..], &sum.to_le_bytes()].concat()).unwrap();
        let p = Piece {
            rank: 1,
            region: vec![(0, 2)],
            path: path.to_string_lossy().into_owned(),
            len: bytes.len() as u64,
            checksum: None,
        };
        let back = read(1, id, std::slice::from_ref(&p)).unwrap();
        assert_eq!(back, bytes);
        let (positions, _, ends) = split(&back[HEADER..], Layout::Numbers(4)).unwrap();
        assert_eq!((positions, ends), (vec![7, 3], vec![4, 8]));
        // No piece for the rank; a part of other entries; a damaged file: refused.
        let e = read(0, id, std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("no piece"), "{e}");
        keep(id, part(vec![[0u32, 1], [2, 1]], vec![5u32, 6]));
        let e = read(1, id, std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("other entries"), "{e}");
        let mut damaged = std::fs::read(&path).unwrap();
        damaged[20] ^= 1;
        std::fs::write(&path, damaged).unwrap();
        let e = read(1, id, std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        forget(id);
        values::forget(id);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
