//! Tells the tests whether the shared data sets are beside the checkout: tests that need
//! them are `#[ignore]`d without them, so a machine without the data shows them as ignored
//! (skipped), never as passed.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(strads_shared_data)");
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../shared/data/movielens-100k");
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.join("ua.base").exists() && dir.join("u.data").exists() {
        println!("cargo::rustc-cfg=strads_shared_data");
    }
}
