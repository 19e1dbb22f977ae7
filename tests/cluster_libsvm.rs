//! LIBSVM data sets made in place on a cluster job's ranks (issue 25, item 3; docs/design.md,
//! "Arrays"): `load::libsvm` and `load::libsvm_pair` have every rank read the samples that
//! start in its byte range and keep them as its regions of the data set's four arrays;
//! the job gives what one process gives, as 2 x 1, 2 x 2 and 3 x 1 processes against 2, 4
//! and 3 threads:
//! - the same data sets (samples, entries, features, positives and every array's bits; a
//!   byte order mark, `\r\n`, blank and comment lines, a last line without its newline),
//!   and the bits of a loop that reads them by samples (which leaves them where they are)
//!   and of the `sparse_lr` example's loops (two epochs of SGD by reconnaissance, and its
//!   evaluation); a pair of files sharing `n_features`; a
//!   named pipe, which the ranks cannot split by size, read on the driver;
//! - the same first error, with the file and line one process names, wherever the bad
//!   line falls among the ranks' ranges: a bad label, the first of two bad lines, a value
//!   that is not finite, an index too large for the entries (of both files of a pair), the
//!   first of two lines with the largest index, the entry limit reached (by the entries of
//!   the ranks before a line: `testing::with_entry_limit`), a file without samples, a
//!   missing file, an error in the second file of a pair.
//!
//! - the same generated problems (`generate::try_libsvm_like`), drawn in place, and the
//!   bits of the same loops over them.
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies of
//! this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "common/lcg.rs"]
mod lcg;
// The `sparse_lr` example's loops: its epoch (by reconnaissance) and its evaluation.
#[allow(dead_code)]
#[path = "../examples/sparse_lr/model.rs"]
mod model;
#[path = "common/self_run.rs"]
mod self_run;
use lcg::Lcg;
use self_run::{digest, main_of_roles, same_as_threads};

use strads::load::LibSvm;
use strads::prelude::*;

/// Every sample's score, by a loop that only reads the data: a 1D plan over the samples,
/// which reads the labels and offsets by parts (`offsets[s]` and `offsets[s + 1]`: a
/// block's samples and one more).
#[strads::parallel_for]
fn scores(
    labels: &DistArray<f32, 1>,
    offsets: &DistArray<u32, 1>,
    features: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    out: &mut DistArray<f64, 1>,
    n: usize,
) {
    for s in 0..n {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let mut z = 0.0f64;
        for k in lo..hi {
            z += f64::from(values[k]) * (1.0 + features[k] as f64 * 0.01);
        }
        out[s] = z * f64::from(labels[s]);
    }
}

/// A LIBSVM file of `lines` lines with indices up to `max_index`, with a byte order mark,
/// `\r\n` endings, blank and comment lines, every label spelling and samples without
/// entries; `bad` lines replaced as given.
fn svm(lines: usize, max_index: u64, seed: u64, bad: &[(usize, &str)]) -> String {
    let mut g = Lcg(seed);
    let mut s = String::from("\u{feff}");
    for n in 1..=lines {
        if let Some((_, b)) = bad.iter().find(|(at, _)| *at == n) {
            writeln!(s, "{b}").unwrap();
            continue;
        }
        match g.next(29) {
            0 => s.push_str("  \r\n"),
            1 => s.push_str("# a comment line\n"),
            _ => {
                let label = ["+1", "-1", "0", "1", "1.0", "-1.0"][g.next(6) as usize];
                s.push_str(label);
                let mut index = 0;
                for _ in 0..g.next(9) {
                    index += g.next(max_index / 6) + 1;
                    if index > max_index {
                        break;
                    }
                    let value = ["1", "0.5", "-2.25", "3e-2"][g.next(4) as usize];
                    write!(s, " {index}:{value}").unwrap();
                }
                s.push_str(if g.next(5) == 0 {
                    " # trailing\r\n"
                } else {
                    "\n"
                });
            }
        }
    }
    s
}

/// The directory of this run's files: the same for the program on threads and on
/// processes (the checker writes them).
fn dir() -> PathBuf {
    PathBuf::from(std::env::var("CLUSTER_LIBSVM_DIR").expect("the checker names the directory"))
}

fn write_files(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let files: [(&str, String); 10] = [
        ("ok.svm", svm(4001, 300, 1, &[])),
        ("test.svm", svm(1500, 420, 2, &[])),
        ("bad_label.svm", svm(4000, 300, 3, &[(3100, "2 1:1")])),
        (
            "two_bad.svm",
            svm(4000, 300, 4, &[(3500, "+1 3:1 2:1"), (1500, "-1 0:1")]),
        ),
        ("not_finite.svm", svm(4000, 300, 5, &[(2100, "+1 4:nan")])),
        (
            "big_index.svm",
            svm(4000, 300, 6, &[(2800, "-1 50000000:1")]),
        ),
        (
            "tied.svm",
            svm(
                4000,
                300,
                7,
                &[(1000, "+1 60000000:1"), (3000, "-1 5:1 60000000:2")],
            ),
        ),
        ("blank.svm", "\n# only comments\n \r\n".to_owned()),
        ("short.svm", "+1 1:1 3:0.5\n-1 2:2".to_owned()),
        // An index past the floor of the limit: an error in either file of a pair.
        ("pair_index.svm", svm(30, 300, 8, &[(20, "+1 1048577:1")])),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.svm"))
        .status()?;
    if !made.success() {
        return Err(std::io::Error::other("mkfifo failed"));
    }
    Ok(())
}

/// What a data set holds, and the bits of the loops over it.
fn describe(name: &str, d: &LibSvm) {
    let n = d.samples();
    eprintln!(
        "{name} spread: {}",
        d.labels.is_spread() && d.offsets.is_spread() && d.features.is_spread()
    );
    let mut out = DistArray::<f64, 1>::zeros([n]);
    scores(&d.labels, &d.offsets, &d.features, &d.values, &mut out, n);
    eprintln!(
        "{name} spread after a loop that reads by samples: {}",
        d.labels.is_spread() && d.offsets.is_spread()
    );
    let mut w = DistArray::<f32, 1>::zeros([d.n_features]);
    for epoch in 0..2 {
        let lr = 0.5 / (1.0 + epoch as f32);
        model::lr_epoch(
            &d.labels,
            &d.offsets,
            &d.features,
            &d.values,
            &mut w,
            n,
            lr,
            1e-4,
        );
    }
    let (correct, loss) = model::evaluate(&d.labels, &d.offsets, &d.features, &d.values, &w, n);
    let f32s = |a: &DistArray<f32, 1>| {
        a.as_slice()
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .collect()
    };
    let u32s = |a: &DistArray<u32, 1>| a.as_slice().iter().map(|&x| u64::from(x)).collect();
    let f64s = |a: &DistArray<f64, 1>| a.as_slice().iter().map(|x| x.to_bits()).collect();
    println!(
        "{name}: {n} samples, {} entries, {} features, {} positives, data {:016x}, scores \
         {:016x}, w {:016x}, {correct} correct, loss {:016x}, last {:?}",
        d.nnz(),
        d.n_features,
        d.positives(),
        digest(&[
            f32s(&d.labels),
            u32s(&d.offsets),
            u32s(&d.features),
            f32s(&d.values)
        ]),
        digest(&[f64s(&out)]),
        digest(&[f32s(&w)]),
        loss.to_bits(),
        d.sample(n - 1)
    );
}

/// The program under test: loads in turn, loops over what it got, the errors.
fn program() {
    let dir = dir();
    let p = |name: &str| dir.join(name);
    let d = strads::load::libsvm(p("ok.svm")).expect("ok.svm loads");
    describe("ok.svm", &d);
    drop(d);
    let (train, test) =
        strads::load::libsvm_pair(p("ok.svm"), p("test.svm")).expect("the pair loads");
    describe("pair train", &train);
    describe("pair test", &test);
    drop((train, test));
    let d = strads::load::libsvm(p("short.svm")).expect("short.svm loads");
    describe("short.svm", &d);
    // A pipe, whose size the ranks cannot split by, is read on the driver.
    let fifo = p("pipe.svm");
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::write(fifo, "-1 2:1\n\n+1 1:0.5 7:1\n")
    });
    let d = strads::load::libsvm(&fifo).expect("the pipe loads");
    writer
        .join()
        .expect("the writer ends")
        .expect("the pipe is written");
    describe("pipe.svm", &d);

    let show = |r: Result<LibSvm, strads::Error>| match r {
        Ok(d) => format!("loaded {} samples", d.samples()),
        Err(e) => e.to_string(),
    };
    for name in [
        "bad_label.svm",
        "two_bad.svm",
        "not_finite.svm",
        "big_index.svm",
        "tied.svm",
        "blank.svm",
        "missing.svm",
    ] {
        println!("{name}: {}", show(strads::load::libsvm(p(name))));
    }
    // The entry limit, reached in the middle, near the end and exactly at the end of the
    // file: each rank counts from the entries of the ranks before it.
    let entries = strads::load::libsvm(p("ok.svm"))
        .expect("ok.svm loads")
        .nnz() as u64;
    for limit in [entries / 2, entries - 3, entries] {
        let r = strads::testing::with_entry_limit(limit, || strads::load::libsvm(p("ok.svm")));
        println!("ok.svm, at most {limit} entries: {}", show(r));
    }
    // The limit reached before a bad line a later rank reads: the limit's error is the first.
    let r =
        strads::testing::with_entry_limit(entries / 2, || strads::load::libsvm(p("bad_label.svm")));
    println!(
        "bad_label.svm, at most {} entries: {}",
        entries / 2,
        show(r)
    );
    let show_pair = |r: Result<(LibSvm, LibSvm), strads::Error>| match r {
        Ok((a, b)) => format!(
            "loaded {} and {} samples, {} features",
            a.samples(),
            b.samples(),
            a.n_features
        ),
        Err(e) => e.to_string(),
    };
    for (train, test) in [
        ("ok.svm", "bad_label.svm"),
        ("bad_label.svm", "missing.svm"),
        ("ok.svm", "missing.svm"),
        ("blank.svm", "ok.svm"),
        ("pair_index.svm", "test.svm"),
        ("ok.svm", "pair_index.svm"),
    ] {
        println!(
            "{train} and {test}: {}",
            show_pair(strads::load::libsvm_pair(p(train), p(test)))
        );
    }
    // Generated in place: every rank draws the sequence one process draws and keeps its
    // range of each set's samples.
    let cfg = strads::generate::LibSvmConfig {
        train: 3000,
        test: 1200,
        features: 250,
        active: 9,
        ..Default::default()
    };
    let (train, test) = strads::generate::try_libsvm_like(&cfg).expect("the problem draws");
    describe("generated train", &train);
    describe("generated test", &test);
    drop((train, test));
    let cfg = strads::generate::LibSvmConfig {
        train: 2,
        test: 1,
        ..Default::default()
    };
    let (train, test) = strads::generate::try_libsvm_like(&cfg).expect("a tiny problem draws");
    describe("generated, 2 samples", &train);
    describe("generated, 1 sample", &test);
    // The job goes on after errors.
    let d = strads::load::libsvm(p("test.svm")).expect("test.svm loads");
    describe("after errors", &d);
}

fn check() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("strads-cluster-libsvm-{}", std::process::id()));
    write_files(&dir).map_err(|e| format!("writing the files: {e}"))?;
    let dir_s = dir.to_string_lossy().into_owned();
    let result = (|| {
        for (procs, threads) in [(2, 1), (2, 2), (3, 1)] {
            let env = [("CLUSTER_LIBSVM_DIR", dir_s.as_str())];
            let explain =
                same_as_threads("CLUSTER_LIBSVM_ROLE", "program", (procs, threads), &env, 27)?;
            // Made in place, and left there by a loop that reads them by samples: the
            // data sets of over a thousand samples.
            let large = [
                "ok.svm",
                "pair train",
                "pair test",
                "generated train",
                "generated test",
                "after errors",
            ];
            // Every data set dropped, every rank dropped its parts too (those of small
            // sets where a rank read nothing, and of loads that failed, included).
            let released = "this rank holds 0 arrays (0 bytes) of the driver's at the end";
            let ranks = explain.lines().filter(|l| l.contains(released)).count();
            if ranks != procs - 1 {
                return Err(format!(
                    "{procs} x {threads}: a rank kept parts of data sets the driver dropped:\n\
                     {explain}"
                ));
            }
            if !explain.contains("made in place; its samples by rank: ") {
                return Err(format!(
                    "{procs} x {threads}: no line says what each rank holds:\n{explain}"
                ));
            }
            for name in large {
                for what in ["spread", "spread after a loop that reads by samples"] {
                    if !explain
                        .lines()
                        .any(|l| l.ends_with(&format!("{name} {what}: true")))
                    {
                        return Err(format!(
                            "{procs} x {threads}: {name} was not made in place, or came home \
                             for a loop that reads it by samples:\n{explain}"
                        ));
                    }
                }
            }
        }
        Ok(())
    })();
    if std::env::var("KEEP").is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result?;
    println!(
        "cluster_libsvm: the same data sets, bits and errors as threads at 2 x 1, 2 x 2, 3 x 1, \
         loaded in place"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    main_of_roles(
        "CLUSTER_LIBSVM_ROLE",
        "cluster_libsvm",
        &[("program", program)],
        check,
    )
}
