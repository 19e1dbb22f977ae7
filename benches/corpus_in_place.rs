//! An LDA-C corpus loaded in place (`corpus::lda_c` on a cluster job: every rank reads
//! the documents that start in its byte range) against one process reading it: the load's
//! seconds, a loop over the counts, and each rank's peak resident memory, at P = 1, 2 and
//! 4 processes of one thread (P = 1: one process of 2 threads). Every layout must print the
//! same corpus and the same loop result as the one process; the table says so. With
//! `--libsvm`, the same for a LIBSVM file (`load::libsvm`) and a loop that reads its
//! labels and offsets by samples.
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
/// One layout's run: (result line, load s, loop s, peaks in MiB by rank).
fn run(role: &str, path: &str, procs: usize) -> Result<(String, f64, f64, Vec<f64>), String> {
    let env = [("CORPUS_BENCH_ROLE", role), ("CORPUS_BENCH_DATA", path)];
    let (stdout, peaks) = ranks::run_ranks(&env, procs)?;
    let (load, looped) = (
        ranks::field(&stdout, "load").unwrap_or(f64::NAN),
        ranks::field(&stdout, "loop").unwrap_or(f64::NAN),
    );
    Ok((ranks::result_line(&stdout)?, load, looped, peaks))
}

fn bench() -> Result<(), String> {
    let args = Args::parse();
    let written =
        std::env::temp_dir().join(format!("strads-corpus-bench-{}.dat", std::process::id()));
    let path = match &args.data {
        Some(p) => p.clone(),
        None => {
            let t = Instant::now();
            let wrote = if args.libsvm {
                write_libsvm(&written, args.docs, args.words, args.pairs)
            } else {
                write_corpus(&written, args.docs, args.words, args.pairs)
            };
            wrote.map_err(|e| format!("writing {}: {e}", written.display()))?;
            let bytes = std::fs::metadata(&written).map_or(0, |m| m.len());
            println!(
                "wrote {} {}, {:.1} MiB, in {:.1} s",
                args.docs,
                if args.libsvm { "samples" } else { "documents" },
                bytes as f64 / (1 << 20) as f64,
                t.elapsed().as_secs_f64()
            );
            written.clone()
        }
    };
    let path_s = path.to_string_lossy().into_owned();
    let result = (|| {
        let mut rows = Vec::new();
        for procs in [1, 2, 4] {
            let role = if args.libsvm { "libsvm" } else { "program" };
            rows.push((procs, run(role, &path_s, procs)?));
        }
        let one = rows[0].1.0.clone();
        println!("{one}");
        println!("| layout | load s | loop s | peak MiB by rank | as 1 process |");
        println!("|---|---|---|---|---|");
        for (procs, (result, load, looped, peaks)) in &rows {
            let layout = if *procs == 1 {
                "1 process x 2 threads".to_owned()
            } else {
                format!("{procs} x 1, in place")
            };
            let peaks: Vec<String> = peaks.iter().map(|p| format!("{p:.1}")).collect();
            println!(
                "| {layout} | {load:.3} | {looped:.3} | {} | {} |",
                peaks.join(" / "),
                if *result == one {
                    "same"
                } else {
                    "**differs**"
                }
            );
        }
        if rows.iter().any(|(_, r)| r.0 != one) {
            return Err("a layout printed another data set or loop result".to_owned());
        }
        Ok(())
    })();
    if args.data.is_none() {
        let _ = std::fs::remove_file(&written);
    }
    result
}

#[strads::main]
fn main() -> ExitCode {
    let role = std::env::var("CORPUS_BENCH_ROLE").unwrap_or_default();
    if role == "program" || role == "libsvm" {
        let path = std::env::var("CORPUS_BENCH_DATA").unwrap_or_default();
        if role == "libsvm" {
            program_libsvm(&path);
        } else {
            program(&path);
        }
        return ExitCode::SUCCESS;
    }
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("corpus_in_place: {e}");
            ExitCode::FAILURE
        }
    }
}
