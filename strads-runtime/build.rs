//! Tells the unit tests which shared data sets are beside the checkout
//! (`../shared/data/<set>` next to the workspace): tests that need a set are `#[ignore]`d
//! without it, so a machine without the data shows them as ignored (skipped), never as
//! passed.

use std::path::PathBuf;

/// `(cfg name, data set folder, files the tests read)`.
const SETS: [(&str, &str, &[&str]); 7] = [
    (
        "strads_data_movielens_100k",
        "movielens-100k",
        &["ua.base", "ua.test"],
    ),
    (
        "strads_data_movielens_latest_small",
        "movielens-latest-small",
        &["ratings.csv"],
    ),
    ("strads_data_libsvm_a9a", "libsvm-a9a", &["a9a", "a9a.t"]),
    ("strads_data_lda_ap", "lda-ap", &["ap.dat", "vocab.txt"]),
    (
        "strads_data_text8_prefix",
        "text8-prefix",
        &["text8_prefix_6877825.txt.gz"],
    ),
    (
        "strads_data_kg_fb15k237",
        "kg-fb15k237",
        &[
            "train2id.txt",
            "valid2id.txt",
            "test2id.txt",
            "entity2id.txt",
            "relation2id.txt",
        ],
    ),
    (
        "strads_data_kg_wn18rr",
        "kg-wn18rr",
        &["train.txt", "valid.txt", "test.txt"],
    ),
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../../shared/data");
    for (cfg, set, files) in SETS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let dir = root.join(set);
        println!("cargo::rerun-if-changed={}", dir.display());
        if files.iter().all(|f| dir.join(f).exists()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
