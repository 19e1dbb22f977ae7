//! Where the example binaries are, for benches that run them as whole processes.

use std::path::{Path, PathBuf};

/// `given`, else the `examples` directory beside this bench's (`target/release/deps/<bench>`
/// → `target/release/examples`).
pub(crate) fn dir(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(d) = given {
        return Ok(d.to_path_buf());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    exe.parent()
        .and_then(Path::parent)
        .map(|p| p.join("examples"))
        .ok_or_else(|| "cannot find the target directory".to_string())
}
