//! Starting this process's part of a cluster job (filled in with `launch` and `net`).

use super::session::Session;

/// The session of this process: `None` when it runs alone.
pub(crate) fn start() -> Result<Option<Session>, String> {
    Ok(None)
}
