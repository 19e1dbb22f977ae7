//! Latent Dirichlet allocation by collapsed Gibbs sampling, Orion-style, on a corpus in
//! LDA-C format (Blei's AP sample data) or a generated corpus of the same shape.
//!
//! The topic of every token lives in its (document, word) entry: `tokens` maps each entry
//! to the topics of its occurrences, and the sweep iterates `tokens.iter_mut()`, so each
//! iteration owns its entry's topics. The counts the sampler reads and writes are
//! `ndk[d, k]` (document-topic: row `d`, local to the worker that owns document `d`),
//! `nwk[w, k]` (word-topic: row `w`, rotated around the workers in 2D) and `nk[k]` (the
//! topic totals, which every token touches: a write-back buffer, each worker updating its
//! own copy, merged after the sweep). The macro proves the sweep 2D and the runtime runs
//! Orion's rotation schedule.
//!
//! ```text
//! cargo run --release --example lda                               # generated AP-shaped corpus
//! cargo run --release --example lda -- --data ../shared/data/lda-ap/ap.dat \
//!     --vocab ../shared/data/lda-ap/vocab.txt
//! STRADS_SERIAL=1 cargo run --release --example lda               # the original serial loop
//! STRADS_EXPLAIN=1 cargo run --release --example lda              # shows the plans
//! ```
//!
//! Prints the training log-likelihood and time of every sweep, the top 10 words of a few
//! topics, then one line
//! `loglik=<f> iterations=<n> seconds=<f> threads=<n> processes=<n> topics=<K>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use strads::corpus::{self, Corpus};
use strads::prelude::*;

mod model;
use model::{draw_topics, gibbs, ln_gamma};

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

/// A number of topics: 1 to 65536 (a token's topic is a `u16`).
fn topics(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=usize::from(u16::MAX) + 1).contains(&n) => Ok(n),
        _ => Err("expected a whole number of topics from 1 to 65536".to_owned()),
    }
}

/// `sum over the elements c of counts of ln Γ(c + prior)`: the data-dependent part of the
/// log-likelihood, a reduction over a dense array (1D, each worker summing its own rows,
/// the parts added in a fixed order).
#[strads::parallel_for]
fn sum_ln_gamma(counts: &DistArray<i32, 2>, prior: f64) -> f64 {
    let mut sum: f64 = 0.0;
    for ([_row, _k], &c) in counts {
        sum += ln_gamma(f64::from(c) + prior);
    }
    sum
}

/// The collapsed joint log-likelihood `log p(w, z | alpha, beta)` of the corpus and the
/// current topic assignments (Griffiths & Steyvers 2004), with D documents, V words and
/// K topics:
///
/// ```text
///   D [ln Γ(K α) - K ln Γ(α)] + Σ_d [Σ_k ln Γ(n_dk + α) - ln Γ(n_d + K α)]    (log p(z))
/// + K [ln Γ(V β) - V ln Γ(β)] + Σ_k [Σ_w ln Γ(n_wk + β) - ln Γ(n_k + V β)]    (log p(w | z))
/// ```
///
/// The two large sums over `ndk` and `nwk` run as `#[parallel_for]` reductions
/// ([`sum_ln_gamma`]); the `O(D + K)` rest runs serially.
fn log_likelihood(
    ndk: &DistArray<i32, 2>,
    nwk: &DistArray<i32, 2>,
    nk: &DistArray<i32, 1>,
    alpha: f64,
    beta: f64,
) -> f64 {
    let [docs, topics] = ndk.shape();
    let words = nwk.shape()[0];
    let (k, v) = (topics as f64, words as f64);
    let mut ll = docs as f64 * (ln_gamma(k * alpha) - k * ln_gamma(alpha));
    ll += sum_ln_gamma(ndk, alpha);
    for d in 0..docs {
        let nd: i64 = ndk.row(d).iter().map(|&c| i64::from(c)).sum();
        ll -= ln_gamma(nd as f64 + k * alpha);
    }
    ll += k * (ln_gamma(v * beta) - v * ln_gamma(beta));
    ll += sum_ln_gamma(nwk, beta);
    for &n in nk.as_slice() {
        ll -= ln_gamma(f64::from(n) + v * beta);
    }
    ll
}

/// The sampler's state: the topic of every token and the three count arrays.
struct State {
    tokens: SparseArray<Vec<u16>, 2>,
    ndk: DistArray<i32, 2>,
    nwk: DistArray<i32, 2>,
    nk: DistArray<i32, 1>,
}

/// Every token gets a uniformly random topic (keyed by its entry, so the start does not
/// depend on the thread count), and the counts follow: each entry's list of topics made by
/// `SparseArray::repeated` (in parts on the ranks, like the corpus, on a cluster), then
/// drawn in a parallel loop ([`draw_topics`]).
fn initialize(corpus: Corpus, topics: usize, seed: u64) -> Result<(State, Vec<String>)> {
    let tokens = SparseArray::repeated(&corpus.counts, 0u16)?;
    let (docs, words) = (corpus.docs, corpus.words);
    // The counts live on in the lists: let them go (on a cluster, their parts on the ranks
    // too) before the loop plans, keeping the words' names for the report.
    let vocab = {
        let c = corpus;
        c.vocab
    };
    let mut s = State {
        tokens,
        ndk: DistArray::zeros([docs, topics]),
        nwk: DistArray::zeros([words, topics]),
        nk: DistArray::zeros([topics]),
    };
    draw_topics(&mut s.tokens, &mut s.ndk, &mut s.nwk, &mut s.nk, seed);
    Ok((s, vocab))
}

#[derive(Parser, Debug)]
#[command(about = "LDA by collapsed Gibbs sampling with strads")]
struct Args {
    /// Corpus in LDA-C format (`N id:count id:count ...` per document, 0-based word
    /// ids). Without it, an AP-shaped corpus is generated.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Vocabulary of the corpus: one word per line, line k naming word id k - 1.
    #[arg(long, requires = "data")]
    vocab: Option<PathBuf>,
    /// Generated corpus: documents.
    #[arg(long, default_value_t = 2246, value_parser = cli::at_least_one)]
    docs: usize,
    /// Generated corpus: vocabulary size.
    #[arg(long, default_value_t = 10_473, value_parser = cli::dim)]
    words: usize,
    /// Generated corpus: mean tokens per document.
    #[arg(long, default_value_t = 194.0, value_parser = cli::positive_f64)]
    avg_len: f64,
    /// Number of topics K (also the hidden topics of a generated corpus).
    #[arg(long, default_value_t = 20, value_parser = topics)]
    topics: usize,
    /// Gibbs sweeps over every token.
    #[arg(long, default_value_t = 30, value_parser = cli::at_least_one)]
    iterations: usize,
    /// Dirichlet prior of the document-topic mixtures (default 50 / K).
    #[arg(long, value_parser = cli::positive_f64)]
    alpha: Option<f64>,
    /// Dirichlet prior of the topic-word distributions.
    #[arg(long, default_value_t = 0.01, value_parser = cli::positive_f64)]
    beta: f64,
    /// Seed of the generated corpus, the initial topics and the sampler.
    #[arg(long, default_value_t = 1, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
    /// Write the topic-word counts to this file as the `lda` package's `nzw_` holds them:
    /// a topic a line, a count per word (`numpy.loadtxt(FILE, dtype=int)`).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Topics whose top words are printed at the end.
    #[arg(long, default_value_t = 5, value_parser = cli::whole)]
    show: usize,
}

/// The `n` most frequent words of topic `k` (ties: smaller id first).
fn top_words(nwk: &DistArray<i32, 2>, k: usize, n: usize) -> Vec<(usize, i32)> {
    let mut words: Vec<(usize, i32)> = (0..nwk.shape()[0])
        .map(|w| (w, nwk[[w, k]]))
        .filter(|&(_, c)| c > 0)
        .collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    words.truncate(n);
    words
}

fn train(args: &Args) -> Result<()> {
    let alpha = args.alpha.unwrap_or(50.0 / args.topics as f64);
    let (corpus, source) = match &args.data {
        Some(path) => {
            // A spinner on a terminal when reading takes over 2 s.
            let bar = progress::Bar::spinner(&format!("reading {}", path.display()));
            let corpus = corpus::lda_c(path, args.vocab.as_deref())?;
            bar.finish();
            (corpus, path.display().to_string())
        }
        None => {
            let cap = corpus::MAX_TOKENS / 2 / args.docs as u64;
            if args.avg_len > cap as f64 {
                return Err(format!(
                    "--avg-len {} with --docs {} asks for more than {} tokens; at most {cap} \
                     tokens per document for {} documents",
                    args.avg_len,
                    args.docs,
                    corpus::MAX_TOKENS / 2,
                    args.docs
                )
                .into());
            }
            (
                corpus::try_generated(args.docs, args.words, args.topics, args.avg_len, args.seed)?,
                "generated".to_string(),
            )
        }
    };
    // The count arrays and every token's topic.
    let cells = corpus
        .docs
        .checked_add(corpus.words)
        .and_then(|r| r.checked_mul(args.topics));
    cli::check_memory(
        &format!(
            "the topic counts of {} documents and {} words with {} topics",
            corpus.docs, corpus.words, args.topics
        ),
        cells.and_then(|c| c.checked_add(corpus.tokens() as usize / 2)),
        4,
    )?;
    let threads = cli::threads_used();
    let n_tokens = corpus.tokens();
    println!(
        "data={source} docs={} words={} tokens={n_tokens} entries={} topics={} alpha={} beta={} \
         threads={threads}",
        corpus.docs,
        corpus.words,
        corpus.counts.nnz(),
        args.topics,
        alpha,
        args.beta
    );
    let (mut s, vocab) = initialize(corpus, args.topics, args.seed)?;
    let ll0 = log_likelihood(&s.ndk, &s.nwk, &s.nk, alpha, args.beta);
    if !ll0.is_finite() {
        return Err(format!(
            "the initial log-likelihood is {ll0}: --alpha {alpha:?} or --beta {:?} is too small or \
             too large to compute with",
            args.beta
        )
        .into());
    }
    println!(
        "iteration   0  loglik={}  per_token={:.6}",
        sig9(ll0),
        ll0 / n_tokens.max(1) as f64
    );
    let mut seconds = 0.0;
    let mut ll = ll0;
    let mut bar = progress::Bar::new(args.iterations as u64, "sampling: sweeps");
    for it in 1..=args.iterations {
        let t = Instant::now();
        gibbs(
            &mut s.tokens,
            &mut s.ndk,
            &mut s.nwk,
            &mut s.nk,
            alpha,
            args.beta,
            args.seed,
            it as u64,
        );
        let dt = t.elapsed().as_secs_f64();
        seconds += dt;
        ll = log_likelihood(&s.ndk, &s.nwk, &s.nk, alpha, args.beta);
        if !ll.is_finite() {
            let advice = "check --alpha and --beta";
            return Err(cli::diverged(it, "the log-likelihood", ll, advice).into());
        }
        bar.println(format!(
            "iteration {it:>3}  loglik={}  per_token={:.6}  sweep_seconds={dt:.4}  seconds={seconds:.4}",
            sig9(ll),
            ll / n_tokens.max(1) as f64
        ));
        bar.inc(1);
    }
    bar.finish();
    for k in 0..args.show.min(args.topics) {
        let words: Vec<String> = top_words(&s.nwk, k, 10)
            .into_iter()
            .map(|(w, _)| vocab.get(w).cloned().unwrap_or_else(|| format!("#{w}")))
            .collect();
        println!("topic {k:>3} ({} tokens): {}", s.nk[k], words.join(" "));
    }
    if let Some(path) = &args.save {
        save::topic_word(path, &s.nwk)?;
    }
    let processes = cli::processes();
    println!(
        "loglik={} iterations={} seconds={seconds:.4} threads={threads} processes={processes} topics={}",
        sig9(ll),
        args.iterations,
        args.topics
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, train)
}
