//! [`Staged`]: a file written whole or not at all, in pieces: to a temporary file beside
//! it of a name of its own, then synced and renamed over it (and the directory synced).
//! Its bytes may be written by one thread and committed by another, so a large array is
//! written from where it lives, a piece at a time, with no copy kept for the writer.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Error, Result};

/// A file being written (see the [module](self)); dropped uncommitted, the temporary file
/// goes.
#[derive(Debug)]
pub(crate) struct Staged {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::fs::File>,
}

impl Staged {
    /// Begins `path`: its temporary file, new.
    pub(crate) fn create(path: &Path) -> Result<Staged> {
        let name = path.file_name().ok_or_else(|| Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("not a file name"),
        })?;
        // A name of its own (process, save, a counter against collisions), made afresh:
        // two saves at once never write one temporary file, nor follow a link left there.
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        for _ in 0..64 {
            let mut tmp_name = name.to_os_string();
            let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tmp_name.push(format!(".tmp-{}-{n}", std::process::id()));
            let tmp = path.with_file_name(tmp_name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(Error::Io { path: tmp, source }),
                Ok(f) => {
                    return Ok(Staged {
                        path: path.to_path_buf(),
                        tmp,
                        file: Some(f),
                    });
                }
            }
        }
        Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("no free temporary name beside it"),
        })
    }

    /// Appends `bytes`.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let f = self
            .file
            .as_mut()
            .expect("a staged file is open until committed");
        f.write_all(bytes).map_err(|source| Error::Io {
            path: self.tmp.clone(),
            source,
        })
    }

    /// Syncs the bytes written to disk and renames the file over its path (then syncs the
    /// directory): the file is there whole.
    pub(crate) fn commit(mut self) -> Result<()> {
        let f = self.file.take().expect("committed once");
        f.sync_all().map_err(|source| Error::Io {
            path: self.tmp.clone(),
            source,
        })?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path).map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })?;
        // Renamed: nothing for the drop to remove.
        self.tmp = PathBuf::new();
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temps(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect()
    }

    #[test]
    fn a_staged_file_appears_whole_when_committed_and_never_in_part() {
        let dir = std::env::temp_dir().join(format!("strads-staged-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.bin");
        std::fs::write(&path, b"old").unwrap();
        // Written in pieces: the old file stays until the commit.
        let mut s = Staged::create(&path).unwrap();
        s.write(b"new ").unwrap();
        s.write(b"bytes").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(temps(&dir).len(), 1);
        s.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new bytes");
        assert!(temps(&dir).is_empty());
        // Dropped uncommitted (a failed write, a job let go): nothing changes, no temporary
        // file stays.
        let mut s = Staged::create(&path).unwrap();
        s.write(b"lost").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&path).unwrap(), b"new bytes");
        assert!(temps(&dir).is_empty());
        // A commit that cannot rename (the target is a directory) fails naming it, and
        // removes its temporary file.
        let blocked = dir.join("sub");
        std::fs::create_dir_all(blocked.join("x")).unwrap();
        let s = Staged::create(&blocked).unwrap();
        let e = s.commit().unwrap_err().to_string();
        assert!(e.contains("sub"), "{e}");
        assert!(temps(&dir).is_empty());
        // No directory to write in: an error naming the temporary file.
        let e = Staged::create(&dir.join("missing/b.bin"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
