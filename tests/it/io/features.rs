//! The threads-only build (issue 27, item 2): without the default feature `cluster`, strads'
//! tree holds none of quinn, tokio, rustls, ring or rcgen, and it compiles (the runtime
//! and the facade). What a cluster setting says in that build is a unit test of
//! `strads-runtime`'s `cluster::start`, which compiles in every configuration.

use std::process::Command;

/// The five crates only the cluster runtime needs.
const CLUSTER_ONLY: [&str; 5] = ["quinn", "tokio", "rustls", "ring", "rcgen"];

/// The names of the packages in `strads`' normal dependency tree with `features`.
fn tree(features: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "-p",
            "strads",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .args(features)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_threads_only_tree_holds_none_of_the_cluster_crates() {
    let all = tree(&[]);
    let threads = tree(&["--no-default-features"]);
    for name in CLUSTER_ONLY {
        assert!(
            all.iter().any(|p| p == name),
            "{name} is in the default tree"
        );
        assert!(
            !threads.iter().any(|p| p == name),
            "{name} is in the threads-only tree: {threads:?}"
        );
    }
}

#[test]
fn the_threads_only_build_compiles() {
    // Its own target directory: this test binary's cargo holds the workspace's. A check
    // (the runtime and the facade), not a build: what a cluster setting says there is a
    // unit test of `cluster::start`, which compiles in every configuration.
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO"))
        .current_dir(root)
        .env("CARGO_TARGET_DIR", format!("{root}/target/threads-only"))
        .args([
            "check",
            "--offline",
            "-p",
            "strads",
            "--no-default-features",
            "--lib",
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
