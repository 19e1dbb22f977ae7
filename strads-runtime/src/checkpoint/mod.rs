//! A set of named values, arrays first, saved in one file and loaded back: a trained
//! model, or the arrays a program wants to keep ([`Checkpoint`]).
//!
//! [`DistArray`](crate::DistArray) and [`SparseArray`](crate::SparseArray) serialize with
//! serde (their shape and elements), so does any value a program keeps beside them (an
//! epoch counter, a learning rate). The file holds each value's name, the type it was
//! saved as, its bytes (postcard) and a checksum of them; a file is written whole or not
//! at all (a temporary file, synced, then renamed over the path), and one that is cut
//! short, corrupted or of another format is an error naming the file and the value,
//! never wrong values.
//!
//! ```
//! use strads_runtime::{checkpoint::Checkpoint, DistArray};
//! # let path = std::env::temp_dir().join(format!("strads-doc-ckpt-{}", std::process::id()));
//! let w = DistArray::<f32, 2>::from_fn([3, 2], |[i, j]| (i * 2 + j) as f32);
//! let mut c = Checkpoint::new();
//! c.add("w", &w)?.add("epoch", &7u32)?;
//! c.save(&path)?;
//! let back = Checkpoint::load(&path)?;
//! assert_eq!(back.get::<DistArray<f32, 2>>("w")?, w);
//! assert_eq!(back.get::<u32>("epoch")?, 7);
//! assert!(back.get::<u32>("lr").is_err());
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// The first bytes of a checkpoint file.
const MAGIC: &[u8] = b"STRADS-CHECKPOINT\n";

/// The format's version.
const VERSION: u32 = 1;

/// One saved value.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    /// The Rust type it was saved as (`std::any::type_name`).
    kind: String,
    bytes: Vec<u8>,
}

/// Named values saved together (see the [module](self)).
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    entries: Vec<Entry>,
    /// Where it was loaded from, for errors.
    path: Option<PathBuf>,
}

mod poly;
mod staged;
mod sum;
pub(crate) use poly::Poly;
pub(crate) use staged::Staged;
pub(crate) use sum::{Sum, checksum64, read_checked, with_trailer};

/// FNV-1a, 64 bits: a checksum of a value's bytes.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Checkpoint {
    /// An empty checkpoint.
    pub fn new() -> Self {
        Self::default()
    }

    fn error(&self, message: String) -> Error {
        Error::Checkpoint {
            path: self
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("<memory>")),
            message,
        }
    }

    /// Adds `value` as `name` (an array brings its parts home first on a cluster job's
    /// driver).
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when `name` is taken or the value does not serialize.
    pub fn add<A: Serialize>(&mut self, name: &str, value: &A) -> Result<&mut Self> {
        if self.entries.iter().any(|e| e.name == name) {
            return Err(self.error(format!("`{name}` is saved twice")));
        }
        let bytes = postcard::to_allocvec(value)
            .map_err(|e| self.error(format!("`{name}` does not serialize ({e})")))?;
        self.entries.push(Entry {
            name: name.to_owned(),
            kind: std::any::type_name::<A>().to_owned(),
            bytes,
        });
        Ok(self)
    }

    /// The names saved, in order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// Value `name`, read back as an `A`.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming the value when it is not saved, or does not read back as
    /// an `A` (another type, another shape's number of dims, elements that do not fit the
    /// shape); the message says the type it was saved as.
    pub fn get<A: DeserializeOwned>(&self, name: &str) -> Result<A> {
        let Some(e) = self.entries.iter().find(|e| e.name == name) else {
            return Err(self.error(format!(
                "no value `{name}` (saved: {})",
                if self.entries.is_empty() {
                    "none".to_owned()
                } else {
                    self.names().join(", ")
                }
            )));
        };
        // Postcard's encodings of some types agree (`i32` and `u32` are both varints):
        // a value reads back only as the type it was saved as.
        if e.kind != std::any::type_name::<A>() {
            return Err(self.error(format!(
                "`{name}` was saved as {}, not {}",
                e.kind,
                std::any::type_name::<A>()
            )));
        }
        match postcard::take_from_bytes::<A>(&e.bytes) {
            Ok((a, [])) => Ok(a),
            Ok((_, rest)) => Err(self.error(format!(
                "`{name}` does not read back as {}: it was saved as {}, {} bytes are left over",
                std::any::type_name::<A>(),
                e.kind,
                rest.len()
            ))),
            Err(err) => Err(self.error(format!(
                "`{name}` does not read back as {}: it was saved as {} ({err})",
                std::any::type_name::<A>(),
                e.kind
            ))),
        }
    }

    /// The file's bytes.
    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            for text in [&e.name, &e.kind] {
                out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            out.extend_from_slice(&(e.bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&checksum(&e.bytes).to_le_bytes());
            out.extend_from_slice(&e.bytes);
        }
        out
    }

    /// Writes the checkpoint to `path`, whole or not at all: to a temporary file beside it,
    /// synced to disk, then renamed over `path` (and the directory synced).
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomic(path.as_ref(), &self.encode())
    }

    /// Reads a checkpoint [`save`](Checkpoint::save) wrote.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; [`Error::Checkpoint`] naming the file
    /// (and the value, where one is at fault) when it is not a checkpoint, of another
    /// version, cut short, or a value's bytes fail their checksum.
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let fail = |message: String| Error::Checkpoint {
            path: path.to_path_buf(),
            message,
        };
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| fail("not a strads checkpoint (its first bytes differ)".into()))?;
        let mut r = Reader { bytes: rest, at: 0 };
        let version = r
            .u32()
            .ok_or_else(|| fail("cut short in its header".into()))?;
        if version != VERSION {
            return Err(fail(format!(
                "a checkpoint of format {version}; this strads reads format {VERSION}"
            )));
        }
        let count = r
            .u32()
            .ok_or_else(|| fail("cut short in its header".into()))?;
        let mut entries = Vec::new();
        for i in 0..count {
            let short = |what: &str| fail(format!("cut short in value {} ({what})", i + 1));
            let name = r.text().ok_or_else(|| short("its name"))?;
            let kind = r.text().ok_or_else(|| short("its type"))?;
            let len = r.u64().ok_or_else(|| short("its length"))?;
            let sum = r.u64().ok_or_else(|| short("its checksum"))?;
            let data = r
                .take(len)
                .ok_or_else(|| fail(format!("cut short in value `{name}` ({len} bytes)")))?;
            if checksum(data) != sum {
                return Err(fail(format!(
                    "value `{name}` fails its checksum: the file is corrupted"
                )));
            }
            entries.push(Entry {
                name,
                kind,
                bytes: data.to_vec(),
            });
        }
        if r.at != r.bytes.len() {
            return Err(fail(format!(
                "{} bytes after its last value",
                r.bytes.len() - r.at
            )));
        }
        Ok(Checkpoint {
            entries,
            path: Some(path.to_path_buf()),
        })
    }
}

/// Reads a checkpoint's fields, every length checked against what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.at.checked_add(n)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn text(&mut self) -> Option<String> {
        let n = self.u32()?;
        String::from_utf8(self.take(u64::from(n))?.to_vec()).ok()
    }
}

/// Writes `bytes` to `path`, whole or not at all: to a temporary file beside it of a name
/// of its own, synced to disk, then renamed over `path` (and the directory synced).
///
/// # Errors
/// [`Error::Io`] naming the file when it cannot be written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut staged = Staged::create(path)?;
    staged.write(bytes)?;
    staged.commit()
}

/// Lowers the calling thread's priority as far as it goes (nice 19): a thread that writes
/// checkpoints while training goes on takes the cores only when training leaves them.
pub(crate) fn lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        let tid = nix::unistd::gettid().as_raw();
        // SAFETY: `setpriority` with a thread id this thread owns; it touches no memory.
        unsafe {
            nix::libc::setpriority(nix::libc::PRIO_PROCESS, tid as nix::libc::id_t, 19);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DistArray, SparseArray};

    /// A test's own folder, removed with it.
    struct Folder(PathBuf);

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// `name` in a folder of the test's own (named after it), and the folder.
    fn tmp(name: &str) -> (Folder, PathBuf) {
        let dir = std::env::temp_dir().join(format!("strads-ckpt-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        (Folder(dir), path)
    }

    #[test]
    fn arrays_and_values_round_trip_through_a_file() {
        let (_folder, path) = tmp("round.ckpt");
        let w = DistArray::<f64, 2>::from_fn([4, 3], |[i, j]| i as f64 - j as f64 / 3.0);
        let r = SparseArray::from_entries([4, 5], vec![([3, 4], 1.5f32), ([0, 0], 2.0)]).unwrap();
        let mut c = Checkpoint::new();
        c.add("w", &w)
            .unwrap()
            .add("ratings", &r)
            .unwrap()
            .add("lr", &0.01f32)
            .unwrap();
        c.save(&path).unwrap();
        let back = Checkpoint::load(&path).unwrap();
        assert_eq!(back.names(), vec!["w", "ratings", "lr"]);
        assert_eq!(back.get::<DistArray<f64, 2>>("w").unwrap(), w);
        let r2: SparseArray<f32, 2> = back.get("ratings").unwrap();
        assert_eq!(r2.iter().collect::<Vec<_>>(), r.iter().collect::<Vec<_>>());
        assert_eq!(back.get::<f32>("lr").unwrap(), 0.01);
        // No temporary file is left beside it.
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("round.ckpt"))
            .collect();
        assert_eq!(left, vec!["round.ckpt"]);
    }

    /// Every way a file can be wrong is an error naming the file and, where one is at
    /// fault, the value: never values that differ from those saved.
    #[test]
    fn bad_files_are_refused_by_name() {
        let (_folder, path) = tmp("bad.ckpt");
        let w = DistArray::<f32, 1>::from_vec([6], vec![1.0; 6]).unwrap();
        let mut c = Checkpoint::new();
        c.add("w", &w).unwrap();
        assert_eq!(
            c.add("w", &w).unwrap_err().to_string(),
            "<memory>: `w` is saved twice"
        );
        c.save(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        let shown = path.display();
        let fails = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            Checkpoint::load(&path).unwrap_err().to_string()
        };
        // A flipped byte in the values.
        let mut bad = good.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(
            fails(&bad),
            format!("{shown}: value `w` fails its checksum: the file is corrupted")
        );
        // Cut short, anywhere.
        for cut in [0, 10, MAGIC.len() + 2, MAGIC.len() + 9, good.len() - 3] {
            let e = fails(&good[..cut]);
            assert!(
                e.starts_with(&format!("{shown}: "))
                    && (e.contains("cut short") || e.contains("not a strads")),
                "cut at {cut}: {e}"
            );
        }
        // Bytes after the end.
        let mut long = good.clone();
        long.push(0);
        assert_eq!(
            fails(&long),
            format!("{shown}: 1 bytes after its last value")
        );
        // Another version.
        let mut other = good.clone();
        other[MAGIC.len()] = 9;
        assert_eq!(
            fails(&other),
            format!("{shown}: a checkpoint of format 9; this strads reads format 1")
        );
        // Read back as another type, or a value not saved.
        std::fs::write(&path, &good).unwrap();
        let c = Checkpoint::load(&path).unwrap();
        assert_eq!(
            c.get::<DistArray<f32, 2>>("w").unwrap_err().to_string(),
            format!(
                "{shown}: `w` was saved as strads_runtime::array::dense::DistArray<f32, 1>, \
                 not strads_runtime::array::dense::DistArray<f32, 2>"
            )
        );
        // Types whose encodings agree are told apart by name.
        let mut ints = Checkpoint::new();
        ints.add("n", &-1i32).unwrap();
        assert_eq!(
            ints.get::<u32>("n").unwrap_err().to_string(),
            "<memory>: `n` was saved as i32, not u32"
        );
        assert_eq!(
            c.get::<u8>("h").unwrap_err().to_string(),
            format!("{shown}: no value `h` (saved: w)")
        );
        let _ = std::fs::remove_file(&path);
    }
}
