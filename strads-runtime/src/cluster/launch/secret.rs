//! The job secret: 32 random bytes the launcher makes (or the user gives in
//! `STRADS_JOB_SECRET_FILE`), from which every rank derives the job's certificate
//! authority. A file anyone else can read is refused.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The job's secret (SHA-256 of the file's contents).
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret(pub(crate) [u8; 32]);

impl std::fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobSecret(..)")
    }
}

impl JobSecret {
    /// The secret's bytes.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// A secret file made for one job, removed (with its directory) when dropped.
#[derive(Debug)]
pub struct SecretFile {
    dir: PathBuf,
    path: PathBuf,
}

impl SecretFile {
    /// 32 random bytes in a new directory of the temp dir (0700), in a file (0600).
    pub fn create() -> Result<SecretFile, String> {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| "the system's random generator failed".to_string())?;
        let tag: String = bytes[..6].iter().map(|b| format!("{b:02x}")).collect();
        let dir = std::env::temp_dir().join(format!("strads-{}-{tag}", std::process::id()));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let path = dir.join("job-secret");
        let made = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(&bytes));
        let file = SecretFile { dir, path };
        made.map_err(|e| format!("cannot write {}: {e}", file.path.display()))?;
        Ok(file)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SecretFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Reads the secret in `path`: a regular file of the current user that no one else may
/// read or write, holding at least 32 bytes.
pub fn read_secret(path: &Path) -> Result<JobSecret, String> {
    let shown = path.display();
    let meta = fs::metadata(path).map_err(|e| format!("job secret file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("job secret file {shown}: not a regular file"));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(format!("job secret file {shown}: owned by another user"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "job secret file {shown}: others may read or write it; `chmod 600 {shown}`"
        ));
    }
    let bytes = fs::read(path).map_err(|e| format!("job secret file {shown}: {e}"))?;
    if bytes.len() < 32 {
        return Err(format!(
            "job secret file {shown}: {} bytes, at least 32 expected (`head -c 32 /dev/urandom \
             > {shown}`)",
            bytes.len()
        ));
    }
    let d = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let mut s = [0u8; 32];
    s.copy_from_slice(d.as_ref());
    Ok(JobSecret(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_secret_reads_back_and_is_removed_on_drop() {
        let f = SecretFile::create().unwrap();
        let s = read_secret(f.path()).unwrap();
        assert_eq!(read_secret(f.path()).unwrap(), s);
        assert_eq!(format!("{s:?}"), "JobSecret(..)");
        let p = f.path().to_path_buf();
        drop(f);
        assert!(!p.exists());
    }

    #[test]
    fn readable_short_or_missing_files_are_refused() {
        let f = SecretFile::create().unwrap();
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_secret(f.path()).unwrap_err().contains("chmod 600"));
        fs::set_permissions(f.path(), fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(f.path(), b"short").unwrap();
        assert!(
            read_secret(f.path())
                .unwrap_err()
                .contains("5 bytes, at least 32")
        );
        let missing = f.path().with_extension("none");
        assert!(
            read_secret(&missing)
                .unwrap_err()
                .starts_with("job secret file")
        );
        assert!(
            read_secret(f.path().parent().unwrap())
                .unwrap_err()
                .contains("not a regular")
        );
    }
}
