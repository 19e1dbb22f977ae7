//! The loops of the `word2vec` example, annotated: also compiled into `tests/word2vec.rs`
//! (through `#[path]`), so the test runs exactly the example's loops.

use strads::prelude::*;

/// Entries of the sigmoid table over `[-MAX_EXP, MAX_EXP]` (word2vec.c's `EXP_TABLE_SIZE`).
pub(crate) const TABLE: usize = 1000;
/// Pairs scored beyond ±`MAX_EXP` are skipped (word2vec.c's `MAX_EXP`; gensim's rule).
pub(crate) const MAX_EXP: f32 = 6.0;

/// The sigmoid table: row `k` holds, at `x = -MAX_EXP + (k + 0.5) * 2 MAX_EXP / TABLE`,
/// `sigma(x)`, `-ln sigma(x)` (the loss of a true pair) and `-ln(1 - sigma(x))` (of a
/// noise pair).
pub(crate) fn sigmoid_table() -> DistArray<f32, 2> {
    DistArray::from_fn([TABLE, 3], |[k, c]| {
        let x = -f64::from(MAX_EXP) + (k as f64 + 0.5) * 2.0 * f64::from(MAX_EXP) / TABLE as f64;
        let s = 1.0 / (1.0 + (-x).exp());
        (match c {
            0 => s,
            1 => -s.ln(),
            _ => -(1.0 - s).ln(),
        }) as f32
    })
}

/// One epoch of skip-gram with negative sampling (Mikolov et al. 2013, word2vec.c's
/// update) over the epoch's `tokens` (the corpus after subsampling): the serial loop,
/// annotated. Each token's context words within a random reach of at most `window` (in
/// the same sentence) predict the token against `negative` noise words; `syn0` (input
/// vectors) and `syn1` (output vectors) are updated at once. Noise words are drawn from the unigram^0.75 law by
/// Walker's alias method: word `k` uniform, kept when a uniform `u32` is below `keep[k]`,
/// else `alias[k]`. The learning rate falls linearly from `alpha` over the
/// run: `from` and `span` are the epoch's start and length as fractions of it.
///
/// Every word shares the frequent words' vectors, so no two tokens are independent: the
/// data-parallel mode gives each worker a replica of `syn0` and `syn1` and adds every
/// replica's differences (`merge = strads::merge::sum`: each worker's updates count in
/// full, as on one worker) after every batch of tokens per worker. Random draws come from
/// a generator keyed by the token, so they do not depend on the schedule. Returns the
/// summed loss and the number of predictions.
///
/// Built with `RUSTFLAGS="--cfg strads_ssp"`, the loop is `sync = "ssp(1)"` instead: the
/// merges run behind the workers, each starting a batch from the merge of the batches
/// before the last plus its own last batch (BENCHMARKS.md compares the two).
#[cfg_attr(
    not(strads_ssp),
    strads::parallel_for(sync = "bsp", batch = 16384, merge = strads::merge::sum)
)]
#[cfg_attr(
    strads_ssp,
    strads::parallel_for(sync = "ssp(1)", batch = 16384, merge = strads::merge::sum)
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn skipgram_epoch(
    tokens: &DistArray<u32, 1>,
    sentence: &DistArray<u32, 1>,
    keep: &DistArray<u32, 1>,
    alias: &DistArray<u32, 1>,
    sigmoid: &DistArray<f32, 2>,
    syn0: &mut DistArray<f32, 2>,
    syn1: &mut DistArray<f32, 2>,
    window: usize,
    negative: usize,
    alpha: f32,
    from: f32,
    span: f32,
    seed: u64,
) -> (f64, u64) {
    let mut loss: f64 = 0.0;
    let mut predictions: u64 = 0;
    for i in 0..tokens.len() {
        let n = tokens.len();
        let mut rng = IterRng::new(seed, &[i as u64]);
        let reach = window - rng.below(window);
        let (lo, hi) = (i.saturating_sub(reach), (i + reach + 1).min(n));
        let center = tokens[i] as usize;
        let rate = alpha * (1.0 - (from + span * i as f32 / n as f32)).max(1e-4);
        let words = keep.len() as u64;
        let dim = syn0.shape()[1];
        let mut grad = vec![0.0f32; dim];
        let mut l = 0.0f32;
        let mut m = 0u64;
        for j in lo..hi {
            if j == i || sentence[j] != sentence[i] {
                continue;
            }
            let context = tokens[j] as usize;
            grad.fill(0.0);
            for d in 0..negative + 1 {
                let target = if d == 0 {
                    center
                } else {
                    // The noise word: a uniform word from the high bits, its own or its
                    // alias by the low bits.
                    let r = rng.next_u64();
                    let k = (((r >> 32) * words) >> 32) as usize;
                    if (r as u32) < keep[k] {
                        k
                    } else {
                        alias[k] as usize
                    }
                };
                if d > 0 && target == center {
                    continue;
                }
                let f = dot(syn0.row(context), syn1.row(target));
                // A score beyond the table is already saturated: no update (gensim's rule).
                if f <= -MAX_EXP || f >= MAX_EXP {
                    continue;
                }
                let x = (f + MAX_EXP) * (TABLE as f32 / (2.0 * MAX_EXP));
                let k = (x as usize).min(TABLE - 1);
                let label = if d == 0 { 1.0 } else { 0.0 };
                let g = (label - sigmoid[[k, 0]]) * rate;
                l += sigmoid[[k, 1 + d.min(1)]];
                m += 1;
                axpy(g, syn1.row(target), &mut grad);
                axpy(g, syn0.row(context), syn1.row_mut(target));
            }
            axpy(1.0, &grad, syn0.row_mut(context));
        }
        loss += f64::from(l);
        predictions += m;
    }
    (loss, predictions)
}

/// Answers the analogy questions `a : b :: c : ?` (one row `[a, b, c, d]` per question) as
/// gensim's `evaluate_word_analogies` does: the word among the first `restrict` whose
/// unit vector is closest (by cosine) to `b - a + c`, other than `a`, `b` and `c`; counts
/// the questions answered `d`. `unit` holds unit-length word vectors.
#[strads::parallel_for]
pub(crate) fn analogies(
    questions: &DistArray<u32, 2>,
    unit: &DistArray<f32, 2>,
    restrict: usize,
) -> u64 {
    let mut correct: u64 = 0;
    for q in 0..questions.shape()[0] {
        let (a, b, c) = (
            questions[[q, 0]] as usize,
            questions[[q, 1]] as usize,
            questions[[q, 2]] as usize,
        );
        let dim = unit.shape()[1];
        let mut target = vec![0.0f32; dim];
        axpy(1.0, unit.row(b), &mut target);
        axpy(-1.0, unit.row(a), &mut target);
        axpy(1.0, unit.row(c), &mut target);
        let (mut best, mut best_score) = (usize::MAX, f32::NEG_INFINITY);
        for v in 0..restrict {
            let s = dot(unit.row(v), &target);
            if s > best_score && v != a && v != b && v != c {
                (best, best_score) = (v, s);
            }
        }
        if best == questions[[q, 3]] as usize {
            correct += 1;
        }
    }
    correct
}
