//! Loops with write-back buffers, `iter_mut()` loops and loops planned by reconnaissance
//! cross processes (issue 12, "reductions and write-back buffers combined in the same
//! order as on threads", "`iter_mut()` loops", "reconnaissance"). At each application point every rank sends its workers' copies
//! of each buffer to the others and merges all of them in worker order (arrays of 64 KiB
//! or more: by reduce-scatter and all-gather, each rank merging a segment), so every rank
//! holds the same value and the driver ends with the bits the same worker count gives on
//! threads. An `iter_mut()` loop's array crosses as the indices of each rank's entries (its
//! blocks; each worker's memory line must show no copy of the array's indices); the values of each rank's
//! tasks go to it with the call and stay there for the next call with the same tasks. A reconnaissance plan is recorded
//! by the driver; every rank runs it, the rows a task owns travel like any window's
//! elements, and a rank's reads need its own claim (another rank's claimed rows are not
//! current there).
//!
//! The loops: a 1D histogram with two merged buffers (integer counts and a float sum), a
//! 2D SGD with a buffered bias applied every 16 iterations (`max_delay`, so a step has
//! several application points), and gradients handed to an AdaGrad apply function that
//! updates two more arrays on every rank; `sync = "bsp"` and `sync = "hybrid"` replicas, and
//! a `sync = "ssp(1)"` table and two buffers large enough to merge by reduce-scatter and
//! all-gather (issue 28: with 3 processes each sends the others only their segments; the
//! table's rounds merge behind the workers, each process trading a round's differences
//! while its workers run the next); a Gibbs-style reassignment over
//! `tokens.iter_mut()` (a `Vec<u16>` of topics per entry, document counts local, word
//! counts rotated, topic totals buffered); a scatter through an index array
//! (reconnaissance), the same with one hot slot that makes a component larger than a
//! worker's share (split into pieces that wait for each other), an `ordered` running sum
//! through an index array, and rows gathered along a graph's edges. Each runs several times with serial code
//! changing the arrays in between. A loop whose values do not serialize stays on the
//! driver's threads and says why. 2 processes x 1 thread must print what 2 threads print,
//! 3 x 1 what 3 threads print, 2 x 2 what 4 threads print, and every loop must say it
//! crossed processes (not that it ran on the driver's threads).
//!
//! Recorded (issue 26, "replay across processes"): the same program under
//! `testing::record` as 2 processes x 1 thread crosses processes as before, prints the
//! same lines, and its trace (every call's plan and every worker's iterations, rank 1's
//! sent back with the call's end) equals the trace of 2 threads; `testing::replay` of that
//! trace on the driver's process alone prints the same lines again.
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml): its `main` carries
//! `#[strads::main]`, so the copies of this binary that `STRADS_PROCESSES` starts go
//! straight to serving. It runs itself as the program under test.

use std::process::ExitCode;

#[path = "common/self_run.rs"]
mod self_run;
use self_run::{digest, run_self};

use strads::prelude::*;
use strads::testing::bits;

/// Per-user counts written by the loop's blocks; per-item counts and a global sum merged.
#[strads::parallel_for(buffer(per_item, total), expect = "1d")]
fn histogram(
    ratings: &SparseArray<f32, 2>,
    per_user: &mut DistArray<u32, 1>,
    per_item: &mut DistArray<u32, 1>,
    total: &mut DistArray<f64, 1>,
) {
    for ([u, i], &r) in ratings {
        per_user[u] += 1;
        per_item[i] += 1;
        total[0] += r as f64;
    }
}

/// SGD-MF with a global bias learnt through a buffer, applied at least every 16
/// iterations of each worker.
#[strads::parallel_for(buffer(bias, max_delay = 16), expect = "2d")]
fn sgd_bias(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    bias: &mut DistArray<f32, 1>,
    lr: f32,
) {
    for ([u, i], &r) in ratings {
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - bias[0] - dot(wu, hi);
        bias[0] += lr * err;
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
}

/// AdaGrad's step for one weight from its accumulated gradient.
fn adagrad(g: f32, w: &mut f32, g2: &mut f32) {
    *g2 += g * g;
    *w -= 0.5 * g / (g2.sqrt() + 1e-8);
}

/// Least-squares gradients into a buffer whose apply function steps `w` and `g2`.
#[strads::parallel_for(buffer(grad, apply = adagrad(w, g2), max_delay = 40), expect = "1d")]
fn gradients(
    x: &DistArray<f32, 2>,
    y: &DistArray<f32, 1>,
    w: &mut DistArray<f32, 1>,
    g2: &mut DistArray<f32, 1>,
    grad: &mut DistArray<f32, 1>,
    n: usize,
) {
    for s in 0..n {
        let row = x.row(s);
        let mut pred = 0.0f32;
        for k in 0..row.len() {
            pred += row[k] * w[k];
        }
        let err = pred - y[s];
        for k in 0..row.len() {
            grad[k] += err * row[k];
        }
    }
}

/// The data-parallel mode: replicas of `ws` averaged every 16 iterations of each worker.
#[strads::parallel_for(sync = "bsp", batch = 16)]
fn sync_sgd(x: &DistArray<f32, 2>, y: &DistArray<f32, 1>, ws: &mut DistArray<f32, 1>, d: usize) {
    for s in 0..y.len() {
        let mut p = 0.0f32;
        for k in 0..d {
            p += ws[k] * x[[s, k]];
        }
        let e = p - y[s];
        for k in 0..d {
            ws[k] -= 0.01 * e * x[[s, k]];
        }
    }
}

/// Reassigns each token's topic (an `iter_mut()` loop over a `Vec<u16>` per entry).
#[strads::parallel_for(buffer(nk), expect = "2d")]
fn reassign(
    tokens: &mut SparseArray<Vec<u16>, 2>,
    ndk: &mut DistArray<i32, 2>,
    nwk: &mut DistArray<i32, 2>,
    nk: &mut DistArray<i32, 1>,
    seed: u64,
) {
    let k: usize = nk.shape()[0];
    for ([d, w], zs) in tokens.iter_mut() {
        let mut rng = IterRng::new(seed, &[d as u64, w as u64]);
        for z in zs.iter_mut() {
            let old = *z as usize;
            ndk[[d, old]] -= 1;
            nwk[[w, old]] -= 1;
            nk[old] -= 1;
            let new = if rng.next_f32() < 0.5 && ndk[[d, old]] > 0 {
                old
            } else {
                rng.below(k)
            };
            *z = new as u16;
            ndk[[d, new]] += 1;
            nwk[[w, new]] += 1;
            nk[new] += 1;
        }
    }
}

/// `reassign` that also reads an array of `bool`, which cannot cross processes: the same
/// plan (so the same entries on every rank), run on the driver's threads, whose values
/// left on the ranks by the call before come home first.
#[strads::parallel_for(buffer(nk), expect = "2d")]
fn reassign_gated(
    tokens: &mut SparseArray<Vec<u16>, 2>,
    ndk: &mut DistArray<i32, 2>,
    nwk: &mut DistArray<i32, 2>,
    nk: &mut DistArray<i32, 1>,
    gate: &DistArray<bool, 1>,
    seed: u64,
) {
    let k: usize = nk.shape()[0];
    for ([d, w], zs) in tokens.iter_mut() {
        let mut rng = IterRng::new(seed, &[d as u64, w as u64]);
        for z in zs.iter_mut() {
            let old = *z as usize;
            if !gate[0] {
                continue;
            }
            ndk[[d, old]] -= 1;
            nwk[[w, old]] -= 1;
            nk[old] -= 1;
            let new = rng.below(k);
            *z = new as u16;
            ndk[[d, new]] += 1;
            nwk[[w, new]] += 1;
            nk[new] += 1;
        }
    }
}

/// Moves slots of `w` through an index array (reconnaissance: a subscript read from
/// data).
#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(idx: &DistArray<u32, 1>, vals: &DistArray<f32, 1>, w: &mut DistArray<f32, 1>, n: usize) {
    for s in 0..n {
        let j = idx[s] as usize;
        w[j] = 0.9 * w[j] + vals[s];
    }
}

/// A running sum through an index array, in serial order (`ordered`).
#[strads::parallel_for(ordered, expect = "reconnaissance")]
fn running_sum(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize) {
    for i in 1..n {
        let (a, b) = (idx[i] as usize, idx[i - 1] as usize);
        out[a] = out[a] * 0.5 + out[b] + 1.0;
    }
}

/// Each edge adds its tail's row of `x` into its head's row of `acc`.
#[strads::parallel_for(expect = "reconnaissance")]
fn gather(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    x: &DistArray<f32, 2>,
    acc: &mut DistArray<f32, 2>,
    m: usize,
) {
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        let (xa, ab) = (x.row(a), acc.row_mut(b));
        for k in 0..ab.len() {
            ab[k] = 0.5 * ab[k] + xa[k];
        }
    }
}

/// Diffusion along a grid graph's edges: one conflict component per batch, split into
/// pieces that wait for the pieces they share a node with; a buffer and a reduction too.
#[strads::parallel_for(buffer(visits), expect = "reconnaissance")]
fn diffuse(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    x: &mut DistArray<f32, 1>,
    visits: &mut DistArray<u32, 1>,
    m: usize,
    rate: f32,
) -> f64 {
    let mut moved: f64 = 0.0;
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        let d = x[b] - x[a];
        x[a] += rate * d;
        x[b] -= rate * d;
        visits[a] += 1;
        visits[b] += 1;
        moved += d.abs() as f64;
    }
    moved
}

/// A value that does not serialize.
#[derive(Clone, Default, Debug)]
struct Cell {
    x: f32,
}

/// A value serde's postcard encoding cannot carry faithfully: an empty `xs` is skipped,
/// so the decoder would read `y` as the list's length.
#[derive(Clone, Default, Debug, serde::Serialize, serde::Deserialize)]
struct Skips {
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    xs: Vec<u32>,
    y: u32,
}

/// An `iter_mut()` loop over values that serialize but do not come back as they were.
#[strads::parallel_for(expect = "1d")]
fn bump(cells: &mut SparseArray<Skips, 2>) {
    for ([i, _], c) in cells.iter_mut() {
        c.y += i as u32;
        if c.y % 3 == 0 {
            c.xs.push(c.y);
        }
    }
}

/// An `iter_mut()` loop over values that cannot cross processes.
#[strads::parallel_for(expect = "1d")]
fn scale(cells: &mut SparseArray<Cell, 2>, by: f32) {
    for (_, c) in cells.iter_mut() {
        c.x *= by;
    }
}

/// A corpus of `(document, word)` entries, each with a few topics, and its counts.
fn corpus(
    k: usize,
) -> (
    SparseArray<Vec<u16>, 2>,
    DistArray<i32, 2>,
    DistArray<i32, 2>,
    DistArray<i32, 1>,
) {
    let (docs, words) = (40, 50);
    let r = DistArray::<f64, 1>::random([docs * words], 3);
    let mut entries = Vec::new();
    for d in 0..docs {
        for w in 0..words {
            let x = r[d * words + w];
            if x < 0.3 {
                let n = 1 + (x * 10.0) as usize;
                let zs: Vec<u16> = (0..n).map(|j| ((d + w + j) % k) as u16).collect();
                entries.push(([d, w], zs));
            }
        }
    }
    let tokens = SparseArray::from_entries([docs, words], entries).expect("a corpus");
    let (mut ndk, mut nwk, mut nk) = (
        DistArray::<i32, 2>::zeros([docs, k]),
        DistArray::<i32, 2>::zeros([words, k]),
        DistArray::<i32, 1>::zeros([k]),
    );
    for ([d, w], zs) in &tokens {
        for &z in zs {
            ndk[[d, z as usize]] += 1;
            nwk[[w, z as usize]] += 1;
            nk[z as usize] += 1;
        }
    }
    (tokens, ndk, nwk, nk)
}

/// `sync = "ssp(1)"` over a table large enough (128 KiB) to merge across processes by
/// reduce-scatter and all-gather, behind the workers (each up to one batch ahead of the
/// slowest): each iteration pulls two rows picked through index arrays toward each other
/// (word2vec's shape), so a batch changes some rows only.
#[strads::parallel_for(sync = "ssp(1)", batch = 32)]
fn sync_rows(
    a: &DistArray<u32, 1>,
    b: &DistArray<u32, 1>,
    emb: &mut DistArray<f32, 2>,
    dim: usize,
) {
    for s in 0..a.len() {
        let (i, j) = (a[s] as usize, b[s] as usize);
        let mut dot = 0.0f32;
        for k in 0..dim {
            dot += emb[[i, k]] * emb[[j, k]];
        }
        let g = 0.05 * (1.0 - dot);
        for k in 0..dim {
            let (x, y) = (emb[[i, k]], emb[[j, k]]);
            emb[[i, k]] += g * y;
            emb[[j, k]] += g * x;
        }
    }
}

/// Counts and sums over 20,000 slots through write-back buffers large enough to merge by
/// reduce-scatter and all-gather (a 1-D array, in chunks of 256 elements), several times a
/// step (`max_delay`).
#[strads::parallel_for(buffer(counts, sums, max_delay = 500))]
fn tally(
    slot: &DistArray<u32, 1>,
    vals: &DistArray<f32, 1>,
    counts: &mut DistArray<u32, 1>,
    sums: &mut DistArray<f32, 1>,
) {
    for s in 0..slot.len() {
        let k = slot[s] as usize;
        counts[k] += 1;
        sums[k] += vals[s];
    }
}

/// The program under test: each loop called four times, serial code changing its arrays
/// between calls; the bits after each call.
/// `sync = "hybrid"`: the threads of a process share one replica, the processes' replicas
/// summed every 8 iterations of each worker. Each iteration adds whole numbers to its own
/// row only, so every timing and every layout gives the serial loop's bits.
#[strads::parallel_for(sync = "hybrid", batch = 8, merge = strads::merge::sum)]
fn hybrid_rows(x: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>) {
    for i in 0..out.shape()[0] {
        let step = (i % 3) as f32;
        for (o, v) in out.row_mut(i).iter_mut().zip(x.row(i)) {
            *o += step + (*v * 4.0).floor();
        }
    }
}

fn program() {
    let ratings = strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 90,
        items: 70,
        ratings: 3000,
        ..Default::default()
    });
    let [users, items] = ratings.shape();
    let (mut pu, mut pi, mut t) = (
        DistArray::<u32, 1>::zeros([users]),
        DistArray::<u32, 1>::zeros([items]),
        DistArray::<f64, 1>::zeros([1]),
    );
    let (mut w, mut h, mut b) = (
        DistArray::<f32, 2>::random([users, 4], 3),
        DistArray::<f32, 2>::random([items, 4], 4),
        DistArray::<f32, 1>::zeros([1]),
    );
    let (n, d) = (300, 6);
    let x = DistArray::<f32, 2>::random([n, d], 11);
    let y = DistArray::from_fn([n], |[s]| {
        (0..d).map(|k| x[[s, k]] * (k as f32 - 2.0)).sum::<f32>()
    });
    let mut ws = DistArray::<f32, 1>::zeros([d]);
    let mut hr = DistArray::<f32, 2>::zeros([n, d]);
    let (mut wl, mut g2, mut grad) = (
        DistArray::<f32, 1>::zeros([d]),
        DistArray::<f32, 1>::zeros([d]),
        DistArray::<f32, 1>::zeros([d]),
    );
    let (mut tokens, mut ndk, mut nwk, mut nk) = corpus(6);
    let gate = DistArray::from_vec([1], vec![true]).expect("a gate");
    let mut cells = SparseArray::from_entries(
        [4, 4],
        (0..8)
            .map(|e| ([e / 4, e % 4], Cell { x: e as f32 }))
            .collect(),
    )
    .expect("cells");
    let u32s = |v: Vec<u32>| DistArray::from_vec([v.len()], v).expect("an index array");
    let m = 4000;
    let spread = u32s((0..m as u32).map(|s| (s * 7919 + s / 3) % 1500).collect());
    // One slot in three iterations: a component larger than a worker's share.
    let hot = u32s(
        (0..m as u32)
            .map(|s| if s % 3 == 0 { 7 } else { (s * 104_729) % 1500 })
            .collect(),
    );
    let vals = DistArray::<f32, 1>::random([m], 5);
    let (mut sw, mut hw, mut sums) = (
        DistArray::<f32, 1>::zeros([1500]),
        DistArray::<f32, 1>::zeros([1500]),
        DistArray::<f64, 1>::random([1500], 6),
    );
    let (src, dst) = (
        u32s((0..m as u32).map(|e| (e * 31) % 600).collect()),
        u32s((0..m as u32).map(|e| (e * 17 + e / 5) % 600).collect()),
    );
    let xs = DistArray::<f32, 2>::random([600, 3], 7);
    let mut acc = DistArray::<f32, 2>::zeros([600, 3]);
    let (gs, gd) = strads::generate::grid_edges(40);
    let edges = gs.len();
    let (gs, gd) = (u32s(gs), u32s(gd));
    let (mut nodes, mut visits) = (
        DistArray::<f32, 1>::random([1600], 11),
        DistArray::<u32, 1>::zeros([1600]),
    );
    let mut skips = SparseArray::from_entries(
        [6, 2],
        (0..12)
            .map(|e| {
                (
                    [e / 2, e % 2],
                    Skips {
                        xs: Vec::new(),
                        y: e as u32,
                    },
                )
            })
            .collect(),
    )
    .expect("skips");
    let (pairs, rows, dim) = (3000, 4096, 8);
    let pa = u32s(
        (0..pairs as u32)
            .map(|s| (s * 7919) % rows as u32)
            .collect(),
    );
    let pb = u32s(
        (0..pairs as u32)
            .map(|s| (s * 104_729 + 17) % rows as u32)
            .collect(),
    );
    let mut emb = DistArray::<f32, 2>::random([rows, dim], 9);
    let slots = 20_000;
    let slot = u32s(
        (0..m as u32 * 2)
            .map(|s| (s * 7919 + s / 7) % slots)
            .collect(),
    );
    let tvals = DistArray::<f32, 1>::random([m * 2], 12);
    let (mut counts, mut tsums) = (
        DistArray::<u32, 1>::zeros([slots as usize]),
        DistArray::<f32, 1>::zeros([slots as usize]),
    );
    for call in 0..4 {
        sync_rows(&pa, &pb, &mut emb, dim);
        tally(&slot, &tvals, &mut counts, &mut tsums);
        println!(
            "call {call}: sync_rows {:016x} tally {:016x}",
            digest(&[bits(&emb)]),
            digest(&[bits(&counts), bits(&tsums)]),
        );
        emb[[call, 0]] += 0.5;
        tsums[call] -= 1.0;
        bump(&mut skips);
        let sk: Vec<u64> = skips
            .iter()
            .flat_map(|(_, c)| c.xs.iter().map(|&x| u64::from(x)).chain([u64::from(c.y)]))
            .collect();
        println!("call {call}: bump {:016x}", digest(&[sk]));
        scatter(&spread, &vals, &mut sw, m);
        scatter(&hot, &vals, &mut hw, m);
        running_sum(&spread, &mut sums, m);
        gather(&src, &dst, &xs, &mut acc, m);
        let moved = diffuse(&gs, &gd, &mut nodes, &mut visits, edges, 0.1);
        println!(
            "call {call}: scatter {:016x} hot {:016x} running_sum {:016x} gather {:016x} \
             diffuse {:016x}",
            digest(&[bits(&sw)]),
            digest(&[bits(&hw)]),
            digest(&[bits(&sums)]),
            digest(&[bits(&acc)]),
            digest(&[bits(&nodes), bits(&visits), vec![moved.to_bits()]]),
        );
        histogram(&ratings, &mut pu, &mut pi, &mut t);
        sgd_bias(&ratings, &mut w, &mut h, &mut b, 0.01);
        gradients(&x, &y, &mut wl, &mut g2, &mut grad, n);
        sync_sgd(&x, &y, &mut ws, d);
        hybrid_rows(&x, &mut hr);
        reassign(&mut tokens, &mut ndk, &mut nwk, &mut nk, call as u64);
        // Across processes the values stay on the ranks: the next call finds them there,
        // the gated one (on the driver's threads) brings them home first, the one after
        // sends them again.
        reassign(&mut tokens, &mut ndk, &mut nwk, &mut nk, 100 + call as u64);
        reassign_gated(
            &mut tokens,
            &mut ndk,
            &mut nwk,
            &mut nk,
            &gate,
            200 + call as u64,
        );
        reassign(&mut tokens, &mut ndk, &mut nwk, &mut nk, 300 + call as u64);
        scale(&mut cells, 1.5);
        let topics: Vec<u64> = tokens
            .iter()
            .flat_map(|(_, zs)| zs.iter().map(|&z| u64::from(z)))
            .collect();
        let xs: Vec<u64> = cells
            .iter()
            .map(|(_, c)| u64::from(c.x.to_bits()))
            .collect();
        println!(
            "call {call}: histogram {:016x} sgd_bias {:016x} gradients {:016x} sync_sgd \
             {:016x} hybrid_rows {:016x} reassign {:016x} scale {:016x}",
            digest(&[bits(&pu), bits(&pi), bits(&t)]),
            digest(&[bits(&w), bits(&h), bits(&b)]),
            digest(&[bits(&wl), bits(&g2), bits(&grad)]),
            digest(&[bits(&ws)]),
            digest(&[bits(&hr)]),
            digest(&[topics, bits(&ndk), bits(&nwk), bits(&nk)]),
            digest(&[xs]),
        );
        // Hybrid rows: every call added the same whole numbers (any timing, any layout).
        for i in 0..n {
            for k in 0..d {
                let step = (i % 3) as f32 + (x[[i, k]] * 4.0).floor();
                assert_eq!(
                    hr[[i, k]],
                    step * (call + 1) as f32,
                    "hybrid_rows [{i}, {k}]"
                );
            }
        }
        // The counts stay consistent with the topics.
        let total: i32 = nk.as_slice().iter().sum();
        assert_eq!(
            total as usize,
            tokens.iter().map(|(_, zs)| zs.len()).sum::<usize>()
        );
        // Serial code between calls: every buffered array and apply target changes, and
        // arrays the reconnaissance loops write.
        sw[call] += 1.0;
        acc[[call, 0]] -= 0.5;
        t[0] *= 0.5;
        pi[call] += 7;
        b[0] -= 0.25;
        wl[call] += 0.125;
        g2[0] *= 0.5;
    }
}

/// The program under `testing::record`, a line that names its trace, then the program
/// again replaying the trace on this process.
fn recorded() {
    let ((), trace) = strads::testing::record(program);
    let iterations: usize = trace.runs.iter().map(|r| r.order().len()).sum();
    // Everything of every call but the plan line's timings (`survey_ms=`, `plan_ms=`).
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for r in &trace.runs {
        let plan: Vec<&str> = r.plan.split(' ').filter(|w| !w.contains("_ms=")).collect();
        std::hash::Hash::hash(
            &(&r.loop_name, plan, &r.steps, &r.applied, r.max_delay),
            &mut h,
        );
    }
    println!(
        "trace: {} calls, {iterations} iterations, {:016x}",
        trace.runs.len(),
        std::hash::Hasher::finish(&h)
    );
    strads::testing::replay(&trace, program);
}

/// Runs this binary as `role` with `env`; its output and its explain lines.
fn run_as(role: &str, env: &[(&str, &str)]) -> Result<(String, String), String> {
    run_self("CLUSTER_KINDS_ROLE", role, env)
}

/// Runs this binary as the program under test with `env`; its output and its explain
/// lines.
fn run(env: &[(&str, &str)]) -> Result<(String, String), String> {
    run_as("program", env)
}

fn check() -> Result<(), String> {
    for (procs, threads, same) in [("2", "1", "2"), ("3", "1", "3"), ("2", "2", "4")] {
        let (one, _) = run(&[("STRADS_THREADS", same)])?;
        let (many, explain) = run(&[("STRADS_PROCESSES", procs), ("STRADS_THREADS", threads)])?;
        if one.lines().count() != 16 || many != one {
            return Err(format!(
                "{procs} processes x {threads} threads print\n{many}\n{same} threads print\n{one}"
            ));
        }
        crossed(&explain, procs, threads, same)?;
        if procs == "2" && threads == "1" {
            check_recorded(&one)?;
        }
    }
    println!(
        "cluster_kinds: buffers, iter_mut() and reconnaissance loops on 2x1, 3x1 and 2x2 processes x threads \
         give the bits of 2, 3 and 4 threads; recorded as 2x1 they give the trace of 2 threads, \
         which replays on one process"
    );
    Ok(())
}

/// A recorded run as 2 x 1 prints what 2 threads print (the program's lines `one`, the
/// trace's line, the same lines replayed), and its calls cross processes.
fn check_recorded(one: &str) -> Result<(), String> {
    let (threads, _) = run_as("recorded", &[("STRADS_THREADS", "2")])?;
    let (procs, explain) = run_as(
        "recorded",
        &[("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")],
    )?;
    let lines: Vec<&str> = procs.lines().collect();
    let program: Vec<&str> = one.lines().collect();
    let n = program.len();
    let good = procs == threads
        && lines.len() == 2 * n + 1
        && lines[..n] == program[..]
        && lines[n + 1..] == program[..]
        && lines[n].starts_with("trace: 72 calls, 158300 iterations, ");
    if !good {
        return Err(format!(
            "recorded: 2 processes x 1 thread print\n{procs}\n2 threads print\n{threads}\n\
             unrecorded, 2 threads print\n{one}"
        ));
    }
    crossed(&explain, "2", "1", "2")
}

/// Every loop but `bump` and `scale` says it crossed processes; those two say why not.
fn crossed(explain: &str, procs: &str, threads: &str, same: &str) -> Result<(), String> {
    {
        for name in [
            "histogram",
            "sgd_bias",
            "gradients",
            "sync_sgd",
            "sync_rows",
            "tally",
            "hybrid_rows",
            "reassign",
            "scatter",
            "running_sum",
            "gather",
            "diffuse",
        ] {
            let crossed = format!("strads cluster {name}: {procs} processes x {threads} threads;");
            if !explain.lines().any(|l| l.starts_with(&crossed)) {
                return Err(format!(
                    "{name} did not cross processes ({procs} x {threads}):\n{explain}"
                ));
            }
        }
        // The grid's components are split into pieces, which wait across processes.
        let split = explain
            .lines()
            .find_map(|l| l.strip_prefix("strads plan diffuse: "))
            .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix("split=")))
            .and_then(|n| n.parse::<usize>().ok());
        if !matches!(split, Some(1..)) {
            return Err(format!("diffuse split no component:\n{explain}"));
        }
        let alone: Vec<&str> = explain
            .lines()
            .filter(|l| l.contains("runs on the driver's threads"))
            .collect();
        let why = format!(
            "strads cluster scale: runs on the driver's threads as the job's {same} workers \
             (its values do not serialize (derive serde's Serialize and Deserialize for them))"
        );
        // How the check fails depends on the values: a decoding error, or other values.
        let skips = format!(
            "strads cluster bump: runs on the driver's threads as the job's {same} workers \
             (its values do not cross processes exactly ("
        );
        let gated = format!(
            "strads cluster reassign_gated: runs on the driver's threads as the job's {same} \
             workers (array 4 has elements that cannot cross processes (numbers only))"
        );
        let said = alone.len() == 3
            && alone[0].starts_with(&skips)
            && alone[0].ends_with("values must come back from serde's encoding as they were)")
            && alone[1] == gated
            && alone[2] == why;
        if !said {
            return Err(format!(
                "only `reassign_gated`, `bump` and `scale` should run on the driver alone, \
                 saying why:\n{explain}"
            ));
        }
        // The values of `reassign`'s entries stay on the ranks between its calls.
        let kept = "strads cluster reassign: its values stay on the ranks that run their \
                    entries between calls (a call with the same entries on every rank sends \
                    none)";
        if !explain.lines().any(|l| l == kept) {
            return Err(format!(
                "reassign's values did not stay on the ranks:\n{explain}"
            ));
        }
        // A worker rank gets the indices of the entries its tasks run as blocks, never a
        // copy of the array's indices: its copy has 0 entries, and its memory line names
        // the blocks and values it keeps besides (that a rank's blocks are its own alone
        // is `itermut::buckets`' unit test).
        let workers: Vec<&str> = explain
            .lines()
            .filter(|l| l.starts_with("[rank ") && l.contains("strads memory rank "))
            .collect();
        if workers.len() + 1 != procs.parse::<usize>().unwrap_or(0)
            || !workers.iter().all(|l| {
                l.contains(
                    "sparse [40, 50], 0 entries of Vec<u16>: 0.0 MiB, and 0.0 MiB of blocks \
                         and values (their inline bytes) of the entries this rank runs",
                )
            })
        {
            return Err(format!(
                "a worker held reassign's array (its indices) whole:\n{explain}"
            ));
        }
    }
    Ok(())
}

#[strads::main]
fn main() -> ExitCode {
    self_run::main_of_roles(
        "CLUSTER_KINDS_ROLE",
        "cluster_kinds",
        &[("program", program), ("recorded", recorded)],
        check,
    )
}
