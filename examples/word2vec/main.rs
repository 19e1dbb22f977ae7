//! Word embeddings by skip-gram with negative sampling (word2vec) on a text corpus
//! (text8's prefix, plain or gzip-compressed) or a generated corpus of the same shape.
//! Every token shares the frequent words' vectors, so the loop runs in the data-parallel
//! mode (`sync = "bsp"`): each worker trains its replica of the vectors on its tokens and
//! the replicas' differences are averaged after every batch.
//!
//! ```text
//! cargo run --release --example word2vec                     # generated text8-shaped data
//! cargo run --release --example word2vec -- \
//!     --data ../shared/data/text8-prefix/text8_prefix_6877825.txt.gz \
//!     --questions questions-words.txt                        # gensim's analogy questions
//! STRADS_SERIAL=1 cargo run --release --example word2vec     # the original serial loop
//! cargo run --release --example word2vec -- --save vectors.txt  # word2vec text format
//! ```
//!
//! `questions-words.txt` (Mikolov et al.'s analogy questions) is not shipped here: gensim
//! ships it (`python3 -c "from gensim.test.utils import datapath;
//! print(datapath('questions-words.txt'))"` prints its path once gensim is installed), and
//! so does the original word2vec repository. `--save` writes what gensim's
//! `KeyedVectors.load_word2vec_format(path, binary=False)` reads, so gensim's own
//! `evaluate_word_analogies` can score the same vectors.
//!
//! Prints each epoch's loss and words per second, the nearest neighbours of a few words,
//! the analogy accuracy, then one line
//! `loss=<f> analogy=<f> questions=<n> words_per_second=<f> vocab=<n> epochs=<n>
//! seconds=<f> threads=<n> processes=<n>` (`analogy=0 questions=0` without `--questions`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use strads::load::Words;
use strads::prelude::*;

mod model;
use model::{analogies, sigmoid_table, skipgram_epoch};

#[path = "../common/cli.rs"]
mod cli;
#[path = "../common/fmt.rs"]
mod fmt;
#[path = "../common/progress.rs"]
mod progress;
#[path = "../common/save.rs"]
mod save;
use fmt::sig9;

/// A training run's errors: strads' own, and the program's (as text).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Parser, Debug)]
#[command(about = "word2vec (skip-gram, negative sampling) with strads")]
struct Args {
    /// Text corpus: words separated by whitespace, a line a sentence (plain or .gz).
    /// Without it, a text8-shaped corpus is generated.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Analogy questions in word2vec's format (`: section` lines, then `a b c d` lines), e.g.
    /// gensim's `questions-words.txt`.
    #[arg(long)]
    questions: Option<PathBuf>,
    /// Generated data: words in the corpus.
    #[arg(long, default_value_t = 1_170_000, value_parser = cli::at_least_one)]
    words: usize,
    /// Passes over the corpus.
    #[arg(long, default_value_t = 5, value_parser = cli::at_least_one)]
    epochs: usize,
    /// Dimensions of the word vectors.
    #[arg(long, default_value_t = 100, value_parser = cli::at_least_one)]
    dim: usize,
    /// Largest distance between a word and its context words.
    #[arg(long, default_value_t = 5, value_parser = cli::at_least_one)]
    window: usize,
    /// Noise words per true pair.
    #[arg(long, default_value_t = 5, value_parser = cli::whole)]
    negative: usize,
    /// Words seen fewer times are dropped.
    #[arg(long, default_value_t = 5, value_parser = cli::at_least_one)]
    min_count: usize,
    /// Subsampling of frequent words: a word of frequency f is kept with probability
    /// (sqrt(f / sample) + 1) sample / f (0: keep every word).
    #[arg(long, default_value_t = 1e-3, value_parser = cli::non_negative_f64)]
    sample: f64,
    /// Learning rate at the start; it falls linearly to alpha / 10^4 at the end.
    #[arg(long, default_value_t = 0.025, value_parser = cli::positive_f32)]
    alpha: f32,
    /// Questions count only when their four words are among this many most frequent.
    #[arg(long, default_value_t = 300_000, value_parser = cli::at_least_one)]
    restrict: usize,
    /// Words whose nearest neighbours are printed (comma-separated; those not in the
    /// vocabulary are skipped). Default: a few of text8's, or the generated corpus' first.
    #[arg(long, value_delimiter = ',')]
    neighbours: Vec<String>,
    /// Seed of the generated corpus, the initial vectors and the random draws.
    #[arg(long, default_value_t = 1, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
    /// Write the word vectors to this file in the word2vec text format (gensim:
    /// `KeyedVectors.load_word2vec_format(FILE, binary=False)`).
    #[arg(long)]
    save: Option<PathBuf>,
}

/// splitmix64: a well-mixed 64-bit value of `x`.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in `[0, 1)` for `(seed, a, b)`.
fn uniform(seed: u64, a: u64, b: u64) -> f64 {
    (mix(mix(seed ^ mix(a)) ^ b) >> 11) as f64 / (1u64 << 53) as f64
}

/// The epoch's tokens after subsampling (gensim's rule: a word of count `c` among `total`
/// words is kept with probability `(sqrt(c / t) + 1) t / c`, `t = sample * total`), and
/// the sentence of each.
fn subsample(words: &Words, sample: f64, seed: u64, epoch: usize) -> (Vec<u32>, Vec<u32>) {
    let total: u64 = words.counts.iter().sum();
    let t = sample * total as f64;
    let keep: Vec<f64> = words
        .counts
        .iter()
        .map(|&c| {
            if sample == 0.0 {
                1.0
            } else {
                ((c as f64 / t).sqrt() + 1.0) * t / c as f64
            }
        })
        .collect();
    let (mut tokens, mut sentence) = (Vec::new(), Vec::new());
    for (s, span) in words.sentences.windows(2).enumerate() {
        for k in span[0]..span[1] {
            let w = words.tokens[k];
            if keep[w as usize] >= 1.0 || uniform(seed, epoch as u64, k as u64) < keep[w as usize] {
                tokens.push(w);
                sentence.push(s as u32);
            }
        }
    }
    (tokens, sentence)
}

/// Walker's alias table of the noise law, counts^0.75 (gensim's and word2vec.c's): for
/// word `k`, the threshold below which a uniform `u32` keeps `k` (`u32::MAX`: always),
/// and the word taken otherwise. Integers, so that a draw does not depend on rounding.
fn noise_alias(words: &Words) -> (DistArray<u32, 1>, DistArray<u32, 1>) {
    let n = words.counts.len();
    let weights: Vec<f64> = words
        .counts
        .iter()
        .map(|&c| (c as f64).powf(0.75))
        .collect();
    let sum: f64 = weights.iter().sum();
    // Vose's construction: scaled weights (mean 1) split into small and large.
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
    let mut keep = vec![u32::MAX; n];
    let mut alias: Vec<u32> = (0..n as u32).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&k| scaled[k] < 1.0);
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        keep[s] = (scaled[s] * 4_294_967_296.0).min(u32::MAX as f64) as u32;
        alias[s] = l as u32;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    (
        DistArray::from_fn([n], |[k]| keep[k]),
        DistArray::from_fn([n], |[k]| alias[k]),
    )
}

/// Analogy questions whose four words are in the vocabulary's first `restrict` (compared
/// without case, the most frequent spelling winning, as gensim's `case_insensitive`):
/// rows `[a, b, c, d]`, and the number of questions in the file.
fn load_questions(
    path: &Path,
    words: &Words,
    restrict: usize,
) -> Result<(DistArray<u32, 2>, usize)> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ids: HashMap<String, u32> = HashMap::new();
    for (id, w) in words.vocab.iter().enumerate().take(restrict) {
        ids.entry(w.to_lowercase()).or_insert(id as u32);
    }
    let (mut rows, mut total) = (Vec::new(), 0usize);
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = std::str::from_utf8(line)
            .map_err(|_| {
                format!(
                    "{}:{}: not UTF-8; expected a text file",
                    path.display(),
                    n + 1
                )
            })?
            .trim();
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 4 {
            return Err(format!(
                "{}:{}: {} words; expected `a b c d` (a is to b as c is to d) or a `: section` line",
                path.display(),
                n + 1,
                fields.len()
            )
            .into());
        }
        total += 1;
        let q: Option<Vec<u32>> = fields
            .iter()
            .map(|f| ids.get(&f.to_lowercase()).copied())
            .collect();
        if let Some(q) = q {
            rows.extend(q);
        }
    }
    if total == 0 {
        return Err(format!("{}: no questions (`a b c d` lines)", path.display()).into());
    }
    let n = rows.len() / 4;
    Ok((DistArray::from_fn([n, 4], |[q, k]| rows[q * 4 + k]), total))
}

/// The vectors scaled to unit length (a zero vector stays zero).
fn unit_rows(v: &DistArray<f32, 2>) -> DistArray<f32, 2> {
    let [rows, dim] = v.shape();
    let mut u = DistArray::<f32, 2>::zeros([rows, dim]);
    for r in 0..rows {
        let x = v.row(r);
        let norm = dot(x, x).sqrt();
        if norm > 0.0 {
            for (o, &e) in u.row_mut(r).iter_mut().zip(x) {
                *o = e / norm;
            }
        }
    }
    u
}

fn load(args: &Args) -> Result<(Words, String)> {
    Ok(match &args.data {
        Some(path) => (
            strads::load::words(path, args.min_count as u64, 10_000)?,
            path.display().to_string(),
        ),
        None => (
            strads::generate::words_like(&strads::generate::WordsConfig {
                words: args.words,
                min_count: args.min_count as u64,
                seed: args.seed,
                ..Default::default()
            })?,
            "generated".to_owned(),
        ),
    })
}

fn train(args: &Args) -> Result<()> {
    // A spinner on a terminal when reading or making the data takes over 2 s.
    let bar = progress::Bar::spinner("reading the data");
    let (words, source) = load(args)?;
    bar.finish();
    let vocab = words.vocab.len();
    // The questions before the training, so that a bad file costs nothing.
    let restrict = args.restrict.min(vocab);
    let questions = match &args.questions {
        Some(path) => Some(load_questions(path, &words, restrict)?),
        None => None,
    };
    cli::check_memory(
        &format!("two {vocab} x {} vector tables", args.dim),
        vocab.checked_mul(args.dim).and_then(|n| n.checked_mul(2)),
        4,
    )?;
    let threads = cli::threads_used();
    println!(
        "data={source} words={} vocab={vocab} tokens={} sentences={} dim={} window={} negative={} \
         sample={} alpha={} threads={threads}",
        words.raw_words,
        words.tokens.len(),
        words.sentences.len() - 1,
        args.dim,
        args.window,
        args.negative,
        args.sample,
        args.alpha
    );
    let dim = args.dim;
    // Input vectors uniform in (-1/dim, 1/dim), as gensim starts them; output vectors 0.
    let mut syn0 = DistArray::<f32, 2>::from_fn([vocab, dim], |[w, k]| {
        ((uniform(args.seed, w as u64, k as u64) * 2.0 - 1.0) / dim as f64) as f32
    });
    let mut syn1 = DistArray::<f32, 2>::zeros([vocab, dim]);
    let (keep, alias) = noise_alias(&words);
    let sigmoid = sigmoid_table();
    let (mut seconds, mut loss) = (0.0, 0.0);
    let mut bar = progress::Bar::new(args.epochs as u64, "training: epochs");
    for epoch in 0..args.epochs {
        let (tokens, sentence) = subsample(&words, args.sample, args.seed, epoch);
        let (tokens, sentence) = (
            DistArray::from_fn([tokens.len()], |[k]| tokens[k]),
            DistArray::from_fn([sentence.len()], |[k]| sentence[k]),
        );
        let t = Instant::now();
        let (sum, predictions) = skipgram_epoch(
            &tokens,
            &sentence,
            &keep,
            &alias,
            &sigmoid,
            &mut syn0,
            &mut syn1,
            args.window,
            args.negative,
            args.alpha,
            epoch as f32 / args.epochs as f32,
            1.0 / args.epochs as f32,
            mix(args.seed ^ mix(epoch as u64)),
        );
        let dt = t.elapsed().as_secs_f64();
        seconds += dt;
        loss = sum / predictions.max(1) as f64;
        if !loss.is_finite() {
            let advice = format!("lower --alpha (it is {:?})", args.alpha);
            return Err(cli::diverged(epoch + 1, "the loss", loss, &advice).into());
        }
        bar.println(format!(
            "epoch {:>3}  loss={}  trained={}  words_per_second={:.0}  epoch_seconds={dt:.4}  \
             seconds={seconds:.4}",
            epoch + 1,
            sig9(loss),
            tokens.len(),
            words.raw_words as f64 / dt
        ));
        bar.inc(1);
    }
    bar.finish();
    let unit = unit_rows(&syn0);
    let probes: Vec<String> = if !args.neighbours.is_empty() {
        args.neighbours.clone()
    } else if args.data.is_some() {
        ["king", "france", "computer", "two", "war"]
            .map(String::from)
            .to_vec()
    } else {
        words.vocab.iter().take(3).cloned().collect()
    };
    for word in &probes {
        let Some(id) = words.id(word) else {
            println!("neighbours {word}: not in the vocabulary");
            continue;
        };
        let mut scored: Vec<(f32, usize)> = (0..vocab)
            .filter(|&v| v != id)
            .map(|v| (dot(unit.row(v), unit.row(id)), v))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let near: Vec<String> = scored
            .iter()
            .take(8)
            .map(|&(s, v)| format!("{}({s:.3})", words.vocab[v]))
            .collect();
        println!("neighbours {word}: {}", near.join(" "));
    }
    let (mut accuracy, mut asked) = (0.0, 0);
    if let Some((questions, total)) = &questions {
        let total = *total;
        asked = questions.shape()[0];
        let correct = analogies(questions, &unit, restrict);
        accuracy = correct as f64 / asked.max(1) as f64;
        println!(
            "analogies: {correct} of {asked} answered right ({:.2}%); {} of {total} questions \
             skipped (a word outside the first {restrict})",
            100.0 * accuracy,
            total - asked
        );
    }
    if let Some(path) = &args.save {
        save::word2vec_text(path, &words.vocab, &syn0)?;
    }
    let processes = cli::processes();
    println!(
        "loss={} analogy={accuracy:.6} questions={asked} words_per_second={:.0} vocab={vocab} \
         epochs={} seconds={seconds:.4} threads={threads} processes={processes}",
        sig9(loss),
        words.raw_words as f64 * args.epochs as f64 / seconds.max(1e-9),
        args.epochs
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, train)
}
