//! An LDA-C corpus loaded in place (`corpus::lda_c` on a cluster job: every rank reads
//! the documents that start in its byte range) against one process reading it: the load's
//! seconds, a loop over the counts, and each rank's peak resident memory, at P = 1, 2 and
//! 4 processes of one thread (P = 1: one process of 2 threads). Every layout must print the
//! same corpus and the same loop result as the one process; the table says so. With
//! `--libsvm`, the same for a LIBSVM file (`load::libsvm`) and a loop that reads its
//! labels and offsets by samples. With `--text`, a text corpus (`load::words_arrays`; a
//! row also loads it with `load::words`, whole on the driver, then `into_arrays`) and a
//! loop over its tokens; with `--kg`, a knowledge graph's folder of text triples
//! (`load::knowledge_graph_arrays`, and `load::knowledge_graph` whole) and a loop over its
//! training rows. With `--reads`, a generated rating array of `--docs` ratings (made in
//! place) read by serial code: summed by value (`iter_values`) and 2,000 entries read at
//! random by value (`entry_value`), then summed by reference (`iter`, which brings it
//! home).
//!
//! The corpus is an LDA-C file written here (AP-like documents: Zipf-skewed word ids,
//! log-normal lengths), or the file `--data` names; with `--libsvm`, a LIBSVM file of
//! `--docs` samples of about `--pairs` Zipf-skewed features below `--words`. Ranks are
//! started by `STRADS_PROCESSES` on this machine; each rank's peak is its `VmHWM`, from
//! `STRADS_EXPLAIN`'s memory lines (the driver's from its own `/proc/self/status`). Record
//! the table in BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench corpus_in_place
//! cargo bench --bench corpus_in_place -- --docs 400000 --data /path/to/file.dat
//! cargo bench --bench corpus_in_place -- --libsvm --docs 2000000 --pairs 20
//! cargo bench --bench corpus_in_place -- --text --docs 20000 --pairs 1000
//! cargo bench --bench corpus_in_place -- --text --data text8.gz
//! cargo bench --bench corpus_in_place -- --kg --docs 4000000
//! cargo bench --bench corpus_in_place -- --reads --docs 10000000
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

#[path = "common/ranks.rs"]
mod ranks;
use ranks::vm_hwm_kib;
use strads::prelude::*;

/// Every sample's entries, weighted by its label and number: a loop that reads a LIBSVM
/// set's labels and offsets by samples, so it runs where their parts are. An integer sum.
#[strads::parallel_for]
fn by_samples(labels: &DistArray<f32, 1>, offsets: &DistArray<u32, 1>, n: usize) -> i64 {
    let mut s: i64 = 0;
    for i in 0..n {
        let entries = i64::from(offsets[i + 1] - offsets[i]);
        s += entries * (1 + (i % 89) as i64) * labels[i] as i64;
    }
    s
}

/// The tokens of every word, weighted by document and word: a loop that only reads the
/// counts, so it runs where their parts are. An integer sum, so every worker count gives
/// the one process's result.
#[strads::parallel_for]
fn weighted(counts: &SparseArray<u32, 2>) -> u64 {
    let mut s: u64 = 0;
    for ([d, w], &n) in counts {
        s += u64::from(n) * (1 + (d % 97) as u64 + (w % 89) as u64);
    }
    s
}

/// Each token's word and sentence, weighted by position: a loop that reads the tokens by
/// parts. An integer sum.
#[strads::parallel_for]
fn by_tokens(tokens: &DistArray<u32, 1>, sentence: &DistArray<u32, 1>, n: usize) -> u64 {
    let mut s: u64 = 0;
    for k in 0..n {
        s += (u64::from(tokens[k]) + 3 * u64::from(sentence[k])) * (1 + (k % 89) as u64);
    }
    s
}

/// Each triple's ids, weighted by position: a loop that reads the rows by parts.
#[strads::parallel_for]
fn by_rows(triples: &DistArray<u32, 2>, n: usize) -> u64 {
    let mut s: u64 = 0;
    for k in 0..n {
        let key = u64::from(triples[[k, 0]]) * 7 + u64::from(triples[[k, 1]]) * 3;
        s += (key + u64::from(triples[[k, 2]])) * (1 + (k % 89) as u64);
    }
    s
}

#[derive(Parser, Debug)]
#[command(about = "LDA-C loaded in place against one process")]
struct Args {
    /// An LDA-C file to load; without it, one of `--docs` documents is written first.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Documents of the written file.
    #[arg(long, default_value_t = 200_000)]
    docs: usize,
    /// Vocabulary of the written file.
    #[arg(long, default_value_t = 100_000)]
    words: u64,
    /// Mean distinct words a document of the written file.
    #[arg(long, default_value_t = 80)]
    pairs: u64,
    /// A LIBSVM file instead (`--data`, or one of `--docs` samples written first).
    #[arg(long)]
    libsvm: bool,
    /// A text corpus instead (`--data`, or one of `--docs` lines of about `--pairs`
    /// Zipf-skewed words below `--words` written first).
    #[arg(long)]
    text: bool,
    /// A knowledge graph instead (`--data`, a folder, or one of `--docs` training triples of
    /// text names over `--words` entities written first).
    #[arg(long)]
    kg: bool,
    /// Serial reads of a generated rating array of `--docs` ratings instead.
    #[arg(long)]
    reads: bool,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// A small linear congruential sequence.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    fn unit(&mut self) -> f64 {
        (self.next() as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// Writes an LDA-C file: `docs` documents, distinct Zipf-skewed ids below `words`,
/// log-normal numbers of distinct words around `pairs`, counts mostly 1.
fn write_corpus(path: &PathBuf, docs: usize, words: u64, pairs: u64) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut g = Lcg(7);
    let mut ids: Vec<u64> = Vec::new();
    let mut line = String::new();
    for _ in 0..docs {
        // Log-normal by Box-Muller, sigma 0.6.
        let z = (-2.0 * g.unit().ln()).sqrt() * (std::f64::consts::TAU * g.unit()).cos();
        let k = ((pairs as f64 * (0.6 * z - 0.18).exp()).round() as u64).clamp(1, words);
        ids.clear();
        while (ids.len() as u64) < k {
            // Zipf-like: the inverse of a power law's CDF.
            let id = ((words as f64).powf(g.unit()) - 1.0) as u64 % words;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        line.clear();
        write!(line, "{k}").unwrap();
        for &id in &ids {
            let c = if g.next() % 4 == 0 {
                g.next() % 5 + 2
            } else {
                1
            };
            write!(line, " {id}:{c}").unwrap();
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}

/// Writes a LIBSVM file: `samples` samples of about `pairs` distinct Zipf-skewed feature
/// indices below `features`, increasing, values 1 or 0.5, labels +1 about a third of the
/// time.
fn write_libsvm(path: &PathBuf, samples: usize, features: u64, pairs: u64) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut g = Lcg(11);
    let mut ids: Vec<u64> = Vec::new();
    let mut line = String::new();
    for _ in 0..samples {
        let k = (g.next() % (2 * pairs).max(1) + 1).min(features);
        ids.clear();
        while (ids.len() as u64) < k {
            let id = ((features as f64).powf(g.unit()) - 1.0) as u64 % features + 1;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        line.clear();
        line.push_str(if g.next() % 3 == 0 { "+1" } else { "-1" });
        for &id in &ids {
            let v = if g.next() % 2 == 0 { "1" } else { "0.5" };
            write!(line, " {id}:{v}").unwrap();
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}

/// Writes a text corpus: `lines` lines of about `per_line` Zipf-skewed words `w<id>`
/// below `words`.
fn write_text(path: &PathBuf, lines: usize, words: u64, per_line: u64) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut g = Lcg(13);
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        for k in 0..g.next() % (2 * per_line).max(1) + 1 {
            let id = ((words as f64).powf(g.unit()) - 1.0) as u64 % words;
            if k > 0 {
                line.push(' ');
            }
            write!(line, "w{id}").unwrap();
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}

/// Writes a folder of text triples: `train` training triples (and a twentieth as many
/// validation and test triples) of Zipf-skewed entities `/m/<id>` below `entities` and
/// relations `/r/<id>` below 200.
fn write_kg(dir: &PathBuf, train: usize, entities: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut g = Lcg(17);
    for (file, n) in [
        ("train.txt", train),
        ("valid.txt", train / 20 + 1),
        ("test.txt", train / 20 + 1),
    ] {
        let mut out =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(file))?);
        for _ in 0..n {
            let mut entity = || ((entities as f64).powf(g.unit()) - 1.0) as u64 % entities;
            let (h, t) = (entity(), entity());
            writeln!(out, "/m/{h:x}\t/r/{}\t/m/{t:x}", g.next() % 200)?;
        }
        out.flush()?;
    }
    Ok(())
}

/// The program each layout runs for a text corpus: load (in place, or whole with
/// `whole`), loop, and what it found.
fn program_text(path: &str, whole: bool) {
    let t = Instant::now();
    let w = if whole {
        strads::load::words(path, 5, 10_000).and_then(|w| w.into_arrays())
    } else {
        strads::load::words_arrays(path, 5, 10_000)
    };
    let w = w.unwrap_or_else(|e| {
        eprintln!("corpus_in_place: {e}");
        std::process::exit(1)
    });
    let load = t.elapsed().as_secs_f64();
    let load_peak = vm_hwm_kib();
    let t = Instant::now();
    let n = w.tokens.len();
    let s = by_tokens(&w.tokens, &w.sentence, n);
    let looped = t.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    println!(
        "result words={} vocab={} tokens={n} sentences={} by_tokens={s}",
        w.raw_words,
        w.vocab.len(),
        w.sentences
    );
    println!(
        "timing load={load:.3} loop={looped:.3} spread={} driver_load_peak_kib={load_peak} \
         driver_peak_kib={peak}",
        w.tokens.is_spread()
    );
}

/// The program each layout runs for a knowledge graph's folder: load (in place, or whole
/// with `whole`), loop, and what it found.
fn program_kg(path: &str, whole: bool) {
    let t = Instant::now();
    let kg = if whole {
        strads::load::knowledge_graph(path).map(|kg| kg.into_arrays())
    } else {
        strads::load::knowledge_graph_arrays(path)
    };
    let kg = kg.unwrap_or_else(|e| {
        eprintln!("corpus_in_place: {e}");
        std::process::exit(1)
    });
    let load = t.elapsed().as_secs_f64();
    let load_peak = vm_hwm_kib();
    let t = Instant::now();
    let n = kg.train.shape()[0];
    let s = by_rows(&kg.train, n);
    let looped = t.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    println!(
        "result entities={} relations={} triples={} by_rows={s}",
        kg.entities,
        kg.relations,
        kg.triples()
    );
    println!(
        "timing load={load:.3} loop={looped:.3} spread={} driver_load_peak_kib={load_peak} \
         driver_peak_kib={peak}",
        kg.train.is_spread()
    );
}

/// The program each layout runs for `--reads`: a rating array of `ratings` made (in
/// place on a cluster), read by value, then by reference.
fn program_reads(ratings: usize) {
    let r = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: (ratings / 100).max(1000),
        items: (ratings / 1000).max(500),
        ratings,
        ..Default::default()
    });
    let t = Instant::now();
    let by_value: f64 = r.iter_values().map(|(_, v)| f64::from(v)).sum();
    let values = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut g = Lcg(19);
    let picked: f64 = (0..2000)
        .map(|_| f64::from(r.entry_value(g.next() as usize % r.nnz()).1))
        .sum();
    let picks = t.elapsed().as_secs_f64();
    let values_peak = vm_hwm_kib();
    let spread = r.is_spread();
    let t = Instant::now();
    let by_reference: f64 = r.iter().map(|(_, &v)| f64::from(v)).sum();
    let references = t.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    println!(
        "result ratings={} by_value={:016x} picked={:016x} same={}",
        r.nnz(),
        by_value.to_bits(),
        picked.to_bits(),
        by_value == by_reference
    );
    println!(
        "timing load={values:.3} loop={references:.3} picks={picks:.3} spread={spread} \
         driver_load_peak_kib={values_peak} driver_peak_kib={peak}"
    );
}

/// The program each layout runs for a LIBSVM file: load, loop, and what it found.
fn program_libsvm(path: &str) {
    let t = Instant::now();
    let d = strads::load::libsvm(path).unwrap_or_else(|e| {
        eprintln!("corpus_in_place: {e}");
        std::process::exit(1)
    });
    let load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let w = by_samples(&d.labels, &d.offsets, d.samples());
    let looped = t.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    println!(
        "result samples={} entries={} features={} by_samples={w}",
        d.samples(),
        d.nnz(),
        d.n_features
    );
    println!(
        "timing load={load:.3} loop={looped:.3} spread={} driver_peak_kib={peak}",
        d.labels.is_spread() && d.features.is_spread()
    );
}

/// The program each layout runs: load, loop, and what it found.
fn program(path: &str) {
    let t = Instant::now();
    let c = strads::corpus::lda_c(path, None).unwrap_or_else(|e| {
        eprintln!("corpus_in_place: {e}");
        std::process::exit(1)
    });
    let load = t.elapsed().as_secs_f64();
    let load_peak = vm_hwm_kib();
    let tokens = c.tokens();
    let t = Instant::now();
    let w = weighted(&c.counts);
    let looped = t.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    println!(
        "result docs={} words={} pairs={} tokens={tokens} weighted={}",
        c.docs,
        c.words,
        c.counts.nnz(),
        w
    );
    println!(
        "timing load={load:.3} loop={looped:.3} spread={} driver_load_peak_kib={load_peak} \
         driver_peak_kib={peak}",
        c.counts.is_spread()
    );
}

/// This process's peak resident set (`VmHWM`), KiB; 0 where unknown.
/// One layout's run: what it printed, and its peaks in MiB by rank.
struct Run {
    result: String,
    load: f64,
    looped: f64,
    /// The driver's peak once the data is loaded, before the loop (MiB; NaN when the
    /// program does not say).
    load_peak: f64,
    /// `--reads`: the seconds of the reads at random by value.
    picks: f64,
    peaks: Vec<f64>,
}

fn run(role: &str, path: &str, procs: usize) -> Result<Run, String> {
    let env = [("CORPUS_BENCH_ROLE", role), ("CORPUS_BENCH_DATA", path)];
    let (stdout, peaks) = ranks::run_ranks(&env, procs)?;
    Ok(Run {
        result: ranks::result_line(&stdout)?,
        load: ranks::field(&stdout, "load").unwrap_or(f64::NAN),
        looped: ranks::field(&stdout, "loop").unwrap_or(f64::NAN),
        load_peak: ranks::field(&stdout, "driver_load_peak_kib").unwrap_or(f64::NAN) / 1024.0,
        picks: ranks::field(&stdout, "picks").unwrap_or(f64::NAN),
        peaks,
    })
}

fn bench() -> Result<(), String> {
    let args = Args::parse();
    let written =
        std::env::temp_dir().join(format!("strads-corpus-bench-{}.dat", std::process::id()));
    let path = match &args.data {
        Some(p) => p.clone(),
        None if args.reads => PathBuf::from(args.docs.to_string()),
        None => {
            let t = Instant::now();
            let wrote = if args.libsvm {
                write_libsvm(&written, args.docs, args.words, args.pairs)
            } else if args.text {
                write_text(&written, args.docs, args.words, args.pairs)
            } else if args.kg {
                write_kg(&written, args.docs, args.words)
            } else {
                write_corpus(&written, args.docs, args.words, args.pairs)
            };
            wrote.map_err(|e| format!("writing {}: {e}", written.display()))?;
            let bytes = if args.kg {
                ["train.txt", "valid.txt", "test.txt"]
                    .iter()
                    .map(|f| std::fs::metadata(written.join(f)).map_or(0, |m| m.len()))
                    .sum()
            } else {
                std::fs::metadata(&written).map_or(0, |m| m.len())
            };
            println!(
                "wrote {} {}, {:.1} MiB, in {:.1} s",
                args.docs,
                match (args.libsvm, args.text, args.kg) {
                    (true, ..) => "samples",
                    (_, true, _) => "lines",
                    (.., true) => "training triples",
                    _ => "documents",
                },
                bytes as f64 / (1 << 20) as f64,
                t.elapsed().as_secs_f64()
            );
            written.clone()
        }
    };
    let path_s = path.to_string_lossy().into_owned();
    let result = (|| {
        let mut rows = Vec::new();
        let role = match (args.libsvm, args.text, args.kg) {
            _ if args.reads => "reads",
            (true, ..) => "libsvm",
            (_, true, _) => "text",
            (.., true) => "kg",
            _ => "program",
        };
        for procs in [1, 2, 4] {
            rows.push((procs, false, run(role, &path_s, procs)?));
        }
        // The vectors' loaders at P = 4: the data whole on the driver, then arrays.
        if args.text || args.kg {
            let whole = format!("{role}_whole");
            rows.push((4, true, run(&whole, &path_s, 4)?));
        }
        let one = rows[0].2.result.clone();
        println!("{one}");
        if args.reads {
            println!(
                "| layout | in order by value s (2,000 at random s) | by reference s | driver's \
                 peak after the reads by value, MiB | peak MiB by rank (at the end) | as 1 \
                 process |"
            );
        } else {
            println!(
                "| layout | load s | loop s | driver's peak after the load, MiB | peak MiB by \
                 rank (at the end) | as 1 process |"
            );
        }
        println!("|---|---|---|---|---|---|");
        for (procs, whole, r) in &rows {
            let layout = match (*procs, *whole) {
                (1, _) => "1 process x 2 threads".to_owned(),
                (_, false) => format!("{procs} x 1, in place"),
                (_, true) => format!("{procs} x 1, whole on the driver"),
            };
            let peaks: Vec<String> = r.peaks.iter().map(|p| format!("{p:.1}")).collect();
            let first = if args.reads {
                format!("{:.3} ({:.3})", r.load, r.picks)
            } else {
                format!("{:.3}", r.load)
            };
            println!(
                "| {layout} | {first} | {:.3} | {:.1} | {} | {} |",
                r.looped,
                r.load_peak,
                peaks.join(" / "),
                if r.result == one {
                    "same"
                } else {
                    "**differs**"
                }
            );
        }
        if rows.iter().any(|(.., r)| r.result != one) {
            return Err("a layout printed another data set or loop result".to_owned());
        }
        Ok(())
    })();
    if args.data.is_none() && !args.reads {
        let _ = std::fs::remove_file(&written);
        let _ = std::fs::remove_dir_all(&written);
    }
    result
}

#[strads::main]
fn main() -> ExitCode {
    let role = std::env::var("CORPUS_BENCH_ROLE").unwrap_or_default();
    let path = std::env::var("CORPUS_BENCH_DATA").unwrap_or_default();
    match role.as_str() {
        "program" => program(&path),
        "libsvm" => program_libsvm(&path),
        "text" | "text_whole" => program_text(&path, role == "text_whole"),
        "kg" | "kg_whole" => program_kg(&path, role == "kg_whole"),
        "reads" => program_reads(path.parse().unwrap_or(1_000_000)),
        _ => match bench() {
            Ok(()) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("corpus_in_place: {e}");
                return ExitCode::FAILURE;
            }
        },
    }
    ExitCode::SUCCESS
}
