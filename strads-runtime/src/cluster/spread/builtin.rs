//! The built-in collective operations on spread arrays: bring the parts home, copy a
//! window of entries, count a histogram or each block's entries, and trade entries so that
//! each rank holds the blocks its workers run.

use super::super::session::Session;
use super::{Ctx, DATA_OPS, DataOp, keep_traded, with_part};
use crate::space::grid;

pub(super) fn decode<'a, A: serde::Deserialize<'a>>(args: &'a [u8], op: &str) -> Result<A, String> {
    postcard::from_bytes(args).map_err(|e| format!("the arguments of {op} do not decode ({e})"))
}

/// Counts by index, dense (`0`, then a `u64` each) or, when fewer bytes, as the indices
/// with a count and their counts (`1`, then `u32` and `u64` pairs): a histogram of a dim
/// much longer than a rank's part stays small.
pub(super) fn encode_counts(h: &[u64]) -> Vec<u8> {
    let nonzero = h.iter().filter(|&&c| c > 0).count();
    if nonzero * 12 < h.len() * 8 && h.len() <= u32::MAX as usize + 1 {
        let mut out = Vec::with_capacity(1 + 12 * nonzero);
        out.push(1);
        for (i, &c) in h.iter().enumerate().filter(|(_, c)| **c > 0) {
            out.extend_from_slice(&(i as u32).to_le_bytes());
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    } else {
        let mut out = vec![0];
        crate::array::le::put(h, &mut out);
        out
    }
}

/// Adds counts [`encode_counts`] wrote onto `sum`; `false` when they do not decode or
/// name an index beyond it.
pub(super) fn add_counts(bytes: &[u8], sum: &mut [u64]) -> bool {
    match bytes.split_first() {
        Some((0, rest)) if rest.len() == 8 * sum.len() => {
            for (s, c) in sum.iter_mut().zip(rest.chunks_exact(8)) {
                *s += u64::from_le_bytes(c.try_into().expect("8 bytes"));
            }
            true
        }
        Some((1, rest)) if rest.len() % 12 == 0 => rest.chunks_exact(12).all(|p| {
            let i = u32::from_le_bytes(p[..4].try_into().expect("4 bytes")) as usize;
            let c = u64::from_le_bytes(p[4..].try_into().expect("8 bytes"));
            sum.get_mut(i).map(|s| *s += c).is_some()
        }),
        _ => false,
    }
}

/// Each rank's checksums of its part's indices and values (`SpreadOps::digest`).
#[linkme::distributed_slice(DATA_OPS)]
static DIGEST: DataOp = DataOp {
    name: "strads::digest",
    run: |_, args| {
        let id: u64 = decode(args, "digest")?;
        let d = with_part(id, |p| p.digest())?;
        Ok(postcard::to_allocvec(&d).expect("checksums encode"))
    },
};

/// Each rank sends its part home and lets it go, with the blocks it traded: the array is
/// the driver's from now on, its calls sending their blocks from there.
#[linkme::distributed_slice(DATA_OPS)]
static GATHER: DataOp = DataOp {
    name: "strads::gather",
    run: |_, args| {
        let id: u64 = decode(args, "gather")?;
        let bytes = with_part(id, |p| p.encode(0..usize::MAX))?;
        super::forget(id);
        crate::cluster::store::forget_traded(id);
        Ok(bytes)
    },
};

/// Driver: entries `lo..hi` of spread array `id` (`SpreadOps::window`), each rank's share
/// in rank order; `starts`, where the parts start, learnt from the first window's counts.
pub(super) fn window(
    s: &'static Session,
    id: u64,
    starts: &std::sync::Mutex<Option<Vec<u64>>>,
    lo: u64,
    hi: u64,
) -> Vec<Vec<u8>> {
    // The ranks answer between calls only: a read from inside a call, or after the job
    // ended, could never be answered, so it stops the job instead of waiting for ever.
    let when = if s.closed() {
        Some("after the job ended")
    } else if s.with(|core| core.in_call()) {
        Some("inside a loop call that runs across processes")
    } else {
        None
    };
    if let Some(when) = when {
        s.fail(format!(
            "entries of a sparse array in parts on the ranks (id {id}) were read by value \
             {when}; read them before the call, or pass the array to the loop"
        ));
    }
    let mut starts = starts.lock().unwrap_or_else(|e| e.into_inner());
    let args = super::postcard_args(&(id, lo, hi, starts.clone()));
    let answers = super::run(s, WINDOW.name, args)
        .unwrap_or_else(|e| s.fail(format!("a spread array's parts on the ranks (window): {e}")));
    // Each rank's count of entries, then its share of the window.
    let mut counts = vec![0u64];
    let parts = answers
        .into_iter()
        .enumerate()
        .map(|(r, mut b)| {
            let Some(count) = b.get(..8).and_then(|c| c.try_into().ok()) else {
                s.fail(format!("rank {r}'s window of array {id} is cut short"))
            };
            counts.push(counts[r] + u64::from_le_bytes(count));
            b.drain(..8);
            b
        })
        .collect();
    starts.get_or_insert(counts);
    parts
}

/// Entries `lo..hi` of a spread array, in its order (the parts one after the other): each
/// rank sends its count of entries, then those of them its part holds, as `gather` sends a
/// part (an empty part when none). Where the parts start comes with the request once the
/// driver knows it (from an earlier window's counts); the first time, the ranks learn it
/// from each other.
#[linkme::distributed_slice(DATA_OPS)]
static WINDOW: DataOp = DataOp {
    name: "strads::window",
    run: |ctx, args| {
        let (id, lo, hi, starts): (u64, u64, u64, Option<Vec<u64>>) = decode(args, "window")?;
        let (start, count) = match starts {
            Some(s) => {
                let (start, end) = (s.get(ctx.rank), s.get(ctx.rank + 1));
                let (Some(&start), Some(&end)) = (start, end) else {
                    return Err(format!("{} part bounds for rank {}", s.len(), ctx.rank));
                };
                let count = with_part(id, |p| p.count() as u64)?;
                if end.checked_sub(start) != Some(count) {
                    return Err(format!(
                        "a part of {count} entries, where the driver counts {start}..{end}"
                    ));
                }
                (start, count)
            }
            None => {
                // Every rank takes part in the exchange below, or none does.
                let count = ctx.agree(with_part(id, |p| p.count() as u64))?;
                let counts = ctx.all_gather(count.to_le_bytes().to_vec());
                let mut start = 0u64;
                for b in &counts[..ctx.rank] {
                    let b: [u8; 8] = b.as_slice().try_into().map_err(|_| "a count of entries")?;
                    start += u64::from_le_bytes(b);
                }
                (start, count)
            }
        };
        let from = lo.clamp(start, start + count) - start;
        let to = hi.clamp(start, start + count) - start;
        let mut out = count.to_le_bytes().to_vec();
        out.extend(with_part(id, |p| p.encode(from as usize..to as usize))?);
        Ok(out)
    },
};

#[linkme::distributed_slice(DATA_OPS)]
static HISTOGRAM: DataOp = DataOp {
    name: "strads::histogram",
    run: |_, args| {
        let (id, dim, extent): (u64, usize, usize) = decode(args, "histogram")?;
        with_part(id, |p| p.histogram(dim, extent))?.map(|h| encode_counts(&h))
    },
};

#[linkme::distributed_slice(DATA_OPS)]
static BLOCK_COUNTS: DataOp = DataOp {
    name: "strads::block_counts",
    run: |_, args| {
        let (id, dims, bounds): (u64, Vec<usize>, Vec<Vec<usize>>) = decode(args, "block_counts")?;
        check_grid(&dims, &bounds)?;
        let (block_of, n) = grid(&dims, &bounds);
        with_part(id, |p| encode_counts(&p.block_counts(&block_of, n)))
    },
};

/// Refuses a grid whose bounds do not describe partitions (the driver's bytes).
pub(super) fn check_grid(dims: &[usize], bounds: &[Vec<usize>]) -> Result<(), String> {
    if dims.len() != bounds.len() || bounds.iter().any(|b| b.len() < 2 || !b.is_sorted()) {
        return Err(format!("a grid of dims {dims:?} and bounds {bounds:?}"));
    }
    Ok(())
}

#[linkme::distributed_slice(DATA_OPS)]
static EXCHANGE: DataOp = DataOp {
    name: "strads::exchange",
    run: exchange,
};

/// Each rank sends every other the entries of its part in the blocks that rank's workers
/// run, and keeps the blocks it runs, each block's entries in rank order: the order of the
/// array's entries, since the parts are its consecutive ranges.
fn exchange(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    type Args = (u64, u64, Vec<usize>, Vec<Vec<usize>>, usize, usize);
    let (id, key, dims, bounds, workers, threads): Args = decode(args, "exchange")?;
    check_grid(&dims, &bounds)?;
    if workers == 0 || threads == 0 || workers / threads > ctx.size {
        return Err(format!(
            "{workers} workers of {threads} threads on {} ranks",
            ctx.size
        ));
    }
    let (block_of, n) = grid(&dims, &bounds);
    let owner = |b: usize| crate::space::owner(b, &bounds, workers, threads);
    let out = with_part(id, |p| p.bucket_out(&block_of, n, &owner, ctx.size))?;
    let messages = ctx.all_to_all(out);
    let me = ctx.rank;
    let (blocks, bytes) = with_part(id, |p| p.assemble(messages, n, &|b| owner(b) == me))??;
    keep_traded(id, key, blocks, bytes);
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cross_dense_or_sparse_and_add_up() {
        for h in [vec![0u64, 3, 0, 0, 0, 0, 0, 1], vec![2, 3, 4, 5], vec![]] {
            let bytes = encode_counts(&h);
            let sparse = h.iter().filter(|&&c| c > 0).count() * 12 < h.len() * 8;
            assert_eq!(bytes[0], u8::from(sparse), "{h:?}");
            let mut sum = vec![1u64; h.len()];
            assert!(add_counts(&bytes, &mut sum));
            let want: Vec<u64> = h.iter().map(|c| c + 1).collect();
            assert_eq!(sum, want);
        }
        // Cut, of another length, or beyond the extent: refused.
        let bytes = encode_counts(&[0, 0, 0, 0, 0, 0, 0, 9]);
        assert!(!add_counts(&bytes[..bytes.len() - 1], &mut [0; 8]));
        assert!(!add_counts(&bytes, &mut [0; 4]));
        assert!(!add_counts(&encode_counts(&[1, 2]), &mut [0; 3]));
        assert!(!add_counts(&[], &mut [0; 3]));
    }
}
