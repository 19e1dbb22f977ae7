//! What every rank needs of arrays made in parts (`from_fn`, `from_entries`): the arrays it
//! is receiving, and the element kinds they may have, as Rust types.

use std::any::Any;
use std::sync::Mutex;

/// An array this process is receiving: its id, the bytes received so far, what it holds
/// (a typed `DistArray`, a `(Vec<[u32; N]>, Vec<U>)` of entries, or for lists their
/// indices, ends and bytes, boxed).
type Pending = (u64, u64, Box<dyn Any + Send>);

/// The arrays this process is receiving and did not keep yet, by id.
pub(super) static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// Drops what this process received of array `id` and did not keep yet.
pub(super) fn forget(id: u64) {
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(i, ..)| *i != id);
}

/// Driver: runs piece operation `op` (`args`) of array `id`, sending rank `to` `bytes` in
/// its one round; a rank that cannot take them stops the job, naming `what` the array is.
pub(super) fn send_piece(
    s: &'static super::super::session::Session,
    op: &str,
    args: &[u8],
    id: u64,
    to: usize,
    mut bytes: Vec<u8>,
    what: &str,
) {
    let sent = super::run_with(s, op, args, |ctx: &mut super::Ctx| {
        let mut out = vec![Vec::new(); ctx.size];
        out[to] = std::mem::take(&mut bytes);
        ctx.all_to_all(out);
        Ok(Vec::new())
    });
    if let Err(e) = sent {
        super::dense::abandon([id]);
        s.fail(format!("{what} in parts: {e}"));
    }
}

/// Every rank's side of a piece operation: takes part in its one round, then decodes its
/// arguments (`what` they are); the arguments and the bytes the driver sent when this rank
/// is the one (`to_of` the arguments) the piece is for, else `None`.
pub(super) fn take_piece<A: serde::de::DeserializeOwned>(
    ctx: &mut super::Ctx,
    args: &[u8],
    what: &str,
    to_of: impl Fn(&A) -> usize,
) -> Result<Option<(A, Vec<u8>)>, String> {
    // The round first: every rank takes part in it, whatever the arguments say.
    let got = ctx.all_to_all(vec![Vec::new(); ctx.size]);
    let a: A = postcard::from_bytes(args)
        .map_err(|e| format!("a piece of {what} that does not decode ({e})"))?;
    if ctx.rank != to_of(&a) {
        return Ok(None);
    }
    Ok(Some((a, got.into_iter().next().unwrap_or_default())))
}

/// The arrays this process is receiving and did not keep yet, and their bytes so far.
pub(super) fn pending() -> (usize, u64) {
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    (pending.len(), pending.iter().map(|(_, b, _)| b).sum())
}

/// Runs `$body` with `$n` the const dims of `$dims` (1 to 4), or evaluates `$none`.
macro_rules! dims {
    ($dims:expr, $n:ident, $body:expr, $none:expr) => {
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
    };
}

/// Runs `$body` with `$u` the Rust type of element kind `$elem` and `$n` the dims (1 to
/// 4), or evaluates `$none` for more dims.
macro_rules! typed {
    ($elem:expr, $dims:expr, $u:ident, $n:ident, $body:expr, $none:expr) => {{
        macro_rules! elem {
            ($t:ty) => {{
                type $u = $t;
                dims!($dims, $n, $body, $none)
            }};
        }
        match $elem {
            $crate::cluster::proto::Elem::F32 => elem!(f32),
            $crate::cluster::proto::Elem::F64 => elem!(f64),
            $crate::cluster::proto::Elem::U8 => elem!(u8),
            $crate::cluster::proto::Elem::U16 => elem!(u16),
            $crate::cluster::proto::Elem::U32 => elem!(u32),
            $crate::cluster::proto::Elem::U64 => elem!(u64),
            $crate::cluster::proto::Elem::I8 => elem!(i8),
            $crate::cluster::proto::Elem::I16 => elem!(i16),
            $crate::cluster::proto::Elem::I32 => elem!(i32),
            $crate::cluster::proto::Elem::I64 => elem!(i64),
            $crate::cluster::proto::Elem::Usize => elem!(usize),
            $crate::cluster::proto::Elem::Isize => elem!(isize),
        }
    }};
}
