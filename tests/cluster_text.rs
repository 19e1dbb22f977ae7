//! Knowledge graphs and text corpora loaded in place on a cluster job's ranks (issue 25,
//! item 3; docs/design.md, "Arrays"): `load::knowledge_graph_arrays` has every rank read
//! the triples that start in its byte range of each file and keep them as its rows of the
//! three `[n, 3]` arrays, and `load::words_arrays` the words that start in its byte range
//! (of the decompressed bytes, for gzip) as its part of `tokens` and `sentence`; the job
//! gives what one process gives, as 2 x 1, 2 x 2 and 3 x 1 processes against 2, 4 and 3
//! threads:
//! - the same graphs (entities, relations, names, and every array's bits, equal to
//!   `knowledge_graph(dir).into_arrays()`), in both layouts: text triples, whose names the
//!   ranks number together in order of first appearance (a name first seen by a later
//!   rank, in a later file), with a byte order mark, `\r\n`, blank lines and a last line
//!   without its newline; OpenKE's ids, with a count line that a later rank reads (the
//!   file starts with blank lines); and the bits of a loop that reads the rows by parts
//!   (which leaves them where they are);
//! - the same first error, with the file and line one process names, wherever the bad
//!   line falls among the ranks' ranges: a line of two fields, the first of two bad lines,
//!   a name that is not UTF-8, a file without triples, OpenKE's count too large and too
//!   small, an id not below the count, a count line that is not a number, a missing file,
//!   a folder of neither layout.
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

use strads::load::{KgArrays, WordArrays};
use strads::prelude::*;

/// A score per triple by a loop that only reads the rows: a 1D plan over the triples,
/// which reads each block's rows where they are.
#[strads::parallel_for]
fn scores(triples: &DistArray<u32, 2>, out: &mut DistArray<u64, 1>, n: usize) {
    for k in 0..n {
        let (h, r, t) = (
            u64::from(triples[[k, 0]]),
            u64::from(triples[[k, 1]]),
            u64::from(triples[[k, 2]]),
        );
        out[k] = (h * 1_000_003 + r) * 1_000_033 + t;
    }
}

/// Each token's word and sentence as one number, by a loop that only reads the tokens: a
/// 1D plan over the tokens, which reads each block's tokens where they are.
#[strads::parallel_for]
fn token_keys(
    tokens: &DistArray<u32, 1>,
    sentence: &DistArray<u32, 1>,
    out: &mut DistArray<u64, 1>,
    n: usize,
) {
    for k in 0..n {
        out[k] = u64::from(tokens[k]) * 1_000_003 + u64::from(sentence[k]);
    }
}

/// A graph of `n` training triples (and a tenth as many validation and test triples) over
/// `entities` and `relations`, as `(head, relation, tail)` ids.
fn graph(n: usize, entities: u64, relations: u64, seed: u64) -> [Vec<[u64; 3]>; 3] {
    let mut g = Lcg(seed);
    let mut set = |n: usize| -> Vec<[u64; 3]> {
        (0..n)
            .map(|_| [g.next(entities), g.next(relations), g.next(entities)])
            .collect()
    };
    [set(n), set(n / 10 + 1), set(n / 10 + 1)]
}

/// The name of entity `e` (Freebase's shape; a few with a multi-byte letter).
fn entity(e: u64) -> String {
    if e % 97 == 5 {
        format!("/m/é{e:x}")
    } else {
        format!("/m/0{e:x}")
    }
}

/// The text layout of `sets`: names, a byte order mark, `\r\n`, blank lines, the last line
/// without its newline; `bad` lines `(file, line, text)` replaced as given.
fn text_files(dir: &Path, sets: &[Vec<[u64; 3]>; 3], bad: &[(usize, usize, &[u8])]) {
    std::fs::create_dir_all(dir).unwrap();
    for (f, (file, set)) in ["train.txt", "valid.txt", "test.txt"]
        .iter()
        .zip(sets)
        .enumerate()
    {
        let mut s: Vec<u8> = if f == 0 {
            "\u{feff}".into()
        } else {
            Vec::new()
        };
        for (k, &[h, r, t]) in set.iter().enumerate() {
            if let Some((.., b)) = bad.iter().find(|(bf, bl, _)| *bf == f && *bl == k + 1) {
                s.extend_from_slice(b);
                s.push(b'\n');
                continue;
            }
            let line = format!("{}\t/rel/{r}\t{}", entity(h), entity(t));
            s.extend_from_slice(line.as_bytes());
            let last = k + 1 == set.len();
            s.extend_from_slice(match (last, k % 13) {
                (true, _) => b"",
                (false, 0) => b"\r\n",
                (false, 1) => b"\n  \n",
                _ => b"\n",
            });
        }
        std::fs::write(dir.join(file), s).unwrap();
    }
}

/// OpenKE's layout of `sets`: `head tail relation` lines after a count line, which
/// `blank_head` blank lines come before; `counts` replaces each file's count.
fn openke_files(
    dir: &Path,
    sets: &[Vec<[u64; 3]>; 3],
    (entities, relations): (u64, u64),
    blank_head: usize,
    counts: [Option<&str>; 3],
    bad: &[(usize, usize, &str)],
) {
    std::fs::create_dir_all(dir).unwrap();
    let mut s = format!("{entities}\n");
    for e in 0..entities {
        writeln!(s, "{}\t{e}", entity(e)).unwrap();
    }
    std::fs::write(dir.join("entity2id.txt"), s).unwrap();
    let mut s = format!("{relations}\n");
    for r in 0..relations {
        writeln!(s, "/rel/{r}\t{r}").unwrap();
    }
    std::fs::write(dir.join("relation2id.txt"), s).unwrap();
    for (f, (file, set)) in ["train2id.txt", "valid2id.txt", "test2id.txt"]
        .iter()
        .zip(sets)
        .enumerate()
    {
        let mut s = "\n".repeat(if f == 0 { blank_head } else { 0 });
        let count = set.len().to_string();
        writeln!(s, "{}", counts[f].unwrap_or(&count)).unwrap();
        for (k, &[h, r, t]) in set.iter().enumerate() {
            match bad.iter().find(|(bf, bl, _)| *bf == f && *bl == k + 1) {
                Some((.., b)) => writeln!(s, "{b}").unwrap(),
                None => writeln!(s, "{h} {t} {r}").unwrap(),
            }
        }
        std::fs::write(dir.join(file), s).unwrap();
    }
}

/// A corpus of `lines` lines of up to `longest` words (Zipf-like, some words with a
/// multi-byte letter), with a byte order mark, `\r\n`, tabs, blank lines, lines of rare
/// words only, and the last line without its newline.
fn corpus(lines: usize, longest: u64, seed: u64) -> Vec<u8> {
    let mut g = Lcg(seed);
    let mut s: Vec<u8> = "\u{feff}".into();
    for l in 0..lines {
        match g.next(11) {
            0 => s.extend_from_slice(b"  \t"),
            1 => {
                // Words seen once each: a sentence the vocabulary leaves empty.
                for k in 0..g.next(4) + 1 {
                    write!(s_string(&mut s), "rare{l}x{k} ").unwrap();
                }
            }
            _ => {
                for k in 0..g.next(longest) + 1 {
                    let rank = g.next(60) * g.next(60) / 59;
                    let word = if rank % 17 == 3 {
                        format!("wé{rank}")
                    } else {
                        format!("w{rank}")
                    };
                    s.extend_from_slice(word.as_bytes());
                    s.push(if k % 7 == 6 { b'\t' } else { b' ' });
                }
            }
        }
        if l + 1 < lines {
            s.extend_from_slice(if l % 5 == 0 { b"\r\n" } else { b"\n" });
        }
    }
    s
}

/// `s` as a `String` to write into (every byte written is UTF-8).
fn s_string(s: &mut Vec<u8>) -> impl std::fmt::Write + '_ {
    struct W<'a>(&'a mut Vec<u8>);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, t: &str) -> std::fmt::Result {
            self.0.extend_from_slice(t.as_bytes());
            Ok(())
        }
    }
    W(s)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn write_corpora(dir: &Path) {
    let dir = dir.join("words");
    std::fs::create_dir_all(&dir).unwrap();
    let ok = corpus(3000, 40, 1);
    std::fs::write(dir.join("ok.txt"), &ok).unwrap();
    std::fs::write(dir.join("ok.txt.gz"), gzip(&ok)).unwrap();
    // One line as long as the file, cut into sentences of 1000 words.
    let one: Vec<u8> = corpus(400, 200, 2)
        .into_iter()
        .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    std::fs::write(dir.join("one_line.txt"), &one).unwrap();
    std::fs::write(dir.join("tiny.txt"), "\u{feff}a b a\n").unwrap();
    let bad = |name: &str, at: usize, what: &[u8]| {
        let mut b = ok.clone();
        let at = b[at..].iter().position(|&c| c == b' ').unwrap() + at + 1;
        b.splice(at..at, what.iter().copied());
        std::fs::write(dir.join(name), b).unwrap();
    };
    bad("nul.txt", ok.len() * 3 / 4, b"w1\0w2 ");
    bad("not_utf8.txt", ok.len() / 3, b"w\xff ");
    // A word of 2000 bytes across the middle of the file (two ranks' ranges).
    let middle = ok.len() / 2 - 1000;
    let mut long = ok.clone();
    long.splice(middle..middle, std::iter::repeat_n(b'a', 2000));
    std::fs::write(dir.join("long_word.txt"), long).unwrap();
    let gz = gzip(&ok);
    std::fs::write(dir.join("cut.txt.gz"), &gz[..gz.len() * 2 / 3]).unwrap();
    // Two gzip members (as `cat a.gz b.gz` makes), the first ending inside the byte order
    // mark.
    let mut members = gzip(&ok[..1]);
    members.extend(gzip(&ok[1..]));
    std::fs::write(dir.join("members.txt.gz"), members).unwrap();
}

/// What a corpus holds, and the bits of a loop over its tokens.
fn describe_words(name: &str, w: &WordArrays) {
    let n = w.tokens.len();
    eprintln!(
        "{name} spread: {}",
        n < 1000 || (w.tokens.is_spread() && w.sentence.is_spread())
    );
    let mut out = DistArray::<u64, 1>::zeros([n]);
    token_keys(&w.tokens, &w.sentence, &mut out, n);
    eprintln!(
        "{name} spread after a loop that reads by parts: {}",
        n < 1000 || w.tokens.is_spread()
    );
    let u32s = |a: &DistArray<u32, 1>| a.as_slice().iter().map(|&x| u64::from(x)).collect();
    let names = w
        .vocab
        .iter()
        .map(|s| s.len() as u64 * 31 + s.bytes().map(u64::from).sum::<u64>())
        .collect();
    println!(
        "{name}: {} words read, vocabulary {} ({:016x}), {n} tokens {:016x}, {} sentences \
         {:016x}, keys {:016x}",
        w.raw_words,
        w.vocab.len(),
        digest(&[names, w.counts.clone()]),
        digest(&[u32s(&w.tokens)]),
        w.sentences,
        digest(&[u32s(&w.sentence)]),
        digest(&[out.as_slice().to_vec()]),
    );
}

/// The directory of this run's folders: the same for the program on threads and on
/// processes (the checker writes them).
fn dir() -> PathBuf {
    PathBuf::from(std::env::var("CLUSTER_TEXT_DIR").expect("the checker names the directory"))
}

fn write_folders(dir: &Path) {
    let (e, r) = (4000, 40);
    let ok = graph(20_000, e, r, 1);
    text_files(&dir.join("text"), &ok, &[]);
    openke_files(&dir.join("openke"), &ok, (e, r), 0, [None; 3], &[]);
    // Blank lines make up most of the training file's first bytes: a later rank reads the
    // count line.
    openke_files(
        &dir.join("openke_late_count"),
        &ok,
        (e, r),
        600_000,
        [None; 3],
        &[],
    );
    let small = graph(5, 6, 2, 2);
    text_files(&dir.join("tiny"), &small, &[]);
    // Names first seen in the validation and test sets, by later ranks.
    let mut late = graph(3000, 300, 7, 3);
    late[2].push([900, 8, 901]);
    text_files(&dir.join("late_names"), &late, &[]);

    text_files(
        &dir.join("two_fields"),
        &ok,
        &[(0, 17_000, b"/m/01\t/rel/1")],
    );
    text_files(
        &dir.join("two_bad"),
        &ok,
        &[(0, 18_000, b"a b"), (0, 4_000, b"a b c d")],
    );
    text_files(
        &dir.join("not_utf8"),
        &ok,
        &[(1, 1500, b"/m/0\xff\t/rel/1\t/m/02")],
    );
    let mut empty = ok.clone();
    empty[2].clear();
    text_files(&dir.join("no_test"), &empty, &[]);
    let count = |n: usize| Some(n.to_string());
    let (more, fewer) = (count(ok[0].len() + 1), count(ok[0].len() - 1));
    openke_files(
        &dir.join("count_high"),
        &ok,
        (e, r),
        0,
        [more.as_deref(), None, None],
        &[],
    );
    openke_files(
        &dir.join("count_low"),
        &ok,
        (e, r),
        0,
        [fewer.as_deref(), None, None],
        &[],
    );
    openke_files(
        &dir.join("id_too_big"),
        &ok,
        (e, r),
        0,
        [None; 3],
        &[(0, 16_000, "3 4000 1")],
    );
    openke_files(
        &dir.join("count_not_number"),
        &ok,
        (e, r),
        0,
        [None, Some("many"), None],
        &[],
    );
    openke_files(&dir.join("missing"), &ok, (e, r), 0, [None; 3], &[]);
    std::fs::remove_file(dir.join("missing").join("test2id.txt")).unwrap();
    std::fs::create_dir_all(dir.join("neither")).unwrap();
}

/// What a graph holds, and the bits of a loop over its training rows.
fn describe(name: &str, kg: &KgArrays) {
    let n = kg.train.shape()[0];
    eprintln!(
        "{name} spread: {}",
        kg.train.is_spread() && kg.valid.is_spread() && kg.test.is_spread()
    );
    let mut out = DistArray::<u64, 1>::zeros([n]);
    scores(&kg.train, &mut out, n);
    eprintln!(
        "{name} spread after a loop that reads by rows: {}",
        kg.train.is_spread()
    );
    let bits = |a: &DistArray<u32, 2>| a.as_slice().iter().map(|&x| u64::from(x)).collect();
    let names = |v: &[String]| {
        v.iter()
            .map(|s| s.len() as u64 * 31 + s.bytes().map(u64::from).sum::<u64>())
            .collect()
    };
    println!(
        "{name}: {} entities, {} relations, {} / {} / {} triples, rows {:016x}, names {:016x}, \
         scores {:016x}, last names {:?} {:?}",
        kg.entities,
        kg.relations,
        n,
        kg.valid.shape()[0],
        kg.test.shape()[0],
        digest(&[bits(&kg.train), bits(&kg.valid), bits(&kg.test)]),
        digest(&[names(&kg.entity_names), names(&kg.relation_names)]),
        digest(&[out.as_slice().to_vec()]),
        kg.entity_names.last(),
        kg.relation_names.last(),
    );
}

/// The program under test: loads in turn, loops over what it got, the errors.
fn program() {
    let dir = dir();
    for name in ["text", "openke", "openke_late_count", "tiny", "late_names"] {
        let kg = strads::load::knowledge_graph_arrays(dir.join(name)).expect("the graph loads");
        describe(name, &kg);
        let whole = strads::load::knowledge_graph(dir.join(name))
            .expect("the graph loads whole")
            .into_arrays();
        println!("{name}: the same as knowledge_graph's: {}", kg == whole);
    }
    for name in [
        "two_fields",
        "two_bad",
        "not_utf8",
        "no_test",
        "count_high",
        "count_low",
        "id_too_big",
        "count_not_number",
        "missing",
        "neither",
        "absent",
    ] {
        let shown = match strads::load::knowledge_graph_arrays(dir.join(name)) {
            Ok(kg) => format!("loaded {} triples", kg.triples()),
            Err(e) => e.to_string(),
        };
        // The folder's path differs between runs only by the directory the checker made.
        println!("{name}: {}", shown.replace(dir.to_str().unwrap(), "DIR"));
    }
    // The job goes on after errors.
    let kg = strads::load::knowledge_graph_arrays(dir.join("openke")).expect("the graph loads");
    describe("after errors", &kg);
    drop(kg);

    // Generated in place: every rank draws the sequence one process draws, the ranks find
    // its distinct triples together, each keeps its range of each set.
    let small = strads::generate::KgConfig {
        entities: 2000,
        relations: 30,
        train: 150_000,
        valid: 1000,
        test: 1200,
        ..Default::default()
    };
    let few = strads::generate::KgConfig {
        entities: 1000,
        relations: 5,
        cluster_size: 100,
        noise: 0.0,
        entity_zipf: 50.0,
        relation_zipf: 50.0,
        train: 2000,
        valid: 10,
        test: 10,
        ..Default::default()
    };
    for (name, cfg) in [("generated graph", small), ("generated, too few", few)] {
        match strads::generate::kg_like_arrays(&cfg) {
            Ok(kg) => {
                describe(name, &kg);
                let whole = strads::generate::try_kg_like(&cfg)
                    .expect("the graph draws whole")
                    .into_arrays();
                println!("{name}: the same as try_kg_like's: {}", kg == whole);
            }
            Err(e) => println!("{name}: {e}"),
        }
    }

    let words = dir.join("words");
    for (name, min_count, max_sentence) in [
        ("ok.txt", 3, 25),
        ("ok.txt.gz", 3, 25),
        ("members.txt.gz", 3, 25),
        ("one_line.txt", 2, 1000),
        ("tiny.txt", 1, 2),
    ] {
        let w = strads::load::words_arrays(words.join(name), min_count, max_sentence)
            .expect("the corpus loads");
        describe_words(name, &w);
        let whole = strads::load::words(words.join(name), min_count, max_sentence)
            .expect("the corpus loads whole")
            .into_arrays()
            .expect("its sentences are numbered");
        println!("{name}: the same as words's: {}", w == whole);
    }
    for (name, min_count) in [
        ("nul.txt", 3),
        ("not_utf8.txt", 3),
        ("long_word.txt", 3),
        ("ok.txt", 1_000_000),
        ("cut.txt.gz", 3),
        ("absent.txt", 3),
    ] {
        let shown = match strads::load::words_arrays(words.join(name), min_count, 50) {
            Ok(w) => format!("loaded {} tokens", w.tokens.len()),
            Err(e) => e.to_string(),
        };
        println!("{name}: {}", shown.replace(dir.to_str().unwrap(), "DIR"));
    }
    let w = strads::load::words_arrays(words.join("ok.txt"), 2, 30).expect("the corpus loads");
    describe_words("words after errors", &w);
    drop(w);

    // Generated in place: every rank draws the sequence one process draws, counts it, and
    // keeps its range of the words.
    for (name, words, sentence, min_count) in [
        ("generated", 40_000, 700, 5),
        ("generated, 3 words", 3, 2, 1),
        ("generated, none frequent", 500, 100, 1_000),
    ] {
        let cfg = strads::generate::WordsConfig {
            words,
            types: 3000,
            sentence,
            min_count,
            ..Default::default()
        };
        match strads::generate::words_like_arrays(&cfg) {
            Ok(w) => {
                describe_words(name, &w);
                let whole = strads::generate::words_like(&cfg)
                    .expect("the corpus draws whole")
                    .into_arrays()
                    .expect("its sentences are numbered");
                println!("{name}: the same as words_like's: {}", w == whole);
            }
            Err(e) => println!("{name}: {e}"),
        }
    }
}

fn check() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("strads-cluster-text-{}", std::process::id()));
    write_folders(&dir);
    write_corpora(&dir);
    let dir_s = dir.to_string_lossy().into_owned();
    let result = (|| {
        for (procs, threads) in [(2, 1), (2, 2), (3, 1)] {
            let env = [("CLUSTER_TEXT_DIR", dir_s.as_str())];
            let explain =
                same_as_threads("CLUSTER_TEXT_ROLE", "program", (procs, threads), &env, 47)?;
            let released = "this rank holds 0 arrays (0 bytes) of the driver's at the end";
            let ranks = explain.lines().filter(|l| l.contains(released)).count();
            if ranks != procs - 1 {
                return Err(format!(
                    "{procs} x {threads}: a rank kept parts of graphs the driver dropped:\n\
                     {explain}"
                ));
            }
            if !explain.contains("train triples) made in place; its triples by rank: ")
                || !explain.contains("sentences) made in place; its tokens by rank: ")
            {
                return Err(format!(
                    "{procs} x {threads}: no line says what each rank holds:\n{explain}"
                ));
            }
            // (`openke_late_count`'s rows are all on the last rank, whose byte range holds
            // them: a loop over rows split evenly needs them elsewhere.)
            for (name, what) in [
                "text",
                "openke",
                "late_names",
                "after errors",
                "generated graph",
            ]
            .iter()
            .flat_map(|n| ["spread", "spread after a loop that reads by rows"].map(|w| (*n, w)))
            .chain(
                [
                    "ok.txt",
                    "ok.txt.gz",
                    "one_line.txt",
                    "words after errors",
                    "generated",
                ]
                .iter()
                .flat_map(|n| {
                    ["spread", "spread after a loop that reads by parts"].map(|w| (*n, w))
                }),
            ) {
                {
                    if !explain
                        .lines()
                        .any(|l| l.ends_with(&format!("{name} {what}: true")))
                    {
                        return Err(format!(
                            "{procs} x {threads}: {name} was not made in place, or came home \
                             for a loop that reads it by rows:\n{explain}"
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
        "cluster_text: the same graphs, corpora, bits and errors as threads at 2 x 1, 2 x 2, 3 x 1, \
         loaded in place"
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    main_of_roles(
        "CLUSTER_TEXT_ROLE",
        "cluster_text",
        &[("program", program)],
        check,
    )
}
