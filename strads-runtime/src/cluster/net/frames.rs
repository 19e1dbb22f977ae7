//! Frames on QUIC streams: a control frame is a `u32` little-endian length and its bytes;
//! a block stream is a header frame, a `u64` length and the data. Lengths are checked
//! against the limits before anything is allocated for them.

use quinn::{RecvStream, SendStream};

use super::{MAX_BLOCK, MAX_HEADER};

/// Writes one length-prefixed frame.
pub(super) async fn write_frame(s: &mut SendStream, bytes: &[u8]) -> Result<(), String> {
    s.write_all(&(bytes.len() as u32).to_le_bytes())
        .await
        .map_err(|e| e.to_string())?;
    s.write_all(bytes).await.map_err(|e| e.to_string())
}

/// Reads one length-prefixed frame of at most `max` bytes; `Ok(None)` at a clean end.
pub(super) async fn read_frame(r: &mut RecvStream, max: usize) -> Result<Option<Vec<u8>>, String> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(()) => {}
        Err(quinn::ReadExactError::FinishedEarly(0)) => return Ok(None),
        Err(quinn::ReadExactError::FinishedEarly(n)) => {
            return Err(format!("a frame length cut short after {n} bytes"));
        }
        Err(quinn::ReadExactError::ReadError(e)) => return Err(e.to_string()),
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > max {
        return Err(format!("a frame of {n} bytes, over the limit of {max}"));
    }
    read_exactly(r, n, "a frame").await.map(Some)
}

/// Room reserved before any byte of a frame or block arrives: a length beyond it (under
/// the limits) grows the buffer as the bytes come.
const RESERVE: usize = 64 << 20;

/// The next `n` bytes of a stream, chunk by chunk as quinn holds them: one copy into a
/// buffer that is never zero-filled first (what `read_exact` into `vec![0; n]` and
/// `read_to_end` pay: a write of every byte, and fresh pages faulted in, before the copy).
/// `what` names the frame in errors.
async fn read_exactly(r: &mut RecvStream, n: usize, what: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(n.min(RESERVE));
    while buf.len() < n {
        match r.read_chunk(n - buf.len(), true).await {
            Ok(Some(chunk)) => buf.extend_from_slice(&chunk.bytes),
            Ok(None) => {
                return Err(format!("{what} of {n} bytes cut short after {}", buf.len()));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(buf)
}

/// Reads a block stream: header, then data.
pub(super) async fn read_block(mut r: RecvStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let header = read_frame(&mut r, MAX_HEADER)
        .await?
        .ok_or("an empty block stream")?;
    let mut len = [0u8; 8];
    r.read_exact(&mut len)
        .await
        .map_err(|_| "a block's length cut short".to_string())?;
    let n = u64::from_le_bytes(len);
    if n > MAX_BLOCK {
        return Err(format!(
            "a block of {n} bytes, over the limit of {MAX_BLOCK}"
        ));
    }
    let n = usize::try_from(n).map_err(|_| format!("a block of {n} bytes"))?;
    let data = read_exactly(&mut r, n, "a block").await?;
    // Nothing may follow the data on a block stream.
    match r.read_chunk(1, true).await {
        Ok(None) => Ok((header, data)),
        Ok(Some(_)) => Err(format!("a block of {n} bytes with more bytes after it")),
        Err(e) => Err(format!("a block of {n} bytes: {e}")),
    }
}
