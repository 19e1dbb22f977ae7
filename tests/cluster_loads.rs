//! Rating files loaded in place on a cluster job's ranks (issue 25, item 3; docs/design.md,
//! "Arrays"): every rank reads the lines that start in its byte range of each file, and the
//! job gives what one process reading the files gives, as 2 x 1, 2 x 2 and 3 x 1 processes
//! against 2, 4 and 3 threads:
//! - the same arrays (shape, entries in file order; CSV ids re-indexed densely in order of
//!   first appearance across a training and a test file, a header and blank lines
//!   skipped, a byte order mark stripped), and the bits of loops over them and over their
//!   split;
//! - the same first error, with the file and line one process names, wherever the bad line
//!   falls among the ranks' ranges: a malformed line, the first of two, a file without
//!   ratings, a test file of another format than its training file, an id too large for
//!   the file, an id outside a fixed shape, a missing file;
//! - serial reads by value of a rating array generated in place (`entry_value` at window
//!   edges and over more windows than the copies kept, `iter_values`), which leave it in
//!   parts, and after an `iter_mut()` loop changed its values where they run, the new values.
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies of
//! this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "common/factors.rs"]
mod factors;
#[path = "common/lcg.rs"]
mod lcg;
#[path = "common/self_run.rs"]
mod self_run;
use factors::step;
use lcg::Lcg;
use self_run::{main_of, same_as_threads};

use strads::prelude::*;

/// A loop that only reads the factors.
/// Every value doubled where its entry runs: an `iter_mut()` loop, whose values stay on
/// the ranks that ran them.
#[strads::parallel_for]
fn doubled(r: &mut SparseArray<f32, 2>) {
    for (_, v) in r.iter_mut() {
        *v *= 2.0;
    }
}

#[strads::parallel_for]
fn error(r: &SparseArray<f32, 2>, w: &DistArray<f32, 2>, h: &DistArray<f32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, i], &x) in r {
        let e = (x - dot(w.row(u), h.row(i))) as f64;
        s += e * e;
    }
    s
}

/// `lines` whitespace-separated ratings (1-based ids below `users` and `items`), some
/// lines blank, some with a timestamp; `bad` lines replaced as given.
fn whitespace(lines: usize, users: u64, items: u64, seed: u64, bad: &[(usize, &str)]) -> String {
    let mut g = Lcg(seed);
    let mut s = String::from("\u{feff}");
    for n in 1..=lines {
        if let Some((_, b)) = bad.iter().find(|(at, _)| *at == n) {
            writeln!(s, "{b}").unwrap();
        } else if g.next(17) == 0 {
            writeln!(s, "  ").unwrap();
        } else if g.next(2) == 0 {
            let (u, i, r) = (g.next(users) + 1, g.next(items) + 1, g.next(9) + 1);
            writeln!(s, "{u}\t{i}\t{}", r as f32 / 2.0).unwrap();
        } else {
            let (u, i, r) = (g.next(users) + 1, g.next(items) + 1, g.next(5) + 1);
            writeln!(s, "{u} {i} {r} {}", 881_250_949 + n).unwrap();
        }
    }
    s
}

/// A CSV rating file with a header and arbitrary ids (`first_id` up); `bad` lines
/// replaced as given.
fn csv(lines: usize, first_id: u64, seed: u64, bad: &[(usize, &str)]) -> String {
    let mut g = Lcg(seed);
    let mut s = String::from("userId,movieId,rating,timestamp\n");
    for n in 2..=lines {
        if let Some((_, b)) = bad.iter().find(|(at, _)| *at == n) {
            writeln!(s, "{b}").unwrap();
            continue;
        }
        let u = first_id + g.next(400) * 7_919;
        let i = 10 * first_id + g.next(150) * 104_729;
        writeln!(s, "{u}, {i} ,{}.5,{}", g.next(5), 964_982_703 + n).unwrap();
    }
    s
}

/// The directory of this run's files: the same for the program on threads and on
/// processes (the checker writes them).
fn dir() -> PathBuf {
    PathBuf::from(std::env::var("CLUSTER_LOADS_DIR").expect("the checker names the directory"))
}

fn write_files(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let files: [(&str, String); 12] = [
        ("u.data", whitespace(3001, 300, 200, 1, &[])),
        ("train.csv", csv(3000, 1_000_003, 2, &[])),
        ("test.csv", csv(800, 1_000_011, 3, &[])),
        ("bad.data", whitespace(2000, 90, 90, 4, &[(1500, "5 x 3")])),
        (
            "two_bad.data",
            whitespace(2000, 90, 90, 5, &[(1900, "5 5 x"), (1200, "1 2 3 4 5")]),
        ),
        ("blank.data", "\n \n\t\n".to_owned()),
        ("large.data", whitespace(10, 5, 5, 6, &[(7, "2000000 1 3")])),
        (
            "wide.data",
            whitespace(2000, 90, 90, 7, &[(1800, "95 3 4")]),
        ),
        ("late_bad.csv", csv(3000, 5, 8, &[(2900, "1,2,nan")])),
        ("early_bad.csv", csv(500, 5, 9, &[(2, "1,2")])),
        ("short.data", "1 1 5\n2 2 4".to_owned()),
        (
            "huge_ids.data",
            whitespace(1500, 4, 4, 10, &[(1400, "1 1048577 3")]),
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The program under test: loads in turn, loops over what loaded, the errors.
fn program() {
    let dir = dir();
    let p = |name: &str| dir.join(name);
    let r = strads::load::ratings(p("u.data")).expect("u.data loads");
    eprintln!("loaded spread: {}", r.is_spread());
    println!(
        "u.data {:?} {} entry 100 {:?}",
        r.shape(),
        r.nnz(),
        r.entry(100)
    );
    let (train, test) = strads::load::split(&r, 0.1, 5);
    drop(r);
    let mut wt = DistArray::<f32, 2>::random([train.shape()[0], 4], 3);
    let mut ht = DistArray::<f32, 2>::random([train.shape()[1], 4], 4);
    for _ in 0..2 {
        step(&train, &mut wt, &mut ht);
    }
    println!(
        "u.data errors {:016x} {:016x}",
        error(&train, &wt, &ht).to_bits(),
        error(&test, &wt, &ht).to_bits()
    );

    let (train, test) =
        strads::load::ratings_pair(p("train.csv"), p("test.csv")).expect("the CSV pair loads");
    eprintln!("pair spread: {} {}", train.is_spread(), test.is_spread());
    println!(
        "csv pair {:?} {} {}",
        train.shape(),
        train.nnz(),
        test.nnz()
    );
    let mut w = DistArray::<f32, 2>::random([train.shape()[0], 4], 3);
    let mut h = DistArray::<f32, 2>::random([train.shape()[1], 4], 4);
    for _ in 0..2 {
        step(&train, &mut w, &mut h);
    }
    println!(
        "csv errors {:016x} {:016x}",
        error(&train, &w, &h).to_bits(),
        error(&test, &w, &h).to_bits()
    );
    let entries: Vec<_> = test.iter().map(|(k, &v)| (k, v)).collect();
    println!(
        "csv test first {:?} last {:?}",
        entries.first(),
        entries.last()
    );

    let fixed = strads::load::ratings_with_shape(p("u.data"), [400, 250]).expect("fits");
    println!("fixed {:?} {}", fixed.shape(), fixed.nnz());
    let short = strads::load::ratings(p("short.data")).expect("loads");
    println!(
        "short {:?} {:?}",
        short.shape(),
        short.iter().collect::<Vec<_>>()
    );

    let show = |r: Result<SparseArray<f32, 2>, strads::Error>| match r {
        Ok(a) => format!("loaded {:?}", a.shape()),
        Err(e) => e.to_string(),
    };
    let pair = |a: &str, b: &str| match strads::load::ratings_pair(p(a), p(b)) {
        Ok((a, _)) => format!("loaded {:?}", a.shape()),
        Err(e) => e.to_string(),
    };
    for name in [
        "bad.data",
        "two_bad.data",
        "blank.data",
        "large.data",
        "huge_ids.data",
        "missing.data",
    ] {
        println!("{name}: {}", show(strads::load::ratings(p(name))));
    }
    println!(
        "wide.data: {}",
        show(strads::load::ratings_with_shape(p("wide.data"), [90, 90]))
    );
    println!(
        "train.csv with a shape: {}",
        show(strads::load::ratings_with_shape(p("train.csv"), [9, 9]))
    );
    println!("u.data, test.csv: {}", pair("u.data", "test.csv"));
    println!(
        "late_bad.csv, early_bad.csv: {}",
        pair("late_bad.csv", "early_bad.csv")
    );
    println!("train.csv, blank.data: {}", pair("train.csv", "blank.data"));
    println!("blank.data, test.csv: {}", pair("blank.data", "test.csv"));
    println!(
        "train.csv, missing.csv: {}",
        pair("train.csv", "missing.csv")
    );
    // The job goes on after errors.
    println!("after errors {:016x}", error(&train, &w, &h).to_bits());

    // Reads by value of an array in parts (generated in place): windows of its entries
    // copied from the ranks, in any order and over and over, and every entry in order;
    // the array stays in parts. Then the same entries by reference (it comes home).
    let g = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 5000,
        items: 3000,
        ratings: 400_000,
        ..Default::default()
    });
    eprintln!("generated spread: {}", g.is_spread());
    // Window edges (64 KiB windows hold 5,461 of these entries, 1 MiB ones 87,381), then
    // 80 windows apart (more than the 4 MiB of copies kept), then the first ones again.
    let mut picks = vec![
        0, 1, 5460, 5461, 87_380, 87_381, 399_999, 5, 250_000, 174_763,
    ];
    picks.extend((0..80).map(|i| i * 4999 + 17));
    picks.extend([1, 5461, 399_998, 0]);
    let by_value: Vec<_> = picks.iter().map(|&n| g.entry_value(n)).collect();
    let (mut sum, mut keys, mut count) = (0f64, 0u64, 0usize);
    for (k, v) in g.iter_values() {
        sum += f64::from(v);
        keys = keys
            .wrapping_mul(31)
            .wrapping_add((k[0] * 7919 + k[1]) as u64);
        count += 1;
    }
    eprintln!("generated spread after reads by value: {}", g.is_spread());
    let picked: Vec<u64> = by_value
        .iter()
        .map(|(k, v)| (k[0] as u64 * 7919 + k[1] as u64) ^ u64::from(v.to_bits()))
        .collect();
    println!(
        "generated by value {:?} picks {:016x} sum {:016x} keys {keys:016x} count {count}",
        &by_value[..4],
        self_run::digest(&[picked]),
        sum.to_bits()
    );
    // A loop that changes the values where they run: reads by value then give the new
    // values, never a copy kept from before.
    let mut g = g;
    doubled(&mut g);
    let after: Vec<_> = picks.iter().map(|&n| g.entry_value(n)).collect();
    let twice = after
        .iter()
        .zip(&by_value)
        .all(|((k, v), (k0, v0))| k == k0 && *v == 2.0 * v0);
    println!("generated by value after a loop that doubled them: {twice}");
    let by_ref: Vec<_> = picks
        .iter()
        .map(|&n| {
            let (k, &v) = g.entry(n);
            (k, v)
        })
        .collect();
    println!("generated by reference the same: {}", by_ref == after);
}

fn check() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("strads-cluster-loads-{}", std::process::id()));
    write_files(&dir).map_err(|e| format!("writing the files: {e}"))?;
    let dir_s = dir.to_string_lossy().into_owned();
    let result = (|| {
        for (procs, threads) in [(2, 1), (2, 2), (3, 1)] {
            let env = [("CLUSTER_LOADS_DIR", dir_s.as_str())];
            let explain =
                same_as_threads("CLUSTER_LOADS_ROLE", "program", (procs, threads), &env, 24)?;
            if !explain.contains("loaded spread: true")
                || !explain.contains("pair spread: true true")
                || !explain.contains("generated spread: true")
                || !explain.contains("generated spread after reads by value: true")
            {
                return Err(format!(
                    "{procs} x {threads}: the files were not loaded in place:\n{explain}"
                ));
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    println!("cluster_loads: the same arrays, bits and errors as threads at 2 x 1, 2 x 2, 3 x 1");
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    main_of("CLUSTER_LOADS_ROLE", "cluster_loads", program, check)
}
