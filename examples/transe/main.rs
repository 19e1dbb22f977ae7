//! TransE (Bordes et al., NIPS 2013) on a knowledge graph: entities are points and
//! relations translations, `h + r ≈ t` for a true triple `(h, r, t)`. Trained by SGD
//! against corrupted triples (Sun et al.'s self-adversarial logistic loss by default, or
//! Bordes et al.'s margin ranking loss with `--loss margin`), then evaluated by filtered
//! link prediction: MRR and Hits@1/3/10 over the heads and tails of the test triples.
//!
//! Every triple updates rows of the entity and relation tables that many other triples
//! share, so no schedule of conflict-free blocks exists: the training loop runs in strads'
//! data-parallel mode (`sync = "bsp"`), each worker training its replica of the tables on
//! its share of every batch, the replicas' differences averaged after each batch. The
//! evaluation is a plain 1D loop over the test triples with reductions.
//!
//! ```text
//! cargo run --release --example transe                  # generated FB15k-237-shaped graph
//! cargo run --release --example transe -- --data ../shared/data/kg-fb15k237   # OpenKE ids
//! cargo run --release --example transe -- --data ../shared/data/kg-wn18rr     # text triples
//! STRADS_SERIAL=1 cargo run --release --example transe  # the original serial loops
//! STRADS_EXPLAIN=1 cargo run --release --example transe # shows the plans
//! ```
//!
//! Prints the data and settings, each epoch's mean loss per training triple, then one line
//! `mrr=<f> hits1=<f> hits3=<f> hits10=<f> loss=<f> epochs=<n> seconds=<f> threads=<n> processes=<n>`
//! (`seconds`: training time, evaluation excluded; `loss`: the last epoch's).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use strads::generate::KgConfig;
use strads::load::KnowledgeGraph;
use strads::prelude::*;

mod model;
use model::{
    bern, filter_keys, normalize, rank_test, train_adversarial, train_margin, triple_array,
};

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

/// The largest embedding dimension `--dim` accepts.
const MAX_EMBEDDING: usize = 4096;

/// An embedding dimension: 1 to [`MAX_EMBEDDING`].
fn embedding_dim(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_EMBEDDING).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from 1 to {MAX_EMBEDDING}")),
    }
}

#[derive(Parser, Debug)]
#[command(about = "TransE knowledge-graph embeddings with strads")]
struct Args {
    /// Folder of the knowledge graph: OpenKE ids (`train2id.txt`, `valid2id.txt`,
    /// `test2id.txt`, `entity2id.txt`, `relation2id.txt`) or text triples (`train.txt`,
    /// `valid.txt`, `test.txt`). Without it, an FB15k-237-shaped graph is generated.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Generated graph: entities.
    #[arg(long, default_value_t = 14_541, value_parser = cli::dim)]
    entities: usize,
    /// Generated graph: relations.
    #[arg(long, default_value_t = 237, value_parser = cli::dim)]
    relations: usize,
    /// Generated graph: training triples.
    #[arg(long, default_value_t = 272_115, value_parser = cli::at_least_one)]
    triples: usize,
    /// Generated graph: validation triples.
    #[arg(long, default_value_t = 17_535, value_parser = cli::whole)]
    valid_triples: usize,
    /// Generated graph: test triples.
    #[arg(long, default_value_t = 20_466, value_parser = cli::at_least_one)]
    test_triples: usize,
    /// Passes over the training triples [default: 40 on a --data graph, 10 on a generated
    /// one].
    #[arg(long, value_parser = cli::at_least_one)]
    epochs: Option<usize>,
    /// Training loss: `adversarial` (Sun et al. 2019: logistic, with self-adversarial
    /// weights of the corrupted triples) or `margin` (Bordes et al. 2013: margin ranking,
    /// one step per pair).
    #[arg(long, value_enum, default_value_t = Loss::Adversarial)]
    loss: Loss,
    /// Embedding dimension.
    #[arg(long, default_value_t = 200, value_parser = embedding_dim)]
    dim: usize,
    /// Distance: `l1` (sum of absolute differences) or `l2`.
    #[arg(long, value_enum, default_value_t = Norm::L1)]
    norm: Norm,
    /// The margin γ: of the logistic loss (`adversarial`) or of the ranking loss
    /// (`margin`) [default: 10 and 5].
    #[arg(long, value_parser = cli::positive_f32)]
    margin: Option<f32>,
    /// Learning rate of the first epoch; it falls linearly to `lr * lr_end` at the last
    /// [default: 0.05 with `adversarial`, 0.01 with `margin`].
    #[arg(long, value_parser = cli::positive_f32)]
    lr: Option<f32>,
    /// Learning rate of the last epoch, as a fraction of --lr.
    #[arg(long, default_value_t = 0.1, value_parser = cli::non_negative_f32)]
    lr_end: f32,
    /// Corrupted triples per training triple [default: 32 with `adversarial`, 8 with
    /// `margin`].
    #[arg(long, value_parser = cli::at_least_one)]
    negatives: Option<usize>,
    /// `adversarial`: temperature of the corrupted triples' weights (a softmax of their
    /// scores; 0 weighs them all alike).
    #[arg(long, default_value_t = 1.0, value_parser = cli::non_negative_f32)]
    temperature: f32,
    /// Which side of a triple to corrupt: `bern` (by the relation's tails per head and
    /// heads per tail, Wang et al. 2014) or `unif` (either, with probability 1/2).
    #[arg(long, value_enum, default_value_t = Corrupt::Bern)]
    corrupt: Corrupt,
    /// Evaluate on the `test` set or on the `valid` set (for tuning).
    #[arg(long, value_enum, default_value_t = EvalSet::Test)]
    eval: EvalSet,
    /// Evaluate on the first N triples of the set only (0: all), for quick checks.
    #[arg(long, default_value_t = 0, value_parser = cli::whole)]
    eval_limit: usize,
    /// Seed of the generated graph, the initial embeddings, the order and the negatives.
    #[arg(long, default_value_t = 1, value_parser = cli::seed)]
    seed: u64,
    /// Worker threads (default: STRADS_THREADS, else every core).
    #[arg(long, value_parser = cli::threads)]
    threads: Option<usize>,
    /// Write the embeddings to this file as OpenKE's `save_parameters` does (JSON with
    /// `ent_embeddings.weight` and `rel_embeddings.weight`; its `load_parameters` reads it).
    #[arg(long)]
    save: Option<PathBuf>,
}

/// `--loss`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Loss {
    Adversarial,
    Margin,
}

/// `--norm`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Norm {
    L1,
    L2,
}

/// `--corrupt`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Corrupt {
    Bern,
    Unif,
}

/// `--eval`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum EvalSet {
    Test,
    Valid,
}

fn load(args: &Args) -> Result<KnowledgeGraph> {
    Ok(match &args.data {
        Some(dir) => {
            let bar = progress::Bar::spinner(&format!("loading {}", dir.display()));
            let kg = strads::load::knowledge_graph(dir)?;
            bar.finish();
            kg
        }
        None => strads::generate::try_kg_like(&KgConfig {
            entities: args.entities,
            relations: args.relations,
            train: args.triples,
            valid: args.valid_triples,
            test: args.test_triples,
            seed: args.seed,
            ..KgConfig::default()
        })?,
    })
}

/// Uniform in `[-6 / sqrt(dim), 6 / sqrt(dim)]`, as Bordes et al. initialise.
fn uniform_rows(rows: usize, dim: usize, rng: &mut Xoshiro256PlusPlus) -> DistArray<f32, 2> {
    let bound = 6.0 / (dim as f32).sqrt();
    DistArray::from_fn([rows, dim], |_| rng.random_range(-bound..=bound))
}

/// Mean reciprocal rank and Hits@1/3/10 of the model on `set`.
fn evaluate(
    set: &[[u32; 3]],
    known: &DistArray<u64, 1>,
    ent: &DistArray<f32, 2>,
    rel: &DistArray<f32, 2>,
    l1: bool,
) -> [f64; 4] {
    // In pieces, so that a bar shows how far the ranking is (it takes half a minute on
    // FB15k-237's test set): the sums add up piece by piece, in order.
    let mut bar = progress::Bar::new(set.len() as u64, "evaluating: triples");
    let piece = (set.len() / 50).max(1000);
    let (mut rr, mut h1, mut h3, mut h10) = (0.0, 0, 0, 0);
    for part in set.chunks(piece) {
        let (r, a, b, c) = rank_test(&triple_array(part), known, ent, rel, l1);
        rr += r;
        (h1, h3, h10) = (h1 + a, h3 + b, h10 + c);
        bar.inc(part.len() as u64);
    }
    bar.finish();
    let ranks = (2 * set.len()).max(1) as f64;
    [
        rr / ranks,
        h1 as f64 / ranks,
        h3 as f64 / ranks,
        h10 as f64 / ranks,
    ]
}

/// The training settings, with the defaults of the chosen loss filled in.
struct Settings {
    epochs: usize,
    margin: f32,
    lr: f32,
    negatives: usize,
}

impl Settings {
    fn new(args: &Args) -> Settings {
        let adversarial = args.loss == Loss::Adversarial;
        Settings {
            epochs: args
                .epochs
                .unwrap_or(if args.data.is_some() { 40 } else { 10 }),
            margin: args.margin.unwrap_or(if adversarial { 10.0 } else { 5.0 }),
            lr: args.lr.unwrap_or(if adversarial { 0.05 } else { 0.01 }),
            negatives: args.negatives.unwrap_or(if adversarial { 32 } else { 8 }),
        }
    }
}

fn train(args: &Args) -> Result<()> {
    let kg = load(args)?;
    let Settings {
        epochs,
        margin,
        lr,
        negatives,
    } = Settings::new(args);
    let rows = kg.entities.checked_add(kg.relations);
    cli::check_memory(
        &format!(
            "{} entity and {} relation embeddings of dimension {}",
            kg.entities, kg.relations, args.dim
        ),
        rows.and_then(|n| n.checked_mul(args.dim)),
        4 * 4,
    )?;
    let known = filter_keys(&kg).ok_or_else(|| {
        format!(
            "{} entities and {} relations are too many for the evaluation's filter (its \
             2 * entities^2 * relations keys must fit 64 bits)",
            kg.entities, kg.relations
        )
    })?;
    let source = match &args.data {
        Some(p) => p.display().to_string(),
        None => "generated".to_string(),
    };
    let threads = cli::threads_used();
    let l1 = args.norm == Norm::L1;
    let temperature = match args.loss {
        Loss::Adversarial => format!(" temperature={}", args.temperature),
        Loss::Margin => String::new(),
    };
    println!(
        "data={source} entities={} relations={} train={} valid={} test={} loss={:?} dim={} \
         norm={:?} margin={margin} lr={lr} lr_end={} negatives={negatives}{temperature} \
         corrupt={:?} epochs={epochs} threads={threads}",
        kg.entities,
        kg.relations,
        kg.train.len(),
        kg.valid.len(),
        kg.test.len(),
        args.loss,
        args.dim,
        args.norm,
        args.lr_end,
        args.corrupt,
    );
    let set = match args.eval {
        EvalSet::Test => &kg.test,
        EvalSet::Valid => &kg.valid,
    };
    let set = match args.eval_limit {
        0 => &set[..],
        n => &set[..n.min(set.len())],
    };
    if set.is_empty() {
        return Err("the validation set is empty: evaluate on the test set (--eval test)".into());
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(args.seed);
    let mut ent = uniform_rows(kg.entities, args.dim, &mut rng);
    let mut rel = uniform_rows(kg.relations, args.dim, &mut rng);
    // Relations start at norm 1 (Bordes et al.), and are left free afterwards.
    for r in 0..kg.relations {
        let row = rel.row_mut(r);
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        row.iter_mut()
            .for_each(|x| *x /= norm.max(f32::MIN_POSITIVE));
    }
    let triples = triple_array(&kg.train);
    let head_prob = match args.corrupt {
        Corrupt::Bern => bern(&kg),
        Corrupt::Unif => vec![0.5; kg.relations],
    };
    let head_prob = DistArray::from_vec([kg.relations], head_prob)?;
    let mut order = DistArray::from_vec(
        [kg.train.len()],
        (0..kg.train.len() as u32).collect::<Vec<u32>>(),
    )?;
    let (mut seconds, mut loss) = (0.0, f64::NAN);
    let mut bar = progress::Bar::new(epochs as u64, "training: epochs");
    for epoch in 0..epochs {
        let progress = epoch as f32 / (epochs - 1).max(1) as f32;
        let rate = lr * (1.0 - progress * (1.0 - args.lr_end));
        let t = Instant::now();
        order.as_mut_slice().shuffle(&mut rng);
        normalize(&mut ent);
        let (seed, e) = (args.seed, epoch as u64);
        let sum = match args.loss {
            Loss::Adversarial => train_adversarial(
                &triples,
                &order,
                &head_prob,
                &mut ent,
                &mut rel,
                negatives,
                margin,
                rate,
                args.temperature,
                l1,
                seed,
                e,
            ),
            Loss::Margin => train_margin(
                &triples, &order, &head_prob, &mut ent, &mut rel, negatives, margin, rate, l1,
                seed, e,
            ),
        };
        let dt = t.elapsed().as_secs_f64();
        seconds += dt;
        loss = sum / kg.train.len() as f64;
        let embedding = ent.as_slice().iter().chain(rel.as_slice());
        let broken = match embedding.copied().find(|x| !x.is_finite()) {
            _ if !loss.is_finite() => Some(("the training loss", loss)),
            Some(x) => Some(("an embedding", f64::from(x))),
            None => None,
        };
        if let Some((what, value)) = broken {
            let advice = format!("lower --lr (it is {lr:?})");
            return Err(cli::diverged(epoch + 1, what, value, &advice).into());
        }
        bar.println(format!(
            "epoch {:>3}  lr={}  loss={}  epoch_seconds={dt:.4}  seconds={seconds:.4}",
            epoch + 1,
            sig9(f64::from(rate)),
            sig9(loss)
        ));
        bar.inc(1);
    }
    bar.finish();
    let t = Instant::now();
    let [mrr, hits1, hits3, hits10] = evaluate(set, &known, &ent, &rel, l1);
    println!(
        "evaluated {} {} triples (filtered, heads and tails) eval_seconds={:.2}",
        set.len(),
        match args.eval {
            EvalSet::Test => "test",
            EvalSet::Valid => "validation",
        },
        t.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.save {
        save::openke_json(path, &ent, &rel)?;
    }
    let processes = cli::processes();
    println!(
        "mrr={mrr:.6} hits1={hits1:.6} hits3={hits3:.6} hits10={hits10:.6} loss={} \
         epochs={epochs} seconds={seconds:.4} threads={threads} processes={processes}",
        sig9(loss)
    );
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    cli::main(|args: &Args| args.threads, train)
}
