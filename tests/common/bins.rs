//! Finding the example binaries a test runs (`cargo test` builds them; a test alone does
//! not), checked to be newer than their sources.

use std::path::{Path, PathBuf};

/// The newest modification time of the sources the binary at `path` was built from, as
/// listed in cargo's dep-info file next to it (`<path>.d`).
fn newest_source(path: &Path) -> std::time::SystemTime {
    let info = path.with_extension("d");
    let text = std::fs::read_to_string(&info)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", info.display()));
    let deps = text
        .lines()
        .next()
        .and_then(|l| l.split_once(": "))
        .map_or("", |d| d.1);
    deps.split_whitespace()
        .filter_map(|dep| std::fs::metadata(dep).and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH)
}

/// `target/<profile>/examples/<name>`, next to this test's `deps` directory; it must exist
/// and be newer than the sources (`cargo test --test it` alone does not build the
/// examples; `cargo test` does).
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let path = profile
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "the example binary {} is missing: run `cargo build --examples` (or the whole \
         `cargo test`, which builds them) first",
        path.display()
    );
    let built = std::fs::metadata(&path).and_then(|m| m.modified()).unwrap();
    assert!(
        built >= newest_source(&path),
        "the example binary {} is older than the sources: run `cargo build --examples` (or \
         the whole `cargo test`) first; `cargo test --test it` does not rebuild examples",
        path.display()
    );
    path
}
