//! `--save FILE` (issue 27, item 3): each example writes its model in its field's format,
//! whole, with the shapes and values the run had. (LIBMF's own `mf_load_model` and gensim
//! reading these files with the same scores is measured in BENCHMARKS.md, "Issue 27".)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bins::example;

/// Runs example `name` with `args` and `--save` into a fresh file: its output and the
/// file's text.
fn saved(name: &str, args: &[&str]) -> (String, String) {
    let path: PathBuf =
        std::env::temp_dir().join(format!("strads-saved-{name}-{}.txt", std::process::id()));
    let mut cmd = Command::new(example(name));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .args(args)
        .arg("--save")
        .arg(&path)
        .env("STRADS_THREADS", "2")
        .stdin(Stdio::null())
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).expect("the saved model");
    let _ = std::fs::remove_file(&path);
    // Nothing is left beside it (its temporary file was renamed).
    let dir = path.parent().unwrap_or(Path::new("."));
    let stem = path.file_name().unwrap().to_string_lossy().into_owned();
    let left = std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .contains(&format!(".{stem}.tmp-"))
    });
    assert!(!left, "a temporary file beside {}", path.display());
    (stdout, text)
}

/// The value of `key=` in the last line of `out`.
fn field(out: &str, key: &str) -> String {
    let last = out.lines().last().unwrap_or_default();
    last.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {last}"))
        .to_owned()
}

/// Floats that parse and are finite.
fn floats<'a>(fields: impl Iterator<Item = &'a str>) -> Vec<f32> {
    fields
        .map(|f| {
            let v: f32 = f.parse().unwrap_or_else(|_| panic!("not a float: {f:?}"));
            assert!(v.is_finite(), "{f}");
            v
        })
        .collect()
}

#[test]
fn sgd_mf_saves_libmf_s_text_model() {
    let (_, text) = saved(
        "sgd_mf",
        &[
            "--ratings",
            "3000",
            "--users",
            "50",
            "--items",
            "40",
            "--k",
            "4",
            "--epochs",
            "2",
        ],
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..4], ["f 0", "m 50", "n 40", "k 4"]);
    let b: f32 = lines[4].strip_prefix("b ").unwrap().parse().unwrap();
    assert!(b > 0.0, "the mean rating: {b}");
    assert_eq!(lines.len(), 5 + 50 + 40);
    for (i, line) in lines[5..].iter().enumerate() {
        let (prefix, id) = if i < 50 { ('p', i) } else { ('q', i - 50) };
        let mut f = line.split_whitespace();
        assert_eq!(f.next(), Some(format!("{prefix}{id}").as_str()));
        assert_eq!(f.next(), Some("T"));
        assert_eq!(floats(f).len(), 4, "{line}");
    }
}

#[test]
fn word2vec_saves_the_word2vec_text_format() {
    let (out, text) = saved(
        "word2vec",
        &["--words", "20000", "--epochs", "1", "--dim", "8"],
    );
    let vocab: usize = field(&out, "vocab").parse().unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(format!("{vocab} 8").as_str()));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), vocab);
    let mut words = std::collections::HashSet::new();
    for row in rows {
        let mut f = row.split(' ');
        assert!(words.insert(f.next().unwrap().to_owned()), "a word twice");
        assert_eq!(floats(f).len(), 8, "{row}");
    }
}

#[test]
fn transe_saves_openke_s_parameters() {
    let (_, text) = saved(
        "transe",
        &[
            "--entities",
            "60",
            "--relations",
            "4",
            "--triples",
            "600",
            "--valid-triples",
            "20",
            "--test-triples",
            "20",
            "--dim",
            "8",
            "--epochs",
            "1",
        ],
    );
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    for (key, rows) in [("ent_embeddings.weight", 60), ("rel_embeddings.weight", 4)] {
        let a = json[key].as_array().unwrap_or_else(|| panic!("{key}"));
        assert_eq!(a.len(), rows, "{key}");
        assert!(a.iter().all(|r| r.as_array().is_some_and(
            |r| r.len() == 8 && r.iter().all(|v| v.as_f64().is_some_and(f64::is_finite))
        )));
    }
}

#[test]
fn lda_saves_topic_word_counts_as_the_lda_package_s_nzw() {
    let (out, text) = saved(
        "lda",
        &[
            "--docs",
            "30",
            "--topics",
            "3",
            "--iterations",
            "2",
            "--show",
            "0",
        ],
    );
    let head = out.lines().next().unwrap();
    let number = |key: &str| -> usize {
        head.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{key}=")))
            .unwrap()
            .parse()
            .unwrap()
    };
    let rows: Vec<Vec<u64>> = text
        .lines()
        .map(|l| l.split(' ').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.len() == number("words")));
    let total: u64 = rows.iter().flatten().sum();
    assert_eq!(total as usize, number("tokens"));
}
