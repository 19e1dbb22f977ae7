//! The driver's standard output across a restart (issue 26, item 3): a restarted job runs
//! `main` again from the start, and prints again what the lost run printed; the process
//! that restarts it forwards the new run's output without those lines, so the job's
//! output is the uninterrupted run's.
//!
//! Lines are the unit: a run prints the same lines in the same order up to any call (the
//! values may differ only where they are timings).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a restarted driver writes to its standard output where its job starts: the lines
/// before it are those the lost run printed before its job started (`main`'s lines before
/// its first loop call), which the restarting process drops.
pub const MARK: &[u8] = b"\x1b[strads-restart-mark]\n";

/// Copies `from` to `to`, counting the lines copied in `lines`; returns at the end of
/// `from`.
pub fn forward_counting(mut from: impl Read, mut to: impl Write, lines: &AtomicU64) {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let _ = to.write_all(&buf[..n]);
                let _ = to.flush();
                let k = buf[..n].iter().filter(|&&b| b == b'\n').count();
                lines.fetch_add(k as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Copies `from` to `to` without what was printed already: everything before [`MARK`]
/// when `marked` (dropped up to and including it), then `skip` lines; counting in `lines`
/// the lines copied and skipped after the mark (what a later restart must skip in turn).
pub fn forward_after(
    mut from: impl Read,
    mut to: impl Write,
    marked: bool,
    skip: u64,
    lines: &AtomicU64,
) {
    let mut buf = vec![0u8; 1 << 16];
    let mut held: Vec<u8> = Vec::new();
    let mut before_mark = marked;
    let mut skip = skip;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut chunk = &buf[..n];
        if before_mark {
            held.extend_from_slice(chunk);
            let Some(at) = held.windows(MARK.len()).position(|w| w == MARK) else {
                // Keep only what may begin the mark.
                let keep = held.len().min(MARK.len() - 1);
                held.drain(..held.len() - keep);
                continue;
            };
            before_mark = false;
            let rest = held.split_off(at + MARK.len());
            held = rest;
            chunk = &held;
        }
        let mut out = chunk;
        while skip > 0 && !out.is_empty() {
            match out.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    out = &out[i + 1..];
                    skip -= 1;
                    lines.fetch_add(1, Ordering::Relaxed);
                }
                None => out = &[],
            }
        }
        if !out.is_empty() {
            let _ = to.write_all(out);
            let _ = to.flush();
            let k = out.iter().filter(|&&b| b == b'\n').count();
            lines.fetch_add(k as u64, Ordering::Relaxed);
        }
        held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_printed_already_is_dropped() {
        let lines = AtomicU64::new(0);
        let mut input = b"pre 1\npre 2\n".to_vec();
        input.extend_from_slice(MARK);
        input.extend_from_slice(b"a\nb\nc\nd\n");
        let mut out = Vec::new();
        // Read in small pieces: the mark may be cut anywhere.
        struct Drip<'a>(&'a [u8]);
        impl Read for Drip<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        forward_after(Drip(&input), &mut out, true, 2, &lines);
        assert_eq!(out, b"c\nd\n");
        assert_eq!(lines.load(Ordering::Relaxed), 4);
        let mut out = Vec::new();
        forward_after(&b"x\ny\nz\n"[..], &mut out, false, 1, &AtomicU64::new(0));
        assert_eq!(out, b"y\nz\n");
        let mut out = Vec::new();
        let counted = AtomicU64::new(0);
        forward_counting(&b"1\n2\n3"[..], &mut out, &counted);
        assert_eq!(
            (out.as_slice(), counted.load(Ordering::Relaxed)),
            (&b"1\n2\n3"[..], 2)
        );
    }
}
