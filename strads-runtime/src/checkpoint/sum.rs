//! [`Sum`]: the checksum of checkpoints' array files, and the trailer a rank's piece ends
//! with.

/// Checksums of checkpoints' array files (module `resume`): fast enough for a model's
/// bytes after every call. A checksum of bytes fed in pieces: a 64-bit word at a time (about 8 bytes per
/// multiply, so that checkpoints of large arrays cost little), the tail and the length
/// mixed in at the end. Pieces may end anywhere: the sum is that of their concatenation.
#[derive(Clone, Debug)]
pub(crate) struct Sum {
    h: u64,
    carry: [u8; 8],
    held: usize,
    len: u64,
}

const PRIME: u64 = 0x0000_0100_0000_01b3;

impl Sum {
    pub(crate) fn new() -> Sum {
        Sum {
            h: 0xcbf2_9ce4_8422_2325,
            carry: [0; 8],
            held: 0,
            len: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(PRIME).rotate_left(27);
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.held > 0 {
            let k = (8 - self.held).min(bytes.len());
            self.carry[self.held..self.held + k].copy_from_slice(&bytes[..k]);
            self.held += k;
            bytes = &bytes[k..];
            if self.held < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.carry));
            self.held = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.carry[..rest.len()].copy_from_slice(rest);
        self.held = rest.len();
    }

    /// Bytes fed so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn finish(&self) -> u64 {
        let mut h = self.h;
        for &b in &self.carry[..self.held] {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        (h ^ self.len).wrapping_mul(PRIME)
    }
}

/// The [`Sum`] of `bytes`.
pub(crate) fn checksum64(bytes: &[u8]) -> u64 {
    let mut s = Sum::new();
    s.update(bytes);
    s.finish()
}

/// `bytes` followed by their checksum (8 bytes, little-endian): the format a rank writes
/// the pieces it holds in (`cluster::save::write_piece`, a slice at a time).
#[cfg(test)]
pub(crate) fn add_trailer(bytes: &mut Vec<u8>) {
    let c = checksum64(bytes);
    bytes.extend_from_slice(&c.to_le_bytes());
}

/// Reads the `len` bytes of a checkpoint's file at `path` 1 MiB at a time (never held
/// whole), giving `each` every piece in order, and checks them: against `checksum` when the
/// manifest holds it, else against the 8-byte trailer [`add_trailer`]'s format ends the
/// file with (a rank's piece). `each`'s error stops the reading.
pub(crate) fn read_checked(
    path: &std::path::Path,
    len: u64,
    checksum: Option<u64>,
    mut each: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot be read ({e})");
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    let size = f.metadata().map_err(cannot)?.len();
    let whole = len + if checksum.is_some() { 0 } else { 8 };
    if size != whole {
        return Err(format!("holds {size} bytes, not {whole}"));
    }
    let mut sum = Sum::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(left as usize);
        f.read_exact(&mut buf[..want]).map_err(cannot)?;
        sum.update(&buf[..want]);
        each(&buf[..want])?;
        left -= want as u64;
    }
    let good = match checksum {
        Some(c) => c == sum.finish(),
        None => {
            let mut tail = [0u8; 8];
            f.read_exact(&mut tail).map_err(cannot)?;
            sum.finish().to_le_bytes() == tail
        }
    };
    if !good {
        return Err("fails its checksum".into());
    }
    Ok(())
}

/// The `len` bytes of a file [`add_trailer`] wrote, once they check out.
pub(crate) fn with_trailer(mut file: Vec<u8>, len: u64) -> Result<Vec<u8>, String> {
    if file.len() as u64 != len + 8 {
        return Err(format!("holds {} bytes, not {}", file.len(), len + 8));
    }
    let tail = file.split_off(len as usize);
    if checksum64(&file).to_le_bytes()[..] != tail[..] {
        return Err("fails its checksum".into());
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_pieces_are_the_sum_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = checksum64(&bytes);
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let mut s = Sum::new();
            s.update(&bytes[..cut]);
            s.update(&bytes[cut..]);
            assert_eq!(s.finish(), whole, "cut at {cut}");
        }
        let mut other = bytes.clone();
        other[3] ^= 1;
        assert_ne!(checksum64(&other), whole);
        assert_ne!(checksum64(&bytes[..999]), whole);
        assert_ne!(checksum64(&[0u8; 8]), checksum64(&[0u8; 9]));
        let mut t = bytes.clone();
        add_trailer(&mut t);
        assert_eq!(with_trailer(t.clone(), 1000).unwrap(), bytes);
        t[10] ^= 1;
        assert!(
            with_trailer(t.clone(), 1000)
                .unwrap_err()
                .contains("checksum")
        );
        assert!(with_trailer(t, 999).is_err());
    }

    /// Whether the file at `path` is a piece of `len` bytes that checks out.
    fn trailer_checks(path: &std::path::Path, len: u64) -> Result<(), String> {
        read_checked(path, len, None, |_| Ok(()))
    }

    #[test]
    fn a_piece_file_is_checked_without_being_held_whole() {
        let dir = std::env::temp_dir().join(format!("strads-trailer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("piece.bin");
        // Over 1 MiB, so the check reads it in more than one buffer.
        let bytes: Vec<u8> = (0..(3 << 19) + 5)
            .map(|i: u32| (i * 7 % 253) as u8)
            .collect();
        let len = bytes.len() as u64;
        let mut t = bytes.clone();
        add_trailer(&mut t);
        std::fs::write(&path, &t).unwrap();
        assert_eq!(trailer_checks(&path, len), Ok(()));
        let mut seen = Vec::new();
        read_checked(&path, len, None, |b| {
            seen.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, bytes, "the bytes, in order");
        assert_eq!(
            read_checked(&path, len + 8, Some(0), |_| Ok(())).unwrap_err(),
            "fails its checksum"
        );
        assert_eq!(
            trailer_checks(&path, len - 1).unwrap_err(),
            format!("holds {} bytes, not {}", len + 8, len + 7)
        );
        t[(1 << 20) + 3] ^= 1;
        std::fs::write(&path, &t).unwrap();
        assert_eq!(
            trailer_checks(&path, len).unwrap_err(),
            "fails its checksum"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(
            trailer_checks(&path, len)
                .unwrap_err()
                .starts_with("cannot be read (")
        );
        let _ = std::fs::remove_dir(&dir);
    }
}
