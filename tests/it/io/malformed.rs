//! Malformed inputs: every loader on every file of `tests/malformed/` (plus an endless
//! line and `/dev/zero`), and every example binary on bad files, bad flags and bad
//! `STRADS_*` settings. Nothing may panic, abort or hang; every refusal is a clear error
//! naming the file and line, or the flag or setting, and what was expected.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strads::{corpus, load};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed")
}

fn file(name: &str) -> PathBuf {
    let p = dir().join(name);
    assert!(p.exists(), "missing corpus file {}", p.display());
    p
}

/// Every file of the corpus, sorted.
fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 40, "the corpus has {} files", files.len());
    files
}

/// A file of `len` bytes of `x` and no line break, in the temporary directory.
fn endless_line(len: usize) -> PathBuf {
    let p = std::env::temp_dir().join(format!("strads-malformed-endless-{}", std::process::id()));
    if std::fs::metadata(&p).map(|m| m.len()).ok() != Some(len as u64) {
        std::fs::write(&p, vec![b'x'; len]).unwrap();
    }
    p
}

type Loader = (&'static str, fn(&Path) -> Result<(), String>);

fn show<T>(r: strads::Result<T>) -> Result<(), String> {
    r.map(|_| ()).map_err(|e| e.to_string())
}

/// Every loader, as a function of one path (pairs take the path as each of their files,
/// with a good file as the other; the vocabulary loader pairs it with a good corpus).
fn loaders() -> Vec<Loader> {
    vec![
        ("ratings", |p| show(load::ratings(p))),
        ("ratings_with_shape", |p| {
            show(load::ratings_with_shape(p, [943, 1682]))
        }),
        ("ratings_pair/train", |p| {
            show(load::ratings_pair(p, file("ratings_ok_bom_crlf.data")))
        }),
        ("ratings_pair/test", |p| {
            show(load::ratings_pair(file("ratings_ok_bom_crlf.data"), p))
        }),
        ("libsvm", |p| show(load::libsvm(p))),
        ("libsvm_pair/train", |p| {
            show(load::libsvm_pair(p, file("libsvm_ok_crlf.svm")))
        }),
        ("libsvm_pair/test", |p| {
            show(load::libsvm_pair(file("libsvm_ok_crlf.svm"), p))
        }),
        ("lda_c", |p| show(corpus::lda_c(p, None))),
        ("words", |p| show(load::words(p, 1, 10_000))),
        ("lda_c/vocab", |p| {
            show(corpus::lda_c(file("ldac_ok_bom_crlf.dat"), Some(p)))
        }),
    ]
}

/// Runs `f`, failing the test if it panics.
fn no_panic(what: &str, f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("{what} panicked: {msg}")
        }
    }
}

/// `error` is `<path>:<line>: ...`, for a path of `path`'s file.
fn names_file_and_line(error: &str, path: &Path) -> bool {
    let Some(rest) = error.strip_prefix(&format!("{}:", path.display())) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(": ")
}

/// Every loader on every file: no panic; every error names a file of the call and a line.
#[test]
fn every_loader_on_every_file() {
    let mut files = corpus_files();
    files.push(endless_line(17 << 20));
    #[cfg(unix)]
    files.push(PathBuf::from("/dev/zero"));
    let mut refused = 0;
    for path in &files {
        for (name, f) in loaders() {
            let what = format!("{name}({})", path.display());
            let t = Instant::now();
            let r = no_panic(&what, || f(path));
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{what} took {:?}",
                t.elapsed()
            );
            if let Err(e) = r {
                refused += 1;
                let good = [
                    "ratings_ok_bom_crlf.data",
                    "libsvm_ok_crlf.svm",
                    "ldac_ok_bom_crlf.dat",
                ]
                .map(file);
                assert!(
                    names_file_and_line(&e, path)
                        || good.iter().any(|g| names_file_and_line(&e, g)),
                    "{what}: the error does not name the file and a line: {e}"
                );
                assert!(
                    e.contains("; expected ") || e.contains("is outside the array's shape"),
                    "{what}: says neither what was expected nor the bound: {e}"
                );
            }
        }
    }
    assert!(refused > 300, "only {refused} refusals");
}

/// Seeded mutations of the good files (bytes flipped, dropped, doubled, digits and
/// separators inserted) through every loader: never a panic, and every error names a
/// file and a line.
#[test]
fn mutated_files_never_panic() {
    let seeds = [
        "ratings_ok_bom_crlf.data",
        "ratings_inf.csv",
        "libsvm_ok_crlf.svm",
        "ldac_ok_bom_crlf.dat",
        "vocab_ok.txt",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let path = std::env::temp_dir().join(format!("strads-malformed-mutant-{}", std::process::id()));
    let alphabet = b"0123456789:,. \t\n\r-+eE#x\xff\x00";
    for round in 0..400 {
        let mut bytes = std::fs::read(file(seeds[round % seeds.len()])).unwrap();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % (bytes.len() + 1);
            match next() % 4 {
                0 if at < bytes.len() => bytes[at] = alphabet[(next() as usize) % alphabet.len()],
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                2 => bytes.insert(at, alphabet[(next() as usize) % alphabet.len()]),
                _ => {
                    let digits = format!("{}", next() >> (next() % 64));
                    bytes.splice(at..at, digits.bytes());
                }
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        for (name, f) in loaders() {
            let what = format!(
                "{name} on mutant {round}: {:?}",
                String::from_utf8_lossy(&bytes)
            );
            if let Err(e) = no_panic(&what, || f(&path)) {
                let good = [
                    "ratings_ok_bom_crlf.data",
                    "libsvm_ok_crlf.svm",
                    "ldac_ok_bom_crlf.dat",
                ]
                .map(file);
                assert!(
                    names_file_and_line(&e, &path)
                        || good.iter().any(|g| names_file_and_line(&e, g)),
                    "{what}: {e}"
                );
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// The errors of each loader on the files made for it, exactly where it matters: the
/// file, the line and what is wrong.
#[test]
fn loaders_name_file_line_and_problem() {
    let cases: &[(&str, &str, usize, &str)] = &[
        (
            "ratings",
            "ratings_empty.data",
            1,
            "the file has no ratings",
        ),
        (
            "ratings",
            "ratings_blank_lines.data",
            4,
            "the file has no ratings",
        ),
        (
            "ratings",
            "ratings_two_fields.data",
            2,
            "found 2 fields, need 3 or 4",
        ),
        (
            "ratings",
            "ratings_five_fields.data",
            1,
            "found 5 fields, need 3 or 4",
        ),
        (
            "ratings",
            "ratings_truncated.data",
            2,
            "found 2 fields, need 3 or 4",
        ),
        (
            "ratings",
            "ratings_user_1e8.data",
            2,
            "user id 100000000 is too large for 2 ratings",
        ),
        (
            "ratings",
            "ratings_item_2pow32.data",
            1,
            "item id 4294967296 is too large for 2 ratings",
        ),
        (
            "ratings",
            "ratings_id_overflow.data",
            1,
            "user id \"99999999999999999999999\" is too large",
        ),
        (
            "ratings",
            "ratings_id_zero.data",
            1,
            "user id \"0\" is invalid: ids are 1-based",
        ),
        (
            "ratings",
            "ratings_negative_id.data",
            1,
            "user id \"-1\" is not a positive integer",
        ),
        (
            "ratings",
            "ratings_float_id.data",
            1,
            "user id \"1.5\" is not a positive integer",
        ),
        (
            "ratings",
            "ratings_3e38.data",
            2,
            "rating \"3e38\" is beyond the limit: ratings are at most 1e9",
        ),
        (
            "ratings",
            "ratings_nan.data",
            1,
            "rating \"NaN\" is not finite",
        ),
        (
            "ratings",
            "ratings_inf.csv",
            3,
            "rating \"inf\" is not finite",
        ),
        (
            "ratings",
            "ratings_text_rating.data",
            1,
            "rating \"five\" is not a number",
        ),
        (
            "ratings",
            "ratings_bad_timestamp.data",
            1,
            "timestamp \"yesterday\" is not an integer",
        ),
        (
            "ratings",
            "ratings_header_only.csv",
            2,
            "the file has no ratings",
        ),
        (
            "ratings",
            "ratings_csv_two_fields.csv",
            1,
            "found 2 fields, need at least 3",
        ),
        (
            "ratings",
            "ratings_csv_negative.csv",
            1,
            "item id \"-2\" is not a non-negative integer",
        ),
        (
            "ratings",
            "junk_no_newline.bin",
            1,
            "found 1 fields, need 3 or 4",
        ),
        (
            "ratings",
            "libsvm_ok_crlf.svm",
            1,
            "found 6 fields, need 3 or 4",
        ),
        ("libsvm", "libsvm_empty.svm", 1, "the file has no samples"),
        (
            "libsvm",
            "libsvm_comments_only.svm",
            3,
            "the file has no samples",
        ),
        (
            "libsvm",
            "libsvm_label_2.svm",
            2,
            "label \"2\" is not +1, 1, -1 or 0",
        ),
        (
            "libsvm",
            "libsvm_label_nan.svm",
            1,
            "label \"nan\" is not +1, 1, -1 or 0",
        ),
        (
            "libsvm",
            "libsvm_missing_value.svm",
            1,
            "entry \"1:\" is not index:value",
        ),
        (
            "libsvm",
            "libsvm_not_pair.svm",
            1,
            "entry \"7\" is not index:value",
        ),
        (
            "libsvm",
            "libsvm_index_zero.svm",
            1,
            "index 0 in \"0:1\" is invalid: indices are 1-based",
        ),
        (
            "libsvm",
            "libsvm_decreasing.svm",
            1,
            "index 3 in \"3:1\" does not follow index 5",
        ),
        (
            "libsvm",
            "libsvm_index_1e8.svm",
            2,
            "index 100000000 is too large for 2 entries",
        ),
        (
            "libsvm",
            "libsvm_index_2pow32.svm",
            1,
            "index 4294967296 is too large for 1 entry",
        ),
        (
            "libsvm",
            "libsvm_index_overflow.svm",
            1,
            "index in \"99999999999999999999999:1\" is too large (at most 4294967296)",
        ),
        (
            "libsvm",
            "libsvm_value_nan.svm",
            1,
            "value \"nan\" in \"1:nan\" is not finite",
        ),
        (
            "libsvm",
            "libsvm_value_3e39.svm",
            1,
            "value \"3e39\" in \"1:3e39\" is not finite",
        ),
        ("lda_c", "ldac_empty.dat", 1, "the file has no documents"),
        (
            "lda_c",
            "ldac_no_words.dat",
            4,
            "the file's 2 documents hold no words",
        ),
        (
            "lda_c",
            "ldac_n_mismatch.dat",
            2,
            "the line says N = 3 distinct words but has 2",
        ),
        (
            "lda_c",
            "ldac_not_pair.dat",
            1,
            "pair \"3\" is not id:count",
        ),
        (
            "lda_c",
            "ldac_negative_count.dat",
            1,
            "count \"-3\" in \"0:-3\" is not a positive integer",
        ),
        (
            "lda_c",
            "ldac_zero_count.dat",
            1,
            "count 0 in \"7:0\" is invalid",
        ),
        (
            "lda_c",
            "ldac_repeated_word.dat",
            1,
            "word id 5 appears twice",
        ),
        (
            "lda_c",
            "ldac_count_2_2e9.dat",
            2,
            "the counts up to this line add up to 2200000007 tokens",
        ),
        (
            "lda_c",
            "ldac_i32_overflow.dat",
            1,
            "the counts up to this line add up to 1500000000 tokens in 1 id:count pairs, more than the limit of 16777216",
        ),
        (
            "lda_c",
            "ldac_word_1e8.dat",
            2,
            "word id 100000000 is too large for 2 id:count pairs",
        ),
        (
            "lda_c",
            "ldac_word_2pow32.dat",
            1,
            "word id in \"4294967296:1\" is too large",
        ),
        (
            "lda_c/vocab",
            "vocab_blank_middle.txt",
            2,
            "the line is empty",
        ),
        (
            "lda_c/vocab",
            "vocab_empty.txt",
            1,
            "the vocabulary has no words",
        ),
        (
            "lda_c/vocab",
            "vocab_not_utf8.txt",
            2,
            "the line is not UTF-8",
        ),
    ];
    let all = loaders();
    for &(loader, name, line, problem) in cases {
        let path = file(name);
        let f = all.iter().find(|(n, _)| *n == loader).unwrap().1;
        let e = no_panic(loader, || f(&path)).expect_err(name);
        let head = format!("{}:{line}: {problem}", path.display());
        assert!(
            e.starts_with(&head),
            "{loader}({name}):\n  got {e}\n want {head}..."
        );
    }
    // The word ids of a corpus against its vocabulary.
    let e = corpus::lda_c(file("ldac_word_4.dat"), Some(&file("vocab_ok.txt")))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}:2: word id 4 in \"4:2\" is beyond the vocabulary: {} has 3 words",
            file("ldac_word_4.dat").display(),
            file("vocab_ok.txt").display()
        )),
        "{e}"
    );
    // The good files load, BOM and CRLF included.
    assert_eq!(
        load::ratings(file("ratings_ok_bom_crlf.data"))
            .unwrap()
            .nnz(),
        2
    );
    assert_eq!(
        load::libsvm(file("libsvm_ok_crlf.svm")).unwrap().samples(),
        3
    );
    let c = corpus::lda_c(file("ldac_ok_bom_crlf.dat"), Some(&file("vocab_ok.txt"))).unwrap();
    assert_eq!((c.docs, c.words, c.tokens()), (2, 3, 6));
    // A vocabulary that ends with a blank line, as an editor leaves it: its words.
    let c = corpus::lda_c(
        file("ldac_ok_bom_crlf.dat"),
        Some(&file("vocab_blank_end.txt")),
    );
    assert_eq!(c.unwrap().vocab, ["alpha", "beta", "gamma"]);
    // A line without end fails at the limit, quickly.
    let endless = endless_line(17 << 20);
    for (loader, f) in loaders() {
        let e = no_panic(loader, || f(&endless)).unwrap_err();
        // The words loader streams its lines (text8 is one line of 100 MB), and stops at
        // the first overlong word instead.
        let head = if loader == "words" {
            format!(
                "{}:1: a word longer than {} bytes, starting \"xxxx",
                endless.display(),
                load::MAX_WORD
            )
        } else {
            format!(
                "{}:1: the line is longer than {} bytes (the loaders' limit)",
                endless.display(),
                load::MAX_LINE
            )
        };
        assert!(e.starts_with(&head), "{loader}: {e}");
    }
}

// ---- the example binaries ----

use crate::bins;
use bins::example;

/// The longest an example may take on bad input before it counts as hung.
const BOUND: Duration = Duration::from_secs(60);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs example `name` with `args` and the `STRADS_*` settings `env` (and no others),
/// killing it after [`BOUND`]. Fails on a panic (exit 101), a signal (an abort) or a hang.
fn run(name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(example(name));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("STRADS_THREADS", "2");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let what = format!("{name} {args:?} {env:?}");
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    // Drain the pipes on their own threads, so a chatty child cannot block.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut s).ok();
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {BOUND:?} (hung), killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            None,
            "{what}: killed by a signal (abort?):\n{stderr}"
        );
    }
    assert_ne!(status.code(), Some(101), "{what}: panicked:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{what}: panicked:\n{stderr}");
    Run {
        code: status.code(),
        stdout,
        stderr,
    }
}

/// Runs `name` and checks it failed with status `code` and `expected` on stderr.
fn refuses(name: &str, args: &[&str], env: &[(&str, &str)], code: i32, expected: &str) {
    let r = run(name, args, env);
    assert_eq!(
        r.code,
        Some(code),
        "{name} {args:?} {env:?}: status\nstdout: {}\nstderr: {}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stderr.contains(expected),
        "{name} {args:?} {env:?}: stderr lacks {expected:?}:\n{}",
        r.stderr
    );
}

fn p(name: &str) -> String {
    file(name).display().to_string()
}

/// Bad `STRADS_*` values: every example reports the one message (variable, value, what is
/// accepted) and exits with status 2, before any work.
#[test]
fn examples_refuse_bad_settings() {
    let boolean = "1, true, yes, on (on) or 0, false, no, off (off), in any case; empty or \
                   unset for the default";
    let threads = "a whole number of worker threads from 1 to 1024; empty or unset for the \
                   available cores";
    let cases: Vec<(&str, &str, String)> = vec![
        ("STRADS_THREADS", "0", threads.to_owned()),
        ("STRADS_THREADS", "abc", threads.to_owned()),
        ("STRADS_THREADS", "-1", threads.to_owned()),
        ("STRADS_AFFINITY", "abc", boolean.to_owned()),
        ("STRADS_SERIAL", "maybe", boolean.to_owned()),
        ("STRADS_EXPLAIN", "2", boolean.to_owned()),
        ("STRADS_SPLIT", "nope", boolean.to_owned()),
        (
            "STRADS_PARTITION",
            "bogus",
            "balanced (or histogram: equal iteration counts, the default) or uniform (equal id \
             ranges), in any case; empty or unset for the default"
                .to_owned(),
        ),
    ];
    for example in [
        "sgd_mf",
        "dtw",
        "sparse_lr",
        "lda",
        "sgd_mf-expanded",
        "word2vec",
        "transe",
    ] {
        for (var, value, accepted) in &cases {
            let r = run(example, &[], &[(var, value)]);
            let message = format!("error: invalid setting {var}={value:?}: {accepted}\n");
            assert_eq!(r.code, Some(2), "{example} {var}={value}: {}", r.stderr);
            assert_eq!(r.stderr, message, "{example} {var}={value}");
        }
    }
    // Empty means the default; the accepted spellings run.
    let r = run(
        "dtw",
        &["--n", "20", "--m", "20"],
        &[("STRADS_THREADS", ""), ("STRADS_EXPLAIN", "Yes")],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("strads plan dtw_fill: unimodular"),
        "{}",
        r.stderr
    );
}

/// A program that does not call `config::check` meets the bad setting in its first loop:
/// the same message, once, and exit status 2 (here: this test binary, run as a child).
#[test]
fn a_loop_meeting_a_bad_setting_exits_cleanly() {
    let out = Command::new(std::env::current_exe().unwrap())
        // Output captured by the test harness, as in any test: the message must still
        // reach stderr, though the process ends inside the test.
        .args([
            "--exact",
            &crate::test_name(module_path!(), "loop_child"),
            "--ignored",
        ])
        .env("STRADS_SERIAL", "maybe")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let message = "error: invalid setting STRADS_SERIAL=\"maybe\": 1, true, yes, on (on) or 0, \
                   false, no, off (off), in any case; empty or unset for the default\n";
    assert_eq!(stderr.matches("invalid setting").count(), 1, "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("loop ran"));
}

#[strads::parallel_for]
fn add_one(a: &mut strads::DistArray<f32, 1>) {
    for i in 0..64 {
        a[i] += 1.0;
    }
}

/// Run by [`a_loop_meeting_a_bad_setting_exits_cleanly`] with a bad setting.
#[test]
#[ignore = "run in a child process by a_loop_meeting_a_bad_setting_exits_cleanly"]
fn loop_child() {
    let mut a = strads::DistArray::<f32, 1>::zeros([64]);
    let handles: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(strads::serial_mode))
        .collect();
    for h in handles {
        let _ = h.join();
    }
    add_one(&mut a);
    println!("loop ran");
}

/// Bad flags: the flag, the value and what is expected; status 2 (clap's usage error).
#[test]
fn examples_refuse_bad_flags() {
    let positive = "invalid value 'nan' for '--lr <LR>': expected a finite number above 0";
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "sgd_mf",
            &["--lr=-0.5"],
            "invalid value '-0.5' for '--lr <LR>': expected a finite number above 0",
        ),
        (
            "sgd_mf",
            &["--lr", "nan"],
            "invalid value 'nan' for '--lr <LR>': expected a finite number above 0",
        ),
        (
            "sgd_mf",
            &["--lr", "inf"],
            "invalid value 'inf' for '--lr <LR>'",
        ),
        (
            "sgd_mf",
            &["--reg=-5"],
            "invalid value '-5' for '--reg <REG>': expected a finite number, 0 or more",
        ),
        (
            "sgd_mf",
            &["--epochs", "0"],
            "invalid value '0' for '--epochs <EPOCHS>': expected a whole number, at least 1",
        ),
        (
            "sgd_mf",
            &["--k", "0"],
            "invalid value '0' for '--k <K>': expected a whole number, at least 1",
        ),
        (
            "sgd_mf",
            &["--users", "1e10"],
            "invalid value '1e10' for '--users <USERS>': expected a whole number from 1 to 4294967296",
        ),
        (
            "sgd_mf",
            &["--users", "10000000000"],
            "invalid value '10000000000' for '--users <USERS>'",
        ),
        (
            "sgd_mf",
            &["--items", "0"],
            "invalid value '0' for '--items <ITEMS>'",
        ),
        (
            "sgd_mf",
            &["--ratings=-3"],
            "invalid value '-3' for '--ratings <RATINGS>'",
        ),
        (
            "sgd_mf",
            &["--threads", "0"],
            "invalid value '0' for '--threads <THREADS>': expected a whole number of threads from 1 to 1024",
        ),
        (
            "dtw",
            &["--n", "0"],
            "invalid value '0' for '--n <N>': expected a whole number from 1 to 4294967296",
        ),
        ("dtw", &["--m", "abc"], "invalid value 'abc' for '--m <M>'"),
        (
            "dtw",
            &["--threads", "5000"],
            "invalid value '5000' for '--threads <THREADS>'",
        ),
        (
            "sparse_lr",
            &["--features", "1e10"],
            "invalid value '1e10' for '--features <FEATURES>': expected a whole number from 1 to 4294967296",
        ),
        ("sparse_lr", &["--lr", "nan"], positive),
        (
            "sparse_lr",
            &["--reg=-1"],
            "invalid value '-1' for '--reg <REG>'",
        ),
        (
            "sparse_lr",
            &["--decay", "inf"],
            "invalid value 'inf' for '--decay <DECAY>'",
        ),
        (
            "sparse_lr",
            &["--epochs", "0"],
            "invalid value '0' for '--epochs <EPOCHS>'",
        ),
        (
            "sparse_lr",
            &["--samples", "0"],
            "invalid value '0' for '--samples <SAMPLES>'",
        ),
        (
            "sparse_lr",
            &["--test-samples", "0"],
            "invalid value '0' for '--test-samples <TEST_SAMPLES>'",
        ),
        (
            "lda",
            &["--words", "0"],
            "invalid value '0' for '--words <WORDS>': expected a whole number from 1 to 4294967296",
        ),
        (
            "lda",
            &["--avg-len", "0"],
            "invalid value '0' for '--avg-len <AVG_LEN>': expected a finite number above 0",
        ),
        (
            "lda",
            &["--avg-len", "nan"],
            "invalid value 'nan' for '--avg-len <AVG_LEN>'",
        ),
        (
            "lda",
            &["--docs", "0"],
            "invalid value '0' for '--docs <DOCS>'",
        ),
        (
            "lda",
            &["--topics", "0"],
            "invalid value '0' for '--topics <TOPICS>': expected a whole number of topics from 1 to 65536",
        ),
        (
            "lda",
            &["--topics", "70000"],
            "invalid value '70000' for '--topics <TOPICS>'",
        ),
        (
            "lda",
            &["--alpha=-1"],
            "invalid value '-1' for '--alpha <ALPHA>'",
        ),
        (
            "lda",
            &["--beta", "nan"],
            "invalid value 'nan' for '--beta <BETA>'",
        ),
        (
            "lda",
            &["--iterations", "0"],
            "invalid value '0' for '--iterations <ITERATIONS>'",
        ),
        (
            "word2vec",
            &["--sample=-1"],
            "invalid value '-1' for '--sample <SAMPLE>': expected a finite number, 0 or more",
        ),
        (
            "word2vec",
            &["--alpha", "nan"],
            "invalid value 'nan' for '--alpha <ALPHA>': expected a finite number above 0",
        ),
        (
            "word2vec",
            &["--window", "0"],
            "invalid value '0' for '--window <WINDOW>': expected a whole number, at least 1",
        ),
        (
            "word2vec",
            &["--dim", "0"],
            "invalid value '0' for '--dim <DIM>'",
        ),
        (
            "transe",
            &["--epochs", "0"],
            "invalid value '0' for '--epochs <EPOCHS>'",
        ),
        (
            "transe",
            &["--lr", "inf"],
            "invalid value 'inf' for '--lr <LR>'",
        ),
        (
            "transe",
            &["--entities", "0"],
            "invalid value '0' for '--entities <ENTITIES>'",
        ),
    ];
    for &(example, args, expected) in cases {
        refuses(example, args, &[], 2, &format!("error: {expected}"));
    }
}

/// Extreme but valid flag values run to the end (the largest seed once overflowed).
#[test]
fn examples_accept_extreme_valid_flags() {
    let seed = u64::MAX.to_string();
    for (example, args) in [
        (
            "sgd_mf",
            vec!["--seed", &seed, "--ratings", "1000", "--epochs", "1"],
        ),
        ("dtw", vec!["--seed", &seed, "--n", "1", "--m", "1"]),
        (
            "sparse_lr",
            vec![
                "--seed",
                &seed,
                "--samples",
                "200",
                "--test-samples",
                "50",
                "--epochs",
                "1",
            ],
        ),
        (
            "lda",
            vec![
                "--seed",
                &seed,
                "--docs",
                "20",
                "--words",
                "1",
                "--topics",
                "1",
                "--iterations",
                "1",
                "--show",
                "0",
            ],
        ),
    ] {
        let r = run(example, &args, &[]);
        assert_eq!(r.code, Some(0), "{example} {args:?}: {}", r.stderr);
        assert!(
            !r.stdout.contains("NaN"),
            "{example} {args:?}: {}",
            r.stdout
        );
    }
    refuses(
        "sgd_mf",
        &["--seed=-1"],
        &[],
        2,
        "error: invalid value '-1' for '--seed <SEED>': expected a whole number from 0 to \
         18446744073709551615",
    );
    refuses(
        "lda",
        &["--show", "all"],
        &[],
        2,
        "error: invalid value 'all' for '--show <SHOW>': expected a whole number, 0 or more",
    );
}

/// What editors and small samples leave (issue 27, item 6): a file too small to hold out a
/// test split trains on all of it, saying so; a vocabulary ending in a blank line reads.
#[test]
fn examples_train_on_tiny_files_and_blank_ended_vocabularies() {
    let p = |f: &str| file(f).display().to_string();
    for (example, args, warning) in [
        (
            "sgd_mf",
            vec!["--data".to_string(), p("ratings_ok_bom_crlf.data")],
            "warning: 2 ratings are too few to hold 10% out for testing: training on all of them",
        ),
        (
            "sparse_lr",
            vec!["--data".to_string(), p("libsvm_ok_crlf.svm")],
            "warning: 3 samples are too few to hold 20% out for testing: training on all of them",
        ),
        (
            "lda",
            vec![
                "--data".to_string(),
                p("ldac_ok_bom_crlf.dat"),
                "--vocab".to_string(),
                p("vocab_blank_end.txt"),
                "--iterations".to_string(),
                "2".to_string(),
            ],
            "",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(example, &args, &[]);
        assert_eq!(r.code, Some(0), "{example} {args:?}: {}", r.stderr);
        assert!(r.stderr.contains(warning), "{example}: {}", r.stderr);
        assert!(!r.stdout.contains("NaN"), "{example}: {}", r.stdout);
    }
}

/// Values that pass the flags but not the program: sizes beyond memory, and runs that
/// diverge, stop with a clear error (status 1) instead of aborting or printing NaN.
#[test]
fn examples_refuse_meaningless_runs() {
    refuses(
        "sgd_mf",
        &["--k", "100000000000", "--ratings", "1000"],
        &[],
        1,
        "error: cannot allocate 2100000000021000 bytes for the factors of 943 users and 1682 \
         items with k = 100000000000",
    );
    refuses(
        "dtw",
        &["--n", "4294967296", "--m", "4294967296"],
        &[],
        1,
        "error: cannot allocate the tables of 4294967296 x 4294967296 cells: its size overflows",
    );
    refuses(
        "lda",
        &["--docs", "100", "--avg-len", "1e9"],
        &[],
        1,
        "error: --avg-len 1000000000 with --docs 100 asks for more than 1073741823 tokens; at \
         most 10737418 tokens per document for 100 documents",
    );
    refuses(
        "sgd_mf",
        &["--reg", "3e38", "--epochs", "2", "--ratings", "3000"],
        &[],
        1,
        "error: training diverged at epoch 1: the training RMSE is NaN; lower --lr (it is 0.01) \
         or --reg (it is 3e38)",
    );
    let r = run(
        "lda",
        &[
            "--beta",
            "1e-320",
            "--docs",
            "5",
            "--words",
            "5",
            "--iterations",
            "1",
        ],
        &[],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(!r.stdout.contains("NaN"), "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "error: the initial log-likelihood is NaN: --alpha 2.5 or --beta 1e-320 is too small \
             or too large to compute with"
        ),
        "{}",
        r.stderr
    );
    refuses(
        "sparse_lr",
        &["--samples", "1000000000"],
        &[],
        1,
        "error: --samples 1000000000 is too many: at most 306783378 samples with 14 active \
         features each (a set holds at most 4294967295 entries)",
    );
    refuses(
        "sgd_mf",
        &["--lr", "50", "--epochs", "3", "--ratings", "3000"],
        &[],
        1,
        "error: training diverged at epoch 1: the training RMSE is NaN; lower --lr (it is 50.0) or \
         --reg (it is 0.05)",
    );
    refuses(
        "sparse_lr",
        &[
            "--lr",
            "1e30",
            "--samples",
            "500",
            "--test-samples",
            "100",
            "--epochs",
            "2",
        ],
        &[],
        1,
        "error: training diverged at epoch 1: the training log loss is NaN; lower --lr",
    );
}

/// Bad data files through the examples: the loader's error, naming file and line.
#[test]
fn examples_refuse_bad_files() {
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        (
            "sgd_mf",
            vec!["--data".into(), p("ratings_user_1e8.data")],
            format!(
                "{}:2: user id 100000000 is too large",
                p("ratings_user_1e8.data")
            ),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), p("ratings_item_2pow32.data")],
            format!(
                "{}:1: item id 4294967296 is too large",
                p("ratings_item_2pow32.data")
            ),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), p("ratings_3e38.data")],
            format!(
                "{}:2: rating \"3e38\" is beyond the limit",
                p("ratings_3e38.data")
            ),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), p("ratings_empty.data")],
            format!("{}:1: the file has no ratings", p("ratings_empty.data")),
        ),
        (
            "sgd_mf",
            vec![
                "--data".into(),
                p("ratings_ok_bom_crlf.data"),
                "--test".into(),
                p("ratings_inf.csv"),
            ],
            format!("{}:1: this file is CSV but", p("ratings_inf.csv")),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), p("junk.bin")],
            format!("{}:", p("junk.bin")),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), "/dev/zero".into()],
            "/dev/zero:1: the line is longer than 16777216 bytes".into(),
        ),
        (
            "sgd_mf",
            vec!["--data".into(), "/no/such/file".into()],
            "/no/such/file: No such file".into(),
        ),
        (
            "sparse_lr",
            vec!["--data".into(), p("libsvm_index_2pow32.svm")],
            format!(
                "{}:1: index 4294967296 is too large for 1 entry",
                p("libsvm_index_2pow32.svm")
            ),
        ),
        (
            "sparse_lr",
            vec!["--data".into(), p("libsvm_index_1e8.svm")],
            format!(
                "{}:2: index 100000000 is too large",
                p("libsvm_index_1e8.svm")
            ),
        ),
        (
            "sparse_lr",
            vec!["--data".into(), p("libsvm_value_nan.svm")],
            format!("{}:1: value \"nan\"", p("libsvm_value_nan.svm")),
        ),
        (
            "sparse_lr",
            vec!["--data".into(), p("libsvm_comments_only.svm")],
            format!(
                "{}:3: the file has no samples",
                p("libsvm_comments_only.svm")
            ),
        ),
        (
            "sparse_lr",
            vec!["--data".into(), "/dev/zero".into()],
            "/dev/zero:1: the line is longer than 16777216 bytes".into(),
        ),
        (
            "lda",
            vec!["--data".into(), p("ldac_count_2_2e9.dat")],
            format!(
                "{}:2: the counts up to this line add up to 2200000007 tokens",
                p("ldac_count_2_2e9.dat")
            ),
        ),
        (
            "lda",
            vec!["--data".into(), p("ldac_i32_overflow.dat")],
            format!(
                "{}:1: the counts up to this line add up to 1500000000 tokens",
                p("ldac_i32_overflow.dat")
            ),
        ),
        (
            "lda",
            vec!["--data".into(), p("ldac_word_1e8.dat")],
            format!(
                "{}:2: word id 100000000 is too large",
                p("ldac_word_1e8.dat")
            ),
        ),
        (
            "lda",
            vec!["--data".into(), p("ldac_no_words.dat")],
            format!(
                "{}:4: the file's 2 documents hold no words",
                p("ldac_no_words.dat")
            ),
        ),
        (
            "lda",
            vec!["--data".into(), p("ldac_empty.dat")],
            format!("{}:1: the file has no documents", p("ldac_empty.dat")),
        ),
        (
            "lda",
            vec![
                "--data".into(),
                p("ldac_word_4.dat"),
                "--vocab".into(),
                p("vocab_ok.txt"),
            ],
            format!(
                "{}:2: word id 4 in \"4:2\" is beyond the vocabulary",
                p("ldac_word_4.dat")
            ),
        ),
        (
            "lda",
            vec!["--data".into(), "/dev/zero".into()],
            "/dev/zero:1: the line is longer than 16777216 bytes".into(),
        ),
        (
            "transe",
            vec!["--data".into(), "/no/such/dir".into()],
            "/no/such/dir: No such file".into(),
        ),
        (
            "transe",
            vec!["--data".into(), dir().display().to_string()],
            format!(
                "{}: not a folder of knowledge-graph triples: expected OpenKE's train2id.txt",
                dir().display()
            ),
        ),
        (
            "word2vec",
            vec!["--data".into(), "/dev/zero".into()],
            "/dev/zero:1: a NUL byte: this is a binary file, not text".into(),
        ),
        (
            "word2vec",
            vec!["--data".into(), "/no/such/file".into()],
            "/no/such/file: No such file".into(),
        ),
        (
            "word2vec",
            vec![
                "--data".into(),
                p("vocab_ok.txt"),
                "--min-count".into(),
                "1000".into(),
            ],
            format!("{}:", p("vocab_ok.txt")),
        ),
        (
            "word2vec",
            vec![
                "--words".into(),
                "3000".into(),
                "--epochs".into(),
                "1".into(),
                "--questions".into(),
                p("vocab_ok.txt"),
            ],
            format!(
                "{}:1: 1 words; expected `a b c d` (a is to b as c is to d) or a `: section` line",
                p("vocab_ok.txt")
            ),
        ),
    ];
    for (example, args, expected) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refuses(example, &args, &[], 1, &format!("error: {expected}"));
    }
    // The good files run to the end.
    let r = run(
        "lda",
        &[
            "--data",
            &p("ldac_ok_bom_crlf.dat"),
            "--vocab",
            &p("vocab_ok.txt"),
            "--iterations",
            "2",
            "--topics",
            "2",
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("iterations=2"), "{}", r.stdout);
    assert!(!r.stdout.contains("NaN"), "{}", r.stdout);
}
