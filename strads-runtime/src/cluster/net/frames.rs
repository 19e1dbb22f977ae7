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
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf).await.map_err(|e| match e {
        quinn::ReadExactError::FinishedEarly(k) => {
            format!("a frame of {n} bytes cut short after {k}")
        }
        quinn::ReadExactError::ReadError(e) => e.to_string(),
    })?;
    Ok(Some(buf))
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
    let data = r
        .read_to_end(n as usize)
        .await
        .map_err(|e| format!("a block of {n} bytes: {e}"))?;
    if data.len() as u64 != n {
        return Err(format!(
            "a block of {n} bytes cut short after {}",
            data.len()
        ));
    }
    Ok((header, data))
}
