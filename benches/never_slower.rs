//! Loops a new user writes that used to run slower in parallel than serially: a k-means
//! update, PageRank's push over an edge list, a bincount (all three planned by
//! reconnaissance) and a small wavefront (an edit-distance table), each timed as its
//! original serial loop (`strads::testing::serial`) and at 2 threads, calls alternated in
//! one run, with the cost model (default) and without it (`testing::plan_always`, as
//! `STRADS_COST=0`). Then the data-parallel mode: logistic regression over samples with hub
//! features as `sync = "bsp"` and as `sync = "hybrid"` (whose results depend on timing, so
//! the cost model may time it against the serial loop). Prints a table of median call
//! times; record it in BENCHMARKS.md.
//!
//! With `--processes 2` the same loops run as a cluster job of 2 processes x 1 thread
//! (the bench starts its copies through `STRADS_PROCESSES`): each call is the serial
//! loop on the driver, the call as the cost model places it (across the ranks or on the
//! driver's threads) and the call always across the ranks (`plan_always`). The last
//! column, a digest of the first parallel call's result, is the same as on 2 threads.
//!
//! ```text
//! cargo bench --bench never_slower
//! cargo bench --bench never_slower -- --calls 40
//! cargo bench --bench never_slower -- --processes 2
//! ```

use std::time::Instant;

use clap::Parser;
use strads::prelude::*;
use strads::testing::{bits, median, plan_always, serial};

/// Sums of the points assigned to each centroid, and their counts.
#[strads::parallel_for(expect = "reconnaissance")]
fn kmeans_update(
    x: &DistArray<f32, 2>,
    assign: &DistArray<u32, 1>,
    sums: &mut DistArray<f32, 2>,
    counts: &mut DistArray<u32, 1>,
) {
    for i in 0..assign.len() {
        let c = assign[i] as usize;
        for d in 0..x.shape()[1] {
            sums[[c, d]] += x[[i, d]];
        }
        counts[c] += 1;
    }
}

/// One PageRank push over an edge list: the ranks only flow into elements.
#[strads::parallel_for(expect = "reconnaissance")]
fn pagerank_push(
    edges: &DistArray<u32, 2>,
    ranks: &DistArray<f32, 1>,
    outdeg: &DistArray<u32, 1>,
    next: &mut DistArray<f32, 1>,
) {
    for e in 0..edges.shape()[0] {
        let (s, d) = (edges[[e, 0]] as usize, edges[[e, 1]] as usize);
        next[d] += 0.85 * ranks[s] / outdeg[s] as f32;
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn bincount(data: &DistArray<u32, 1>, counts: &mut DistArray<u64, 1>) {
    for i in 0..data.len() {
        counts[data[i] as usize] += 1;
    }
}

/// Edit distance between two strings of `n` and `m` symbols, row 0 and column 0 set.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn edit_distance(a: &DistArray<u8, 1>, b: &DistArray<u8, 1>, d: &mut DistArray<u32, 2>) {
    for i in 0..a.len() {
        for j in 0..b.len() {
            let sub = d[[i, j]] + (a[i] != b[j]) as u32;
            d[[i + 1, j + 1]] = sub.min(d[[i, j + 1]] + 1).min(d[[i + 1, j]] + 1);
        }
    }
}

/// Dynamic time warping's fill, as `examples/dtw.rs`, and the same with an exact float
/// sum of the cells it writes (an `ordered` loop's `+=`: terms kept and added in the
/// serial order): what exactness costs.
#[strads::parallel_for(ordered, expect = "unimodular")]
fn dtw_plain(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
    }
}

#[strads::parallel_for(ordered, expect = "unimodular")]
fn dtw_summed(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) -> f64 {
    let mut total: f64 = 0.0;
    for ([i, j], &c) in cost {
        let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
        d[[i + 1, j + 1]] = c + best;
        total += (c + best) as f64;
    }
    total
}

#[derive(Parser, Debug)]
struct Args {
    /// Timed calls per way (after one first call each).
    #[arg(long, default_value_t = 25)]
    calls: usize,
    /// Only the loops whose row name contains this text (for profiling one).
    #[arg(long)]
    only: Option<String>,
    /// Run as a cluster job of this many processes x 1 thread instead of 2 threads.
    #[arg(long, value_parser = clap::value_parser!(u16).range(2..=8))]
    processes: Option<u16>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One epoch of logistic regression, `nnz` features per sample (feature 0 in every one).
#[strads::parallel_for(sync = "bsp", batch = 4096, merge = strads::merge::sum)]
fn lr_bsp(f: &DistArray<u32, 1>, y: &DistArray<f32, 1>, w: &mut DistArray<f32, 1>, nnz: usize) {
    for s in 0..y.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[f[s * nnz + k] as usize];
        }
        let g = -y[s] / (1.0 + (y[s] * z).exp());
        for k in 0..nnz {
            w[f[s * nnz + k] as usize] -= 0.05 * g;
        }
    }
}

/// `lr_bsp` with the threads of the process sharing one replica.
#[strads::parallel_for(sync = "hybrid", batch = 4096, merge = strads::merge::sum)]
fn lr_hybrid(f: &DistArray<u32, 1>, y: &DistArray<f32, 1>, w: &mut DistArray<f32, 1>, nnz: usize) {
    for s in 0..y.len() {
        let mut z = 0.0f32;
        for k in 0..nnz {
            z += w[f[s * nnz + k] as usize];
        }
        let g = -y[s] / (1.0 + (y[s] * z).exp());
        for k in 0..nnz {
            w[f[s * nnz + k] as usize] -= 0.05 * g;
        }
    }
}

/// One round of label propagation for connected components (Shiloach-Vishkin's hooking):
/// each edge pulls the larger label of its ends down to the smaller. The labels steer
/// which end is written and change every round.
#[strads::parallel_for]
fn hook(edges: &DistArray<u32, 2>, label: &mut DistArray<u32, 1>) -> u64 {
    let mut changed = 0u64;
    for e in 0..edges.shape()[0] {
        let (a, b) = (edges[[e, 0]] as usize, edges[[e, 1]] as usize);
        let (la, lb) = (label[a], label[b]);
        if la < lb {
            label[b] = la;
            changed += 1;
        } else if lb < la {
            label[a] = lb;
            changed += 1;
        }
    }
    changed
}

/// One epoch of BPR: each (user, positive item) pair against a negative item sampled
/// afresh every epoch.
#[strads::parallel_for]
fn bpr_epoch(
    pairs: &DistArray<u32, 2>,
    neg: &DistArray<u32, 1>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for s in 0..neg.len() {
        let (u, i, j) = (
            pairs[[s, 0]] as usize,
            pairs[[s, 1]] as usize,
            neg[s] as usize,
        );
        let mut x = 0.0f32;
        for k in 0..w.shape()[1] {
            x += w[[u, k]] * (h[[i, k]] - h[[j, k]]);
        }
        let g = 1.0 / (1.0 + x.exp());
        for k in 0..w.shape()[1] {
            let wu = w[[u, k]];
            w[[u, k]] += lr * (g * (h[[i, k]] - h[[j, k]]) - 0.01 * wu);
            h[[i, k]] += lr * (g * wu - 0.01 * h[[i, k]]);
            h[[j, k]] += lr * (-g * wu - 0.01 * h[[j, k]]);
        }
    }
}

/// The phases of odd-even transposition sort: cheap 1D bodies with an integer reduction.
#[strads::parallel_for(expect = "1d")]
fn even_phase(x: &mut DistArray<i32, 1>, n: usize) -> u64 {
    let mut swaps = 0u64;
    for i in (0..n - 1).step_by(2) {
        let (a, b) = (x[i], x[i + 1]);
        if a > b {
            x[i] = b;
            x[i + 1] = a;
            swaps += 1;
        }
    }
    swaps
}

#[strads::parallel_for(expect = "1d")]
fn odd_phase(x: &mut DistArray<i32, 1>, n: usize) -> u64 {
    let mut swaps = 0u64;
    for i in (1..n - 1).step_by(2) {
        let (a, b) = (x[i], x[i + 1]);
        if a > b {
            x[i] = b;
            x[i + 1] = a;
            swaps += 1;
        }
    }
    swaps
}

/// TF-IDF: document frequencies, document lengths, then the weights in place.
#[strads::parallel_for]
fn doc_freq(tf: &SparseArray<f32, 2>, df: &mut DistArray<u32, 1>) {
    for ([_, w], _) in tf {
        df[w] += 1;
    }
}

#[strads::parallel_for]
fn doc_len(tf: &SparseArray<f32, 2>, len: &mut DistArray<f32, 1>) {
    for ([d, _], &c) in tf {
        len[d] += c;
    }
}

#[strads::parallel_for]
fn tf_idf(
    tf: &mut SparseArray<f32, 2>,
    df: &DistArray<u32, 1>,
    len: &DistArray<f32, 1>,
    docs: f32,
) {
    for ([d, w], v) in tf.iter_mut() {
        *v = *v / len[d] * (docs / df[w] as f32).ln();
    }
}

/// A mirrored update: iterations `i` and `n - 1 - i` touch the same two elements, so the
/// loop is planned by reconnaissance in `n / 2` groups of two.
#[strads::parallel_for(expect = "reconnaissance")]
fn mirrored(x: &DistArray<i64, 1>, y: &mut DistArray<i64, 1>, n: usize) {
    for i in 0..n {
        y[i] += x[i];
        y[n - 1 - i] += 3 * x[i];
    }
}

/// Times one loop (unless `--only` leaves it out) and prints its row.
fn row(only: Option<&str>, name: &str, run: impl FnOnce() -> ([f64; 3], u64)) {
    if only.is_some_and(|o| !name.contains(o)) {
        return;
    }
    let ([s, c, p], digest) = run();
    println!(
        "| {name} | {:.3} | {:.3} | {:.2}x | {:.3} | {:.2}x | {digest:016x} |",
        s * 1e3,
        c * 1e3,
        s / c,
        p * 1e3,
        s / p
    );
}

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// Median seconds of `calls` calls of `f` in each of three ways, alternated: the serial
/// loop, the parallel call with the cost model and always planned (2 threads, or in a
/// cluster job the job's workers); and a digest of the first parallel call's result. Each
/// way's result bits must agree with the serial loop's when `same` says the plan keeps
/// them.
fn time3<R: PartialEq + std::fmt::Debug + std::hash::Hash>(
    calls: usize,
    same: bool,
    mut f: impl FnMut() -> R,
) -> ([f64; 3], u64) {
    let across = strads::cluster::rank_and_size().1 > 1;
    let par = |always: bool, f: &mut dyn FnMut() -> R| match (across, always) {
        (true, false) => f(),
        (true, true) => plan_always(f),
        (false, false) => strads::with_threads(2, f),
        (false, true) => plan_always(|| strads::with_threads(2, &mut *f)),
    };
    let mut t: [Vec<f64>; 3] = Default::default();
    let first = [serial(&mut f), par(false, &mut f), par(true, &mut f)];
    if same {
        assert_eq!(first[0], first[1]);
        assert_eq!(first[0], first[2]);
    }
    let digest = {
        use std::hash::Hasher;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        first[1].hash(&mut h);
        h.finish()
    };
    for _ in 0..calls {
        for (way, times) in t.iter_mut().enumerate() {
            let s = Instant::now();
            match way {
                0 => drop(serial(&mut f)),
                1 => drop(par(false, &mut f)),
                _ => drop(par(true, &mut f)),
            }
            times.push(s.elapsed().as_secs_f64());
        }
    }
    (t.map(|mut v| median(&mut v)), digest)
}

fn main() {
    let args = Args::parse();
    if let Some(p) = args.processes
        && std::env::var_os("STRADS_RANK").is_none()
        && std::env::var_os("STRADS_PROCESSES").is_none()
    {
        // The job: copies of this binary, started by the first call into strads.
        let status = std::process::Command::new(std::env::current_exe().expect("this binary"))
            .args(std::env::args_os().skip(1))
            .env("STRADS_PROCESSES", p.to_string())
            .env("STRADS_THREADS", "1")
            .status()
            .expect("the bench starts itself as a cluster job");
        std::process::exit(status.code().unwrap_or(1));
    }
    strads::cluster::start();
    let mut seed = 7u64;
    let way = match args.processes {
        Some(p) => format!("{p} processes"),
        None => "2 threads".to_string(),
    };
    println!(
        "| loop | serial loop ms | {way} ms | x serial | {way}, always the plan ms | x serial | digest |"
    );
    println!("|---|---|---|---|---|---|---|");
    let only = args.only.as_deref();

    // A mirrored update over 300,000 elements: 150,000 conflict groups of two.
    let n = 300_000;
    let xs = DistArray::from_fn([n], |[i]| (i as i64 * 7) % 13 - 6);
    row(only, "mirrored update (300k, groups of two)", || {
        time3(args.calls, true, || {
            let mut ys = DistArray::<i64, 1>::zeros([n]);
            mirrored(&xs, &mut ys, n);
            bits(&ys)
        })
    });

    // k-means update: 200,000 points of 16 dims, 20 centroids.
    let (n, dims, k) = (200_000, 16, 20);
    let x = DistArray::<f32, 2>::random([n, dims], 1);
    let assign = DistArray::from_fn([n], |_| (lcg(&mut seed) % k as u64) as u32);
    row(only, "k-means update (200k x 16, 20 centroids)", || {
        time3(args.calls, true, || {
            let (mut sums, mut counts) = (DistArray::zeros([k, dims]), DistArray::zeros([k]));
            kmeans_update(&x, &assign, &mut sums, &mut counts);
            (bits(&sums), bits(&counts))
        })
    });

    // PageRank: 500,000 edges over 50,000 nodes, the ranks changing between calls.
    let (nodes, m) = (50_000, 500_000);
    let edges = DistArray::<u32, 2>::from_fn([m, 2], |_| (lcg(&mut seed) % nodes as u64) as u32);
    let mut outdeg = DistArray::<u32, 1>::zeros([nodes]);
    for e in 0..m {
        outdeg[edges[[e, 0]] as usize] += 1;
    }
    for v in 0..nodes {
        outdeg[v] = outdeg[v].max(1);
    }
    let mut ranks = DistArray::<f32, 1>::from_fn([nodes], |_| 1.0 / nodes as f32);
    row(only, "PageRank push (500k edges, 50k nodes)", || {
        time3(args.calls, false, || {
            let mut next = DistArray::<f32, 1>::zeros([nodes]);
            pagerank_push(&edges, &ranks, &outdeg, &mut next);
            for v in 0..nodes {
                ranks[v] = 0.15 / nodes as f32 + next[v];
            }
            bits(&next).len()
        })
    });

    // bincount: 1,000,000 values in 1,000 bins.
    let data = DistArray::from_fn([1_000_000], |_| (lcg(&mut seed) % 1000) as u32);
    row(only, "bincount (1M values, 1000 bins)", || {
        time3(args.calls, true, || {
            let mut counts = DistArray::<u64, 1>::zeros([1000]);
            bincount(&data, &mut counts);
            bits(&counts)
        })
    });

    // A small wavefront: edit distance of two strings of 300 symbols.
    let len = 300;
    let a = DistArray::from_fn([len], |_| (lcg(&mut seed) % 4) as u8);
    let b = DistArray::from_fn([len], |_| (lcg(&mut seed) % 4) as u8);
    row(only, "edit distance (300 x 300 wavefront)", || {
        time3(args.calls, true, || {
            let mut d = DistArray::<u32, 2>::from_fn([len + 1, len + 1], |[i, j]| {
                if i == 0 || j == 0 { (i + j) as u32 } else { 0 }
            });
            edit_distance(&a, &b, &mut d);
            bits(&d)
        })
    });

    // An ordered wavefront of 2,000 x 2,000 cells, without and with an exact f64 sum.
    let side = 2_000;
    let cost = DistArray::<f32, 2>::random([side, side], 9);
    let fresh = || {
        DistArray::<f32, 2>::from_fn([side + 1, side + 1], |[i, j]| match (i, j) {
            (0, 0) => 0.0,
            (0, _) | (_, 0) => f32::INFINITY,
            _ => 0.0,
        })
    };
    row(
        only,
        "ordered wavefront (dtw 2,000 x 2,000), no reduction",
        || {
            time3(args.calls.min(5), true, || {
                let mut d = fresh();
                dtw_plain(&cost, &mut d);
                bits(&d)
            })
        },
    );
    row(
        only,
        "the same with an exact f64 `+=` (4M terms kept)",
        || {
            time3(args.calls.min(5), true, || {
                let mut d = fresh();
                let total = dtw_summed(&cost, &mut d);
                (bits(&d), total.to_bits())
            })
        },
    );

    // Connected components by label propagation: 150,000 edges over 100,000 nodes, rounds
    // until no label changes.
    let (nodes, m) = (100_000, 150_000);
    let edges = DistArray::<u32, 2>::from_fn([m, 2], |_| (lcg(&mut seed) % nodes as u64) as u32);
    row(
        only,
        "label propagation, rounds to the end (150k edges, 100k nodes)",
        || {
            time3(args.calls.min(5), true, || {
                let mut label = DistArray::<u32, 1>::from_fn([nodes], |[v]| v as u32);
                let mut rounds = 0;
                while hook(&edges, &mut label) > 0 {
                    rounds += 1;
                }
                (bits(&label), rounds)
            })
        },
    );

    // BPR: 200,000 pairs over 5,000 users and 2,000 items, k = 16, fresh negatives.
    let (users, items, pairs_n, kk) = (5_000, 2_000, 200_000, 16);
    let pairs = DistArray::<u32, 2>::from_fn([pairs_n, 2], |[_, c]| {
        (lcg(&mut seed) % if c == 0 { users } else { items } as u64) as u32
    });
    let (mut bw, mut bh) = (
        DistArray::<f32, 2>::random([users, kk], 3),
        DistArray::<f32, 2>::random([items, kk], 4),
    );
    row(
        only,
        "BPR epoch, fresh negatives (200k pairs, k = 16)",
        || {
            time3(args.calls, false, || {
                let neg = DistArray::from_fn([pairs_n], |_| (lcg(&mut seed) % items as u64) as u32);
                bpr_epoch(&pairs, &neg, &mut bw, &mut bh, 0.05);
            })
        },
    );

    // Odd-even transposition sort of 3,000 numbers: 3,000 calls of a cheap 1D loop.
    let sort_n = 3_000;
    let start = DistArray::<i32, 1>::from_fn([sort_n], |_| (lcg(&mut seed) % 100_000) as i32);
    row(
        only,
        "odd-even transposition sort (3,000 numbers, 3,000 phases)",
        || {
            time3(args.calls.min(5), true, || {
                let mut x = start.clone();
                let mut swaps = 0;
                for phase in 0..sort_n {
                    swaps += if phase % 2 == 0 {
                        even_phase(&mut x, sort_n)
                    } else {
                        odd_phase(&mut x, sort_n)
                    };
                }
                (bits(&x), swaps)
            })
        },
    );

    // TF-IDF over 1.4M entries (20,000 documents, 50,000 words), each loop called once
    // per run.
    let (docs, words, entries) = (20_000usize, 50_000usize, 1_400_000usize);
    let mut e: Vec<([usize; 2], f32)> = (0..entries)
        .map(|_| {
            let d = (lcg(&mut seed) % docs as u64) as usize;
            let w = (lcg(&mut seed) % words as u64) as usize;
            ([d, w], 1.0 + (lcg(&mut seed) % 5) as f32)
        })
        .collect();
    e.sort_by_key(|(k, _)| *k);
    e.dedup_by_key(|(k, _)| *k);
    let tf = SparseArray::from_entries([docs, words], e).expect("in the shape");
    row(only, "TF-IDF, three loops once each (1.4M entries)", || {
        time3(args.calls, true, || {
            let mut t = tf.clone();
            let mut df = DistArray::<u32, 1>::zeros([words]);
            let mut len = DistArray::<f32, 1>::zeros([docs]);
            doc_freq(&t, &mut df);
            doc_len(&t, &mut len);
            tf_idf(&mut t, &df, &len, docs as f32);
            t.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        })
    });

    // Logistic regression: 200,000 samples of 10 features among 20,000 (feature 0 a hub).
    let (samples, nnz, features) = (200_000, 10, 20_000);
    let f = DistArray::from_fn([samples * nnz], |[e]| {
        if e % nnz == 0 {
            0
        } else {
            (lcg(&mut seed) % features as u64) as u32
        }
    });
    let y = DistArray::from_fn(
        [samples],
        |_| if lcg(&mut seed) % 2 == 0 { 1.0 } else { -1.0 },
    );
    let mut w = DistArray::<f32, 1>::zeros([features]);
    row(
        only,
        "logistic regression, sync = \"bsp\" (200k x 10 of 20k features)",
        || time3(args.calls, false, || lr_bsp(&f, &y, &mut w, nnz)),
    );
    let mut w = DistArray::<f32, 1>::zeros([features]);
    row(
        only,
        "logistic regression, sync = \"hybrid\" (the same)",
        || time3(args.calls, false, || lr_hybrid(&f, &y, &mut w, nnz)),
    );
}
