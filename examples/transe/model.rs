//! The loops of the `transe` example, annotated, and what they read: also compiled into
//! `tests/it/models/transe.rs` (through `#[path]`), so the test runs exactly the example's loops.

#![allow(dead_code)] // the test uses some of these

use strads::load::KnowledgeGraph;
use strads::prelude::*;

/// Lanes of the distance sums: eight partial sums, added at the end, so that the compiler
/// can keep them in vector registers (a float sum in one accumulator cannot be reordered).
const LANES: usize = 8;

/// `sum_k |x_k|` (`l1`) or `sqrt(sum_k x_k^2)` of `x = a + b - c`, the TransE distance of
/// a triple's head `a`, relation `b` and tail `c`. The order of the additions is fixed, so
/// every caller gets the same bits.
#[inline]
pub(crate) fn distance(a: &[f32], b: &[f32], c: &[f32], l1: bool) -> f32 {
    let n = a.len().min(b.len()).min(c.len());
    let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
    let mut acc = [0.0f32; LANES];
    let split = n - n % LANES;
    for ((ca, cb), cc) in a[..split]
        .chunks_exact(LANES)
        .zip(b[..split].chunks_exact(LANES))
        .zip(c[..split].chunks_exact(LANES))
    {
        for j in 0..LANES {
            let x = ca[j] + cb[j] - cc[j];
            acc[j] += if l1 { x.abs() } else { x * x };
        }
    }
    for k in split..n {
        let x = a[k] + b[k] - c[k];
        acc[k - split] += if l1 { x.abs() } else { x * x };
    }
    let sum = acc.iter().sum::<f32>();
    if l1 { sum } else { sum.sqrt() }
}

/// `|q - e|` (L1 or L2) of a query vector `q` and an entity's row `e`: the distance
/// [`rank_test`] ranks candidates by.
#[inline]
pub(crate) fn query_distance(q: &[f32], e: &[f32], l1: bool) -> f32 {
    let n = q.len().min(e.len());
    let (q, e) = (&q[..n], &e[..n]);
    let mut acc = [0.0f32; LANES];
    let split = n - n % LANES;
    for (cq, ce) in q[..split]
        .chunks_exact(LANES)
        .zip(e[..split].chunks_exact(LANES))
    {
        for j in 0..LANES {
            let x = cq[j] - ce[j];
            acc[j] += if l1 { x.abs() } else { x * x };
        }
    }
    for k in split..n {
        let x = q[k] - e[k];
        acc[k - split] += if l1 { x.abs() } else { x * x };
    }
    let sum = acc.iter().sum::<f32>();
    if l1 { sum } else { sum.sqrt() }
}

/// The derivative of the distance `d` of a triple by its coordinate `x` (`x = h + r - t`
/// there): `sign(x)` for L1, `x / d` for L2.
#[inline]
fn slope(x: f32, d: f32, l1: bool) -> f32 {
    if l1 {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    } else if d > 0.0 {
        x / d
    } else {
        0.0
    }
}

/// `g = step * d(distance)/dx` for the triple `x = a + b - c` at distance `d`.
#[inline]
fn steps(g: &mut [f32], a: &[f32], b: &[f32], c: &[f32], d: f32, step: f32, l1: bool) {
    for (((g, &a), &b), &c) in g.iter_mut().zip(a).zip(b).zip(c) {
        *g = step * slope(a + b - c, d, l1);
    }
}

/// [`steps`], appended to `g`.
#[inline]
fn push_steps(g: &mut Vec<f32>, a: &[f32], b: &[f32], c: &[f32], d: f32, step: f32, l1: bool) {
    g.extend(
        a.iter()
            .zip(b)
            .zip(c)
            .map(|((&a, &b), &c)| step * slope(a + b - c, d, l1)),
    );
}

/// `row += sign * g`.
#[inline]
fn add(row: &mut [f32], g: &[f32], sign: f32) {
    for (x, &g) in row.iter_mut().zip(g) {
        *x += sign * g;
    }
}

/// `ln(1 + e^x)` without overflow.
#[inline]
fn softplus(x: f32) -> f32 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `1 / (1 + e^-x)`.
#[inline]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The corrupted triple of a training triple `(h, r, t)`: the head (with probability
/// `head_prob`: Wang et al.'s "bern" rule, or 1/2) or else the tail replaced by an entity
/// drawn uniformly from `entities`.
#[inline]
fn corrupt(
    rng: &mut IterRng,
    (h, t): (usize, usize),
    head_prob: f32,
    entities: usize,
) -> (usize, usize) {
    let corrupt_head = rng.next_f32() < head_prob;
    let e = rng.below(entities);
    if corrupt_head { (e, t) } else { (h, e) }
}

/// One epoch of TransE as Bordes et al. (2013) train it: SGD on the margin ranking loss
/// `max(0, margin + d(h + r, t) - d(h' + r, t'))`, with `negatives` corrupted triples
/// `(h', r, t')` per training triple, one step per pair in turn. Step `i` takes the
/// training triple `order[i]` (a shuffled order) and draws its corrupted triples from
/// `IterRng` keyed by `(epoch, i)`, so they are the same in every schedule. Returns the
/// summed loss (a reduction).
///
/// Entities and relations are shared by many triples, so no schedule of conflict-free
/// blocks exists: in the data-parallel mode each worker updates its replica of `ent` and
/// `rel` over batches of its triples, and the replicas' differences are averaged (in worker
/// order) after every batch. With one worker this is the serial loop, bit for bit. Built
/// with `RUSTFLAGS="--cfg strads_ssp"`, both training loops are `sync = "ssp(1)"`
/// (BENCHMARKS.md compares).
#[cfg_attr(not(strads_ssp), strads::parallel_for(sync = "bsp", batch = 16384))]
#[cfg_attr(strads_ssp, strads::parallel_for(sync = "ssp(1)", batch = 16384))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_margin(
    triples: &DistArray<u32, 2>,
    order: &DistArray<u32, 1>,
    head_prob: &DistArray<f32, 1>,
    ent: &mut DistArray<f32, 2>,
    rel: &mut DistArray<f32, 2>,
    negatives: usize,
    margin: f32,
    lr: f32,
    l1: bool,
    seed: u64,
    epoch: u64,
) -> f64 {
    let entities = ent.shape()[0];
    let dim = ent.shape()[1];
    let mut loss: f64 = 0.0;
    for i in 0..order.len() {
        let j = order[i] as usize;
        let (h, r, t) = (
            triples[[j, 0]] as usize,
            triples[[j, 1]] as usize,
            triples[[j, 2]] as usize,
        );
        let mut rng = IterRng::new(seed, &[epoch, i as u64]);
        // The steps of the true and the corrupted triple, both computed before either is
        // applied: they add up where the two triples share a row.
        let mut gp = vec![0.0f32; dim];
        let mut gn = vec![0.0f32; dim];
        for _ in 0..negatives {
            let (h2, t2) = corrupt(&mut rng, (h, t), head_prob[r], entities);
            let dp = distance(ent.row(h), rel.row(r), ent.row(t), l1);
            let dn = distance(ent.row(h2), rel.row(r), ent.row(t2), l1);
            let violation = margin + dp - dn;
            if violation <= 0.0 {
                continue;
            }
            loss += f64::from(violation);
            steps(&mut gp, ent.row(h), rel.row(r), ent.row(t), dp, lr, l1);
            steps(&mut gn, ent.row(h2), rel.row(r), ent.row(t2), dn, lr, l1);
            add(ent.row_mut(h), &gp, -1.0);
            add(ent.row_mut(t), &gp, 1.0);
            add(rel.row_mut(r), &gp, -1.0);
            add(rel.row_mut(r), &gn, 1.0);
            add(ent.row_mut(h2), &gn, 1.0);
            add(ent.row_mut(t2), &gn, -1.0);
        }
    }
    loss
}

/// One epoch of TransE trained as Sun et al. (ICLR 2019, "RotatE", sect. 3.3) train it:
/// SGD on the logistic loss with self-adversarial negative sampling,
///
/// `L = -ln σ(γ - d(h + r, t)) - Σ_n p_n ln σ(d(h'_n + r, t'_n) - γ)`, halved,
///
/// whose `negatives` corrupted triples are weighted by `p = softmax(-temperature * d')`
/// (the harder a corrupted triple, the more it weighs; the weights are not
/// differentiated). One step per training triple, every part of it computed from the same
/// point. The order, the draws and the data-parallel mode are as in [`train_margin`].
/// Returns the summed loss (a reduction).
#[cfg_attr(not(strads_ssp), strads::parallel_for(sync = "bsp", batch = 16384))]
#[cfg_attr(strads_ssp, strads::parallel_for(sync = "ssp(1)", batch = 16384))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_adversarial(
    triples: &DistArray<u32, 2>,
    order: &DistArray<u32, 1>,
    head_prob: &DistArray<f32, 1>,
    ent: &mut DistArray<f32, 2>,
    rel: &mut DistArray<f32, 2>,
    negatives: usize,
    gamma: f32,
    lr: f32,
    temperature: f32,
    l1: bool,
    seed: u64,
    epoch: u64,
) -> f64 {
    let entities = ent.shape()[0];
    let dim = ent.shape()[1];
    let mut loss: f64 = 0.0;
    for i in 0..order.len() {
        let j = order[i] as usize;
        let (h, r, t) = (
            triples[[j, 0]] as usize,
            triples[[j, 1]] as usize,
            triples[[j, 2]] as usize,
        );
        let mut rng = IterRng::new(seed, &[epoch, i as u64]);
        // The corrupted triples: head, tail, distance, weight.
        let mut corrupted: Vec<(usize, usize, f32, f32)> = Vec::with_capacity(negatives);
        let mut nearest = f32::INFINITY;
        for _ in 0..negatives {
            let (h2, t2) = corrupt(&mut rng, (h, t), head_prob[r], entities);
            let d = distance(ent.row(h2), rel.row(r), ent.row(t2), l1);
            nearest = nearest.min(d);
            corrupted.push((h2, t2, d, 0.0));
        }
        // Softmax weights, from the nearest (largest) score down, so none overflows.
        let mut total = 0.0f32;
        for c in corrupted.iter_mut() {
            c.3 = (-temperature * (c.2 - nearest)).exp();
            total += c.3;
        }
        let dp = distance(ent.row(h), rel.row(r), ent.row(t), l1);
        let mut l = softplus(dp - gamma);
        // The steps of the true triple (first) and of each corrupted one.
        let mut g: Vec<f32> = Vec::with_capacity((negatives + 1) * dim);
        let (a, b, c) = (ent.row(h), rel.row(r), ent.row(t));
        push_steps(&mut g, a, b, c, dp, lr * 0.5 * sigmoid(dp - gamma), l1);
        for &(h2, t2, d, weight) in &corrupted {
            let p = weight / total;
            l += p * softplus(gamma - d);
            let (a, b, c) = (ent.row(h2), rel.row(r), ent.row(t2));
            push_steps(&mut g, a, b, c, d, lr * 0.5 * p * sigmoid(gamma - d), l1);
        }
        loss += f64::from(0.5 * l);
        add(ent.row_mut(h), &g[..dim], -1.0);
        add(ent.row_mut(t), &g[..dim], 1.0);
        add(rel.row_mut(r), &g[..dim], -1.0);
        for (n, &(h2, t2, _, _)) in corrupted.iter().enumerate() {
            let gn = &g[(n + 1) * dim..(n + 2) * dim];
            add(ent.row_mut(h2), gn, 1.0);
            add(ent.row_mut(t2), gn, -1.0);
            add(rel.row_mut(r), gn, 1.0);
        }
    }
    loss
}

/// Scales every entity row whose L2 norm exceeds 1 back to norm 1 (the constraint of
/// Bordes et al.'s algorithm, applied once per epoch): a plain 1D loop over rows.
#[strads::parallel_for]
pub(crate) fn normalize(ent: &mut DistArray<f32, 2>) {
    for e in 0..ent.shape()[0] {
        let row = ent.row_mut(e);
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 1.0 {
            for x in row.iter_mut() {
                *x /= norm;
            }
        }
    }
}

/// Filtered link prediction on the triples `test` (Bordes et al.'s protocol): for each
/// triple, the tail is replaced by every entity (and, separately, the head), candidates
/// are ranked by the TransE distance, and the true entity's rank counts only the
/// candidates that do not form a known triple (`known`: the sorted keys of
/// [`filter_keys`]). Ties count half (the mean rank among equals, rounded down). Returns
/// the sum of reciprocal ranks and the ranks at most 1, 3 and 10, over both sides of every
/// triple: reductions, since the loop only reads the model.
#[strads::parallel_for]
pub(crate) fn rank_test(
    test: &DistArray<u32, 2>,
    known: &DistArray<u64, 1>,
    ent: &DistArray<f32, 2>,
    rel: &DistArray<f32, 2>,
    l1: bool,
) -> (f64, u64, u64, u64) {
    let entities = ent.shape()[0];
    let relations = rel.shape()[0];
    let dim = ent.shape()[1];
    let mut reciprocal: f64 = 0.0;
    let mut hits1: u64 = 0;
    let mut hits3: u64 = 0;
    let mut hits10: u64 = 0;
    for i in 0..test.shape()[0] {
        let (h, r, t) = (
            test[[i, 0]] as usize,
            test[[i, 1]] as usize,
            test[[i, 2]] as usize,
        );
        for side in 0..2 {
            // Tails: |h + r - e|, the query h + r. Heads: |e + r - t| = |(t - r) - e|.
            let (anchor, target) = if side == 0 { (h, t) } else { (t, h) };
            let mut q = vec![0.0f32; dim];
            for k in 0..dim {
                q[k] = if side == 0 {
                    ent[[h, k]] + rel[[r, k]]
                } else {
                    ent[[t, k]] - rel[[r, k]]
                };
            }
            let d_true = query_distance(&q, ent.row(target), l1);
            // The known answers of this query: keys base + e, sorted.
            let base = ((side * entities + anchor) * relations + r) as u64 * entities as u64;
            let (mut lo, mut hi) = (0, known.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if known[mid] < base {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let mut next = lo;
            let (mut better, mut ties) = (0u64, 0u64);
            for e in 0..entities {
                let key = base + e as u64;
                if next < known.len() && known[next] == key {
                    // A known answer (the true one included): filtered out.
                    next += 1;
                    continue;
                }
                let d = query_distance(&q, ent.row(e), l1);
                if d < d_true {
                    better += 1;
                } else if d == d_true {
                    ties += 1;
                }
            }
            let rank = 1 + better + ties / 2;
            reciprocal += 1.0 / rank as f64;
            if rank <= 1 {
                hits1 += 1;
            }
            if rank <= 3 {
                hits3 += 1;
            }
            if rank <= 10 {
                hits10 += 1;
            }
        }
    }
    (reciprocal, hits1, hits3, hits10)
}

/// The filter of [`rank_test`]: for every triple `(h, r, t)` of the graph (train, valid and
/// test), the key of its tail query `((0 * E + h) * R + r) * E + t` and of its head query
/// `((1 * E + t) * R + r) * E + h`, sorted and without repeats. `None` when the keys do not
/// fit a `u64` (`2 E^2 R` of them).
pub(crate) fn filter_keys(kg: &KnowledgeGraph) -> Option<DistArray<u64, 1>> {
    let (e, r) = (kg.entities as u128, kg.relations as u128);
    if 2 * e * e * r > u128::from(u64::MAX) {
        return None;
    }
    let (e, r) = (kg.entities as u64, kg.relations as u64);
    let mut keys: Vec<u64> = Vec::with_capacity(2 * kg.triples());
    for &[h, rel, t] in kg.train.iter().chain(&kg.valid).chain(&kg.test) {
        let (h, rel, t) = (u64::from(h), u64::from(rel), u64::from(t));
        keys.push((h * r + rel) * e + t);
        keys.push(((e + t) * r + rel) * e + h);
    }
    keys.sort_unstable();
    keys.dedup();
    let n = keys.len();
    Some(DistArray::from_vec([n], keys).expect("a 1-D shape fits its vector"))
}

/// Wang et al.'s (2014) "bern" probability of corrupting the head, per relation:
/// `tph / (tph + hpt)`, with `tph` the mean number of tails per head and `hpt` of heads
/// per tail among the training triples. A one-to-many relation then mostly loses its head,
/// so that its negatives are rarely true triples. Relations without triples get 1/2.
pub(crate) fn bern(kg: &KnowledgeGraph) -> Vec<f32> {
    let mut pairs: Vec<(u32, u32, u32)> = kg.train.iter().map(|&[h, r, t]| (r, h, t)).collect();
    // Per relation: triples, distinct heads, distinct tails.
    let mut stats = vec![(0u64, 0u64, 0u64); kg.relations];
    pairs.sort_unstable();
    pairs.dedup();
    for (k, &(r, h, _)) in pairs.iter().enumerate() {
        let s = &mut stats[r as usize];
        s.0 += 1;
        if k == 0 || pairs[k - 1].0 != r || pairs[k - 1].1 != h {
            s.1 += 1;
        }
    }
    pairs.iter_mut().for_each(|p| *p = (p.0, p.2, p.1));
    pairs.sort_unstable();
    for (k, &(r, t, _)) in pairs.iter().enumerate() {
        if k == 0 || pairs[k - 1].0 != r || pairs[k - 1].1 != t {
            stats[r as usize].2 += 1;
        }
    }
    stats
        .iter()
        .map(|&(n, heads, tails)| {
            if n == 0 {
                return 0.5;
            }
            let tph = n as f64 / heads as f64;
            let hpt = n as f64 / tails as f64;
            (tph / (tph + hpt)) as f32
        })
        .collect()
}

/// `triples` as an `[n, 3]` array of `[head, relation, tail]` rows, for the loops.
pub(crate) fn triple_array(triples: &[[u32; 3]]) -> DistArray<u32, 2> {
    let flat: Vec<u32> = triples.iter().flatten().copied().collect();
    DistArray::from_vec([triples.len(), 3], flat).expect("three ids per triple")
}
