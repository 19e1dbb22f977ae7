//! Time per LDA Gibbs sweep: a hand-written serial sweep (plain slices, the same
//! arithmetic, the same random-number keys) against strads at 1 and 2 threads, interleaved
//! sweep by sweep in one run so the ratios share the machine's noise. strads runs the loop
//! of `examples/lda/model.rs`: `tokens.iter_mut()`, document-topic counts local, word-topic
//! counts rotated in 2D, topic totals in a write-back buffer. Its first call plans and
//! buckets the entries; that call is reported apart from the median sweep. Prints one
//! table; record it in BENCHMARKS.md.
//!
//! Data: the AP corpus (`../shared/data/lda-ap`), or a generated corpus of its shape when
//! the directory is absent.
//!
//! ```text
//! cargo bench --bench lda
//! cargo bench --bench lda -- --topics 100 --rounds 5
//! cargo bench --bench lda -- --data path/to/corpus.dat --threads 1,2,4
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use strads::corpus::{self, Corpus};
use strads::prelude::*;
use strads::testing::median;

/// The example's loops, compiled here as they are there.
// The example's start (`draw_topics`) is not timed here.
#[allow(dead_code)]
#[path = "../examples/lda/model.rs"]
mod model;
use model::{gibbs, ln_gamma};

/// The sampler's state as a user would keep it without strads: flat vectors.
#[derive(Clone, PartialEq)]
struct Plain {
    keys: Vec<[u32; 2]>,
    zs: Vec<Vec<u16>>,
    ndk: Vec<i32>,
    nwk: Vec<i32>,
    nk: Vec<i32>,
}

/// What a user would write without strads: the same arithmetic and random-number keys, the
/// entries in the order `order` gives, one scratch vector for the whole sweep.
fn serial_sweep(s: &mut Plain, order: &[u32], topics: usize, beta: f64, iteration: u64) {
    let alpha = alpha(topics);
    let vbeta = (s.nwk.len() / topics) as f64 * beta;
    let mut cumulative = vec![0.0f64; topics];
    for &e in order {
        let [d, w] = s.keys[e as usize].map(|i| i as usize);
        let mut rng = IterRng::new(SEED, &[iteration, d as u64, w as u64]);
        let nd = &mut s.ndk[d * topics..(d + 1) * topics];
        let nw = &mut s.nwk[w * topics..(w + 1) * topics];
        let nk = &mut s.nk[..];
        for z in s.zs[e as usize].iter_mut() {
            let old = *z as usize;
            nd[old] -= 1;
            nw[old] -= 1;
            nk[old] -= 1;
            let mut total = 0.0f64;
            for k in 0..topics {
                total += (f64::from(nd[k]) + alpha) * (f64::from(nw[k]) + beta)
                    / (f64::from(nk[k]) + vbeta);
                cumulative[k] = total;
            }
            let u = rng.next_f64() * total;
            let new = cumulative.partition_point(|&c| c <= u).min(topics - 1);
            nd[new] += 1;
            nw[new] += 1;
            nk[new] += 1;
            *z = new as u16;
        }
    }
}

/// strads' state: the arrays the annotated loop takes.
struct Arrays {
    tokens: SparseArray<Vec<u16>, 2>,
    ndk: DistArray<i32, 2>,
    nwk: DistArray<i32, 2>,
    nk: DistArray<i32, 1>,
}

impl Arrays {
    fn from_plain(p: &Plain, docs: usize, words: usize, topics: usize) -> Arrays {
        let entries = p
            .keys
            .iter()
            .zip(&p.zs)
            .map(|(k, zs)| (k.map(|i| i as usize), zs.clone()))
            .collect();
        Arrays {
            tokens: SparseArray::from_entries([docs, words], entries).unwrap(),
            ndk: DistArray::from_vec([docs, topics], p.ndk.clone()).unwrap(),
            nwk: DistArray::from_vec([words, topics], p.nwk.clone()).unwrap(),
            nk: DistArray::from_vec([topics], p.nk.clone()).unwrap(),
        }
    }

    fn sweep(&mut self, threads: usize, beta: f64, iteration: u64) {
        let topics = self.nk.len();
        strads::with_threads(threads, || {
            gibbs(
                &mut self.tokens,
                &mut self.ndk,
                &mut self.nwk,
                &mut self.nk,
                alpha(topics),
                beta,
                SEED,
                iteration,
            )
        });
    }

    fn to_plain(&self) -> Plain {
        Plain {
            keys: self
                .tokens
                .iter()
                .map(|(k, _)| k.map(|i| i as u32))
                .collect(),
            zs: self.tokens.values().to_vec(),
            ndk: self.ndk.as_slice().to_vec(),
            nwk: self.nwk.as_slice().to_vec(),
            nk: self.nk.as_slice().to_vec(),
        }
    }
}

const SEED: u64 = 1;

/// The example's default document-topic prior, 50 / K.
fn alpha(topics: usize) -> f64 {
    50.0 / topics as f64
}

/// Random initial topics keyed by entry (as in the example) and their counts.
fn initialize(c: &Corpus, topics: usize) -> Plain {
    let mut p = Plain {
        keys: Vec::with_capacity(c.counts.nnz()),
        zs: Vec::with_capacity(c.counts.nnz()),
        ndk: vec![0; c.docs * topics],
        nwk: vec![0; c.words * topics],
        nk: vec![0; topics],
    };
    for ([d, w], &n) in &c.counts {
        let mut rng = IterRng::new(SEED, &[u64::MAX, d as u64, w as u64]);
        let zs: Vec<u16> = (0..n).map(|_| rng.below(topics) as u16).collect();
        for &z in &zs {
            p.ndk[d * topics + z as usize] += 1;
            p.nwk[w * topics + z as usize] += 1;
            p.nk[z as usize] += 1;
        }
        p.keys.push([d as u32, w as u32]);
        p.zs.push(zs);
    }
    p
}

/// The collapsed joint log-likelihood `log p(w, z)` per token.
fn loglik_per_token(p: &Plain, topics: usize, beta: f64) -> f64 {
    let alpha = alpha(topics);
    let (docs, words) = (p.ndk.len() / topics, p.nwk.len() / topics);
    let (k, v) = (topics as f64, words as f64);
    let lg = |c: i32, prior: f64| ln_gamma(f64::from(c) + prior);
    let mut ll = docs as f64 * (ln_gamma(k * alpha) - k * ln_gamma(alpha))
        + k * (ln_gamma(v * beta) - v * ln_gamma(beta));
    for row in p.ndk.chunks(topics) {
        ll += row.iter().map(|&c| lg(c, alpha)).sum::<f64>();
        ll -= lg(row.iter().sum(), k * alpha);
    }
    ll += p.nwk.iter().map(|&c| lg(c, beta)).sum::<f64>();
    ll -= p.nk.iter().map(|&c| lg(c, v * beta)).sum::<f64>();
    let tokens: i64 = p.nk.iter().map(|&c| i64::from(c)).sum();
    ll / tokens.max(1) as f64
}

#[derive(Parser, Debug)]
struct Args {
    /// Corpus in LDA-C format (default: ../shared/data/lda-ap/ap.dat, else a generated
    /// corpus of its shape).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Use the generated AP-shaped corpus even when the AP data is present.
    #[arg(long, conflicts_with = "data")]
    generated: bool,
    /// Topics K.
    #[arg(long, default_value_t = 20)]
    topics: usize,
    /// Dirichlet prior of the topic-word distributions (alpha is 50 / K).
    #[arg(long, default_value_t = 0.01)]
    beta: f64,
    /// Timed sweeps per system (after the first, timed apart).
    #[arg(long, default_value_t = 9)]
    rounds: usize,
    /// Thread counts to run strads at.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> strads::Result<()> {
    let args = Args::parse();
    let ap = Path::new("../shared/data/lda-ap");
    let t = Instant::now();
    let (name, c) = match &args.data {
        Some(p) => ("file", corpus::lda_c(p, None)?),
        None if ap.exists() && !args.generated => ("AP", corpus::lda_c(ap.join("ap.dat"), None)?),
        None => ("AP-like", corpus::generated(2246, 10_473, 20, 194.0, 1)),
    };
    let (topics, beta) = (args.topics, args.beta);
    let tokens = c.tokens();
    println!(
        "{name}: {} docs, {} words, {} entries, {tokens} tokens (loaded in {:.2}s); K = {topics}, \
         alpha = {}, beta = {beta}",
        c.docs,
        c.words,
        c.counts.nnz(),
        t.elapsed().as_secs_f64(),
        alpha(topics)
    );
    let start = initialize(&c, topics);
    let identity: Vec<u32> = (0..c.counts.nnz() as u32).collect();
    let mut iteration = 1u64;

    // First sweeps: strads plans and buckets the entries on its first call per thread count.
    let mut serial = start.clone();
    let t = Instant::now();
    serial_sweep(&mut serial, &identity, topics, beta, iteration);
    let serial_first = t.elapsed().as_secs_f64();
    let mut models: Vec<(usize, Arrays, f64)> = args
        .threads
        .iter()
        .map(|&threads| {
            let mut a = Arrays::from_plain(&start, c.docs, c.words, topics);
            let t = Instant::now();
            a.sweep(threads, beta, iteration);
            (threads, a, t.elapsed().as_secs_f64())
        })
        .collect();

    // The hand-written sweep again, over the entries in the order strads' widest run uses:
    // separates the effect of the order (cache locality) from that of running in parallel.
    let widest = *args.threads.iter().max().unwrap_or(&1);
    let mut probe = Arrays::from_plain(&start, c.docs, c.words, topics);
    let ((), trace) = strads::testing::record(|| probe.sweep(widest, beta, iteration));
    let blocked: Vec<u32> = trace.runs.first().map_or(identity.clone(), |r| {
        r.order().iter().map(|&e| e as u32).collect()
    });
    let plan = trace.runs.first().map_or("serial", |r| r.plan.as_str());
    println!("{name}: strads plan at {widest} threads: {plan}");
    if let Some(run) = trace.runs.first() {
        // Tokens per block, step by step: the load balance of the 2D schedule.
        let tokens_of = |ids: &[usize]| -> usize { ids.iter().map(|&e| start.zs[e].len()).sum() };
        for (t, step) in run.steps.iter().enumerate() {
            let loads: Vec<String> = step.iter().map(|ids| tokens_of(ids).to_string()).collect();
            println!("{name}: step {t}: tokens per worker {}", loads.join(" / "));
        }
    }
    let mut reordered = start.clone();
    serial_sweep(&mut reordered, &blocked, topics, beta, iteration);

    // The machine's ceiling for this kernel: two independent hand-written sweeps at once,
    // one per core (on SMT siblings or with a busy neighbour, less than 2x).
    // Both copies continue from the first hand-written sweep.
    let mut pair = [serial.clone(), serial.clone()];
    let (mut serial_times, mut blocked_times, mut pair_times) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut strads_times = vec![Vec::new(); models.len()];
    for _ in 0..args.rounds {
        iteration += 1;
        let t = Instant::now();
        serial_sweep(&mut serial, &identity, topics, beta, iteration);
        serial_times.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::thread::scope(|scope| {
            for p in pair.iter_mut() {
                let identity = &identity;
                scope.spawn(move || serial_sweep(p, identity, topics, beta, iteration));
            }
        });
        pair_times.push(t.elapsed().as_secs_f64() / 2.0);
        let t = Instant::now();
        serial_sweep(&mut reordered, &blocked, topics, beta, iteration);
        blocked_times.push(t.elapsed().as_secs_f64());
        for (m, (threads, a, _)) in models.iter_mut().enumerate() {
            let t = Instant::now();
            a.sweep(*threads, beta, iteration);
            strads_times[m].push(t.elapsed().as_secs_f64());
        }
    }

    let base = median(&mut serial_times);
    println!(
        "\n{:<8} {:<26} {:>7} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "data", "system", "threads", "first_s", "sweep_s", "speedup", "Mtokens/s", "loglik/tok"
    );
    let row = |system: &str, threads: usize, first: Option<f64>, sweep: f64, p: &Plain| {
        println!(
            "{:<8} {:<26} {:>7} {:>8} {:>8.4} {:>8.3} {:>9.2} {:>9.4}",
            name,
            system,
            threads,
            first.map_or("-".to_string(), |f| format!("{f:.4}")),
            sweep,
            base / sweep,
            tokens as f64 / sweep / 1e6,
            loglik_per_token(p, topics, beta)
        );
    };
    row("hand-written serial", 1, Some(serial_first), base, &serial);
    row(
        &format!("  ..in {widest}-thread order"),
        1,
        None,
        median(&mut blocked_times),
        &reordered,
    );
    row(
        "  ..2 at once, time / 2",
        2,
        None,
        median(&mut pair_times),
        &pair[0],
    );
    let mut same_as_serial = None;
    for (m, (threads, a, first)) in models.iter().enumerate() {
        let p = a.to_plain();
        row(
            "strads",
            *threads,
            Some(*first),
            median(&mut strads_times[m]),
            &p,
        );
        if *threads == 1 {
            same_as_serial = Some(p == serial);
        }
    }
    println!(
        "\nsweep_s: median of {} interleaved sweeps; first_s: the first sweep (strads: planning \
         and bucketing included); speedup = hand-written serial sweep_s / sweep_s; \
         \"2 at once\": two independent hand-written sweeps on two threads, wall time / 2 (the \
         machine's ceiling for this kernel); loglik/tok: collapsed log p(w, z) per token after \
         {} sweeps",
        args.rounds, iteration
    );
    if let Some(same) = same_as_serial {
        println!("strads at 1 thread equals the hand-written sweep bit for bit: {same}");
    }
    Ok(())
}
