//! Corpora made in place on a cluster job's ranks (issue 25, item 3; docs/design.md,
//! "Arrays"): `corpus::lda_c` has every rank read the documents that start in its byte
//! range, and `corpus::generated` has every rank draw its range of the documents; the job
//! gives what one process gives, as 2 x 1, 2 x 2 and 3 x 1 processes against 2, 4 and 3
//! threads:
//! - the same corpus (shape, entries in file order, tokens; a byte order mark, `\r\n`,
//!   blank lines and documents without words), and the bits of loops over its counts and
//!   over the halves of their split in place (`load::split`, held-out entries); a
//!   named pipe, which the ranks cannot split by size, read on the driver;
//! - the same first error, with the line one process names, wherever the bad line falls
//!   among the ranks' ranges: a malformed pair, the first of two bad lines, a repeated word,
//!   the tokens passing their limit (which each rank checks from the totals before it:
//!   a file within it only by the pairs of every rank before, one past it), a token error
//!   before and after a malformed line, the first of two lines with the largest id, a
//!   word id too large without a vocabulary, one beyond the vocabulary (early and late), a
//!   file without
//!   documents, documents without words, a missing file.
//!
//! - lists made from the counts (`SparseArray::repeated`) and moved by `iter_mut()` loops
//!   where they are, 2D (the values kept on their ranks between calls), then another
//!   grid or serial code reading them (they come home): the same lists and counts;
//!
//! - with the cost model on, a loop it may time against its serial loop runs where the
//!   counts' parts are when they hold more than the driver may bring home; brought home,
//!   the counts' parts and traded blocks go on every rank.
//!
//! A test without libtest's harness: its `main` carries `#[strads::main]`, so the copies of
//! this binary that `STRADS_PROCESSES` starts go straight to serving.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "common/lcg.rs"]
mod lcg;
#[path = "common/self_run.rs"]
mod self_run;
use lcg::Lcg;
use self_run::{digest, main_of_roles, same_as_threads};

use strads::corpus::{self, Corpus};
use strads::prelude::*;

/// Every document's and word's running tally: a 2D plan whose bits follow its schedule.
#[strads::parallel_for]
fn tally(counts: &SparseArray<u32, 2>, nd: &mut DistArray<f64, 1>, nw: &mut DistArray<f64, 1>) {
    for ([d, w], &n) in counts {
        nd[d] = nd[d] * 0.75 + f64::from(n) * (1.0 + nw[w]);
        nw[w] = nw[w] * 0.5 + f64::from(n) + nd[d] * 1e-3;
    }
}

/// The tokens, by a loop that only reads the counts.
#[strads::parallel_for]
fn weighted(counts: &SparseArray<u32, 2>) -> f64 {
    let mut s: f64 = 0.0;
    for ([d, w], &n) in counts {
        s += f64::from(n) / (1.0 + d as f64 + 0.5 * w as f64);
    }
    s
}

/// Every document's tokens: a 1D plan over the documents, which keeps the serial order,
/// so the cost model may time it against the serial loop.
#[strads::parallel_for]
fn per_doc(counts: &SparseArray<u32, 2>, nd: &mut DistArray<f64, 1>) {
    for ([d, w], &n) in counts {
        nd[d] = nd[d] * 0.5 + f64::from(n) * (1.0 + w as f64);
    }
}

/// Every count doubled and one added: an `iter_mut()` loop over spread counts.
#[strads::parallel_for]
fn bump(counts: &mut SparseArray<u32, 2>) {
    for ([d, w], n) in counts.iter_mut() {
        *n = *n * 2 + u32::from((d + w) % 3 == 0);
    }
}

/// A list per entry moved by a 2D plan, each element's new value read from the counts the
/// loop moves (so a call's bits follow the values the last call left), `nk` a write-back
/// buffer: an LDA-like loop over an `iter_mut()` array made by `SparseArray::repeated`.
#[strads::parallel_for(buffer(nk), expect = "2d")]
fn draw(
    z: &mut SparseArray<Vec<u16>, 2>,
    nd: &mut DistArray<i64, 2>,
    nw: &mut DistArray<i64, 2>,
    nk: &mut DistArray<i64, 1>,
    seed: u64,
) {
    let k: u64 = nk.shape()[0] as u64;
    for ([d, w], zs) in z.iter_mut() {
        let (a, b) = (nd.row_mut(d), nw.row_mut(w));
        for t in zs.iter_mut() {
            let new =
                ((u64::from(*t) * 7 + a[0] as u64 + b[1] as u64 + seed + d as u64) % k) as usize;
            a[new] += 1;
            b[new] += 1;
            nk[new] += 1;
            *t = new as u16;
        }
    }
}

/// The lists again, by a 1D plan over the documents (another grid than [`draw`]'s).
#[strads::parallel_for]
fn shift(z: &mut SparseArray<Vec<u16>, 2>, nd: &mut DistArray<i64, 2>) {
    for ([d, _w], zs) in z.iter_mut() {
        for t in zs.iter_mut() {
            *t = (*t + 1) % 4;
            nd[[d, 0]] += i64::from(*t) + 1;
        }
    }
}

/// The lists of the documents `keep` says, moved on: an argument whose elements cannot
/// cross processes (`bool`), so the call runs on the driver's threads.
#[strads::parallel_for]
fn mark(z: &mut SparseArray<Vec<u16>, 2>, keep: &DistArray<bool, 1>) {
    for ([d, _w], zs) in z.iter_mut() {
        if keep[d] {
            for t in zs.iter_mut() {
                *t = (*t + 2) % 4;
            }
        }
    }
}

/// Lists made from the counts and moved by calls where the parts are, read by serial code
/// after calls of one grid (`read_after` 2), or after a call of another grid: the lists,
/// counts and whether they stayed in parts.
fn topics(name: &str, counts: &SparseArray<u32, 2>, read_after: usize) {
    let mut z = SparseArray::<Vec<u16>, 2>::repeated(counts, 0).expect("the lists are made");
    eprintln!("topics {name} spread: {}", z.is_spread());
    let [docs, words] = counts.shape();
    let mut nd = DistArray::<i64, 2>::zeros([docs, 4]);
    let mut nw = DistArray::<i64, 2>::zeros([words, 4]);
    let mut nk = DistArray::<i64, 1>::zeros([4]);
    for seed in 0..read_after as u64 {
        draw(&mut z, &mut nd, &mut nw, &mut nk, seed);
    }
    eprintln!("topics {name} spread after the loops: {}", z.is_spread());
    if read_after < 2 {
        shift(&mut z, &mut nd);
    }
    // A first call that cannot cross on lists not moved yet: they come home for it.
    let mut y = SparseArray::<Vec<u16>, 2>::repeated(counts, 1).expect("the lists are made");
    let keep = DistArray::from_fn([docs], |[d]| d % 3 == 0);
    mark(&mut y, &keep);
    eprintln!(
        "topics {name} marked on the driver, spread: {}",
        y.is_spread()
    );
    let marked: Vec<u64> = y
        .iter()
        .flat_map(|(_, v)| v.iter().map(|&t| u64::from(t)))
        .collect();
    let n = z.nnz();
    let first = format!("{:?} {:?}", z.entry(0), z.entry(n - 1));
    draw(&mut z, &mut nd, &mut nw, &mut nk, 9);
    let lists: Vec<u64> = z
        .iter()
        .flat_map(|(_, v)| v.iter().map(|&t| u64::from(t)))
        .collect();
    let all = |a: &[i64]| a.iter().map(|&x| x as u64).collect::<Vec<u64>>();
    println!(
        "topics {name}: {first}, lists {:016x}, marked {:016x}, counts {:016x}",
        digest(&[lists]),
        digest(&[marked]),
        digest(&[all(nd.as_slice()), all(nw.as_slice()), all(nk.as_slice())])
    );
}

/// An LDA-C file of `lines` lines over word ids below `words`, with a byte order mark,
/// `\r\n` endings, blank lines and documents without words; `bad` lines replaced as given.
fn lda_c(lines: usize, words: u64, seed: u64, bad: &[(usize, &str)]) -> String {
    let mut g = Lcg(seed);
    let mut s = String::from("\u{feff}");
    for n in 1..=lines {
        if let Some((_, b)) = bad.iter().find(|(at, _)| *at == n) {
            write!(s, "{b}\r\n").unwrap();
            continue;
        }
        match g.next(23) {
            0 => s.push_str("  \r\n"),
            1 => s.push_str("0\r\n"),
            _ => {
                let k = g.next(6) + 1;
                let mut ids: Vec<u64> = Vec::new();
                while ids.len() < k as usize {
                    let id = g.next(words);
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                write!(s, "{k}").unwrap();
                for id in ids {
                    write!(s, " {id}:{}", g.next(4) + 1).unwrap();
                }
                s.push_str("\r\n");
            }
        }
    }
    s
}

/// The directory of this run's files: the same for the program on threads and on
/// processes (the checker writes them).
fn dir() -> PathBuf {
    PathBuf::from(std::env::var("CLUSTER_CORPUS_DIR").expect("the checker names the directory"))
}

fn write_files(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let vocab: String = (0..500).map(|w| format!("word{w}\n")).collect();
    let small: String = (0..450).map(|w| format!("w{w}\n")).collect();
    let files: [(&str, String); 17] = [
        ("ok.dat", lda_c(3001, 500, 1, &[])),
        ("vocab.txt", vocab),
        ("small_vocab.txt", small),
        ("bad.dat", lda_c(3000, 500, 2, &[(2500, "3 1:2 x 5:1")])),
        (
            "two_bad.dat",
            lda_c(3000, 500, 3, &[(2900, "2 1:1"), (1200, "1 4:0")]),
        ),
        ("twice.dat", lda_c(3000, 500, 4, &[(2200, "3 7:1 9:2 7:3")])),
        ("tokens.dat", lda_c(3000, 500, 5, &[(1900, "1 7:20000000")])),
        ("big_id.dat", lda_c(3000, 500, 6, &[(1800, "1 5000000:1")])),
        ("late_id.dat", lda_c(3000, 400, 7, &[(2600, "2 3:1 450:1")])),
        // Over 16,384 pairs: the limit is 1024 tokens a pair of the whole file so far,
        // above the 2^24 floor only with every rank's pairs before the line.
        (
            "running_ok.dat",
            lda_c(8000, 500, 8, &[(7000, "1 8:20000000")]),
        ),
        (
            "running_bad.dat",
            lda_c(
                8000,
                500,
                8,
                &[(7000, "1 8:20000000"), (7900, "1 9:9000000")],
            ),
        ),
        (
            "tokens_then_bad.dat",
            lda_c(3000, 500, 9, &[(1900, "1 7:20000000"), (2500, "2 1:1")]),
        ),
        (
            "bad_then_tokens.dat",
            lda_c(3000, 500, 10, &[(500, "1 1:"), (1900, "1 7:20000000")]),
        ),
        (
            "tied_ids.dat",
            lda_c(
                3000,
                500,
                11,
                &[(1000, "1 5000000:1"), (2600, "1 5000000:2")],
            ),
        ),
        ("blank.dat", "\n \r\n\t\n".to_owned()),
        ("no_words.dat", "0\n\n0\n0\r\n".to_owned()),
        ("short.dat", "2 0:3 2:1\n1 1:2".to_owned()),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    // One document holding nearly every entry: a plan over the documents is one chain.
    let mut hub = String::from("400");
    for w in 0..400 {
        write!(hub, " {w}:{}", w % 3 + 1).unwrap();
    }
    hub.push('\n');
    for d in 0..10 {
        writeln!(hub, "1 {}:2", d * 7).unwrap();
    }
    std::fs::write(dir.join("hub.dat"), hub)?;
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.dat"))
        .status()?;
    if !made.success() {
        return Err(std::io::Error::other("mkfifo failed"));
    }
    Ok(())
}

/// What a corpus holds, and the bits of the loops over it.
fn describe(name: &str, c: &Corpus) {
    let tokens = c.tokens();
    eprintln!("{name} spread: {}", c.counts.is_spread());
    let mut nd = DistArray::<f64, 1>::zeros([c.docs]);
    let mut nw = DistArray::<f64, 1>::zeros([c.words]);
    tally(&c.counts, &mut nd, &mut nw);
    tally(&c.counts, &mut nd, &mut nw);
    let w = weighted(&c.counts);
    // Still in parts: the count of tokens and the loops brought nothing home.
    eprintln!("{name} spread after the loops: {}", c.counts.is_spread());
    let bits = |a: &DistArray<f64, 1>| a.as_slice().iter().map(|x| x.to_bits()).collect();
    println!(
        "{name}: {} docs, {} words, {} pairs, {tokens} tokens, vocab {} ({}), tally {:016x}, \
         weighted {:016x}",
        c.docs,
        c.words,
        c.counts.nnz(),
        c.vocab.len(),
        c.word(c.words.saturating_sub(1)),
        digest(&[bits(&nd), bits(&nw)]),
        w.to_bits()
    );
    let n = c.counts.nnz();
    println!(
        "{name}: entries {:?} {:?} {:?}",
        c.counts.entry(0),
        c.counts.entry(n / 2),
        c.counts.entry(n - 1)
    );
}

/// The program under test: loads and draws in turn, loops over what it got, the errors.
fn program() {
    let dir = dir();
    let p = |name: &str| dir.join(name);
    let vocab = p("vocab.txt");
    let c = corpus::lda_c(p("ok.dat"), Some(&vocab)).expect("ok.dat loads");
    describe("ok.dat", &c);
    drop(c);
    let c = corpus::lda_c(p("ok.dat"), None).expect("ok.dat loads without a vocabulary");
    describe("ok.dat without a vocabulary", &c);
    // Held-out entries: the counts split in place, each half spread.
    let c = corpus::lda_c(p("ok.dat"), None).expect("ok.dat loads");
    let (train, test) = strads::load::split(&c.counts, 0.2, 3);
    eprintln!("split spread: {} {}", train.is_spread(), test.is_spread());
    println!(
        "split {} {} weighted {:016x} {:016x} first {:?}",
        train.nnz(),
        test.nnz(),
        weighted(&train).to_bits(),
        weighted(&test).to_bits(),
        test.entry(0)
    );
    // A loop that only reads the counts trades them (with copies of their values), a
    // bump moves their values where it runs them, and the next loop that reads them reads
    // the bumped values.
    let mut c = corpus::lda_c(p("ok.dat"), None).expect("ok.dat loads");
    let before = weighted(&c.counts);
    bump(&mut c.counts);
    println!(
        "read before and after a bump: weighted {:016x} {:016x}",
        before.to_bits(),
        weighted(&c.counts).to_bits()
    );
    drop(c);
    let mut c = corpus::lda_c(p("ok.dat"), None).expect("ok.dat loads");
    bump(&mut c.counts);
    bump(&mut c.counts);
    // Bumped where the parts are; summing the counts brings them home.
    eprintln!("bumped in parts, spread: {}", c.counts.is_spread());
    describe("ok.dat, counts bumped", &c);
    let c = corpus::lda_c(p("ok.dat"), None).expect("ok.dat loads");
    topics("read after a grid", &c.counts, 2);
    topics("read after another grid", &c.counts, 1);
    drop(c);
    let c = corpus::lda_c(p("short.dat"), None).expect("short.dat loads");
    describe("short.dat", &c);
    let c = corpus::lda_c(p("running_ok.dat"), None).expect("running_ok.dat loads");
    describe("running_ok.dat", &c);
    // A pipe, whose size the ranks cannot split by, is read on the driver.
    let fifo = p("pipe.dat");
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::write(fifo, "2 0:3 2:1\n\n1 1:2\n")
    });
    let c = corpus::lda_c(&fifo, None).expect("the pipe loads");
    writer
        .join()
        .expect("the writer ends")
        .expect("the pipe is written");
    describe("pipe.dat", &c);
    let c = corpus::try_generated(300, 400, 5, 30.0, 7).expect("the corpus draws");
    describe("generated", &c);
    let c = corpus::try_generated(2, 50, 3, 20.0, 8).expect("a corpus of two documents draws");
    describe("generated, 2 documents", &c);

    let show = |r: Result<Corpus, strads::Error>| match r {
        Ok(c) => format!("loaded {:?}", c.counts.shape()),
        Err(e) => e.to_string(),
    };
    for name in [
        "bad.dat",
        "two_bad.dat",
        "running_bad.dat",
        "tokens_then_bad.dat",
        "bad_then_tokens.dat",
        "tied_ids.dat",
        "twice.dat",
        "tokens.dat",
        "big_id.dat",
        "blank.dat",
        "no_words.dat",
        "missing.dat",
    ] {
        println!("{name}: {}", show(corpus::lda_c(p(name), None)));
    }
    let small = p("small_vocab.txt");
    println!(
        "ok.dat, small_vocab.txt: {}",
        show(corpus::lda_c(p("ok.dat"), Some(&small)))
    );
    println!(
        "late_id.dat, small_vocab.txt: {}",
        show(corpus::lda_c(p("late_id.dat"), Some(&small)))
    );
    println!(
        "ok.dat, missing vocabulary: {}",
        show(corpus::lda_c(p("ok.dat"), Some(&p("missing.txt"))))
    );
    // The job goes on after errors.
    let c = corpus::try_generated(40, 30, 2, 10.0, 9).expect("the corpus draws");
    describe("after errors", &c);
}

/// The cost model on: a loop whose plan keeps the serial order is timed against its
/// serial loop, which would bring the spread counts home; with more bytes on the other
/// ranks than the driver may bring home (a budget made small here), the plan runs where
/// the parts are.
fn cost() {
    let c = corpus::lda_c(dir().join("ok.dat"), None).expect("ok.dat loads");
    let handed = strads::testing::handed_back();
    let mut nd = DistArray::<f64, 1>::zeros([c.docs]);
    strads::testing::with_home_budget(64 << 10, || {
        for _ in 0..3 {
            per_doc(&c.counts, &mut nd);
        }
    });
    let bits: Vec<u64> = nd.as_slice().iter().map(|x| x.to_bits()).collect();
    println!("per_doc {:016x}", digest(&[bits]));
    eprintln!(
        "cost: spread after the loops: {}, handed back {}",
        c.counts.is_spread(),
        strads::testing::handed_back() - handed
    );
    // A plan that is one chain (a document holding nearly every entry) would hand the call
    // back to its serial loop, which gives the plan's bits but would bring the counts home:
    // with more of them away than the driver may hold, the plan runs where they are.
    let hub = corpus::lda_c(dir().join("hub.dat"), None).expect("hub.dat loads");
    let mut nh = DistArray::<f64, 1>::zeros([hub.docs]);
    strads::testing::with_home_budget(1 << 10, || per_doc(&hub.counts, &mut nh));
    let bits: Vec<u64> = nh.as_slice().iter().map(|x| x.to_bits()).collect();
    println!("hub {:016x}", digest(&[bits]));
    eprintln!(
        "cost: hub spread after its loop: {}",
        hub.counts.is_spread()
    );
    // Brought home, the counts' parts and traded blocks go on every rank: leaked here (no
    // rank is told the array was dropped), the workers hold none of it at the end.
    c.counts.gather();
    std::mem::forget(c);
}

fn check() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("strads-cluster-corpus-{}", std::process::id()));
    write_files(&dir).map_err(|e| format!("writing the files: {e}"))?;
    let dir_s = dir.to_string_lossy().into_owned();
    let result = (|| {
        for (procs, threads) in [(2, 1), (2, 2), (3, 1)] {
            let env = [("CLUSTER_CORPUS_DIR", dir_s.as_str())];
            let explain =
                same_as_threads("CLUSTER_CORPUS_ROLE", "program", (procs, threads), &env, 37)?;
            let spread = explain
                .lines()
                .filter(|l| l.ends_with(" spread: true") || l.ends_with("the loops: true"))
                .count();
            // Every corpus, its loops, the counts bumped (`iter_mut()` where they are) and
            // the lists made from them and moved where they are.
            if !explain.contains("strads cluster draw: runs where its array's parts are") {
                return Err(format!(
                    "{procs} x {threads}: the lists' loop did not run where they are:\n{explain}"
                ));
            }
            if spread != 19 || !explain.contains("split spread: true true") {
                return Err(format!(
                    "{procs} x {threads}: the corpora were not made in place, or came home:\n\
                     {explain}"
                ));
            }
        }
        Ok(())
    })();
    let cost = (|| {
        let env = [("STRADS_COST", "1"), ("CLUSTER_CORPUS_DIR", dir_s.as_str())];
        let explain = same_as_threads("CLUSTER_CORPUS_ROLE", "cost", (2, 1), &env, 2)?;
        if !explain.contains("cost: hub spread after its loop: true") {
            return Err(format!(
                "cost: a plan of one chain brought the counts home:\n{explain}"
            ));
        }
        let released = "0 sets of blocks of sparse spaces (0 bytes as sent or traded), 0 parts \
                        of data made in place (0 bytes)";
        let rank1 = explain
            .lines()
            .find(|l| l.starts_with("[rank 1] strads cluster: this rank holds"));
        if !rank1.is_some_and(|l| l.contains(released)) {
            return Err(format!(
                "cost: rank 1 kept the counts' part or blocks after they came home:\n{explain}"
            ));
        }
        if !explain.contains("cost: spread after the loops: true, handed back 0") {
            return Err(format!(
                "cost: a timed loop brought the counts home, or ran its serial loop:\n{explain}"
            ));
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    cost?;
    println!(
        "cluster_corpus: the same corpora, bits and errors as threads at 2 x 1, 2 x 2, 3 x 1; \
         a timed loop over spread counts runs where they are"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    main_of_roles(
        "CLUSTER_CORPUS_ROLE",
        "cluster_corpus",
        &[("program", program), ("cost", cost)],
        check,
    )
}
