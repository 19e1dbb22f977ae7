//! Loops the static analysis cannot plan run by reconnaissance, and give what a serial
//! order gives: unordered loops with no static strategy (degrees over an edge list, TransE
//! over triples, a prefix recurrence), and loops whose subscripts go through locals the
//! body changes (which used to be analysed by the local's first value: a wrong 1D plan).

use strads::prelude::*;
use strads::testing::{bits, record, replay, serial};

/// `deg[u] += w; deg[v] += w`: iterations sharing a node conflict in either dim.
#[strads::parallel_for(expect = "reconnaissance")]
fn degrees(edges: &SparseArray<f32, 2>, deg: &mut DistArray<f32, 1>) {
    for ([u, v], &w) in edges {
        deg[u] += w;
        deg[v] += w;
    }
}

/// TransE's update of two entity rows and a relation row per triple.
#[strads::parallel_for(expect = "reconnaissance")]
fn transe(
    triples: &SparseArray<f32, 3>,
    ent: &mut DistArray<f32, 2>,
    rel: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for ([h, r, t], _) in triples {
        for k in 0..ent.shape()[1] {
            let g = ent[[h, k]] + rel[[r, k]] - ent[[t, k]];
            ent[[h, k]] -= lr * g;
            rel[[r, k]] -= lr * g;
            ent[[t, k]] += lr * g;
        }
    }
}

/// `j` starts as `i` but moves on when `shift[i]` says so: not affine in `i`.
#[strads::parallel_for(expect = "reconnaissance")]
fn shifted_add(shift: &DistArray<u8, 1>, x: &DistArray<f32, 1>, a: &mut DistArray<f32, 1>) {
    for i in 0..x.len() {
        let mut j = i;
        if shift[i] > 0 {
            j += shift[i] as usize;
        }
        a[j] += x[i];
    }
}

/// Pseudo-random numbers without a generator crate: a 64-bit LCG.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

fn edges(nodes: usize, n: usize) -> SparseArray<f32, 2> {
    let mut next = lcg(7);
    let entries: Vec<([usize; 2], f32)> = (0..n)
        .map(|_| {
            // Squared: low ids are hubs.
            let u = (next() as usize % nodes) * (next() as usize % nodes) / nodes;
            let v = next() as usize % nodes;
            ([u, v], (1 + next() % 4) as f32)
        })
        .collect();
    SparseArray::from_entries([nodes, nodes], entries).unwrap()
}

/// Runs `f` on `threads` workers, or as the original serial loops when `threads` is 0.
fn on<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    if threads == 0 {
        serial(f)
    } else {
        strads::with_threads(threads, f)
    }
}

/// Whole-number weights: every order of the additions gives the same sums, so each worker
/// count equals the serial loop exactly, and the recorded order replays bit for bit.
#[test]
fn degrees_equal_the_serial_loop_on_any_worker_count() {
    let e = edges(300, 4000);
    let mut expected = DistArray::<f32, 1>::zeros([300]);
    serial(|| degrees(&e, &mut expected));
    for threads in 1..=4 {
        let mut deg = DistArray::<f32, 1>::zeros([300]);
        let ((), trace) = strads::with_threads(threads, || record(|| degrees(&e, &mut deg)));
        assert_eq!(bits(&deg), bits(&expected), "{threads} threads");
        let mut again = DistArray::<f32, 1>::zeros([300]);
        replay(&trace, || degrees(&e, &mut again));
        assert_eq!(bits(&again), bits(&deg), "{threads} threads: replay");
    }
}

#[test]
fn transe_equals_the_replay_of_its_order() {
    let mut next = lcg(11);
    let entries: Vec<([usize; 3], f32)> = (0..3000)
        .map(|_| {
            let h = next() as usize % 200;
            let t = (next() as usize % 200) * (next() as usize % 200) / 200;
            ([h, next() as usize % 7, t], 1.0)
        })
        .collect();
    let triples = SparseArray::from_entries([200, 7, 200], entries).unwrap();
    for threads in 1..=4 {
        let mut ent = DistArray::<f32, 2>::random([200, 8], 1);
        let mut rel = DistArray::<f32, 2>::random([7, 8], 2);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                for _ in 0..2 {
                    transe(&triples, &mut ent, &mut rel, 0.01);
                }
            })
        });
        let mut ent2 = DistArray::<f32, 2>::random([200, 8], 1);
        let mut rel2 = DistArray::<f32, 2>::random([7, 8], 2);
        replay(&trace, || {
            for _ in 0..2 {
                transe(&triples, &mut ent2, &mut rel2, 0.01);
            }
        });
        assert_eq!(bits(&ent), bits(&ent2), "{threads} threads: ent");
        assert_eq!(bits(&rel), bits(&rel2), "{threads} threads: rel");
    }
}

#[test]
fn mutated_local_subscripts_equal_the_serial_loop() {
    let n = 5000;
    let mut next = lcg(3);
    let shift = DistArray::from_vec([n], (0..n).map(|_| (next() % 3) as u8).collect()).unwrap();
    let x = DistArray::from_vec([n], (0..n).map(|i| (i % 5) as f32).collect()).unwrap();
    let mut expected = DistArray::<f32, 1>::zeros([n + 2]);
    serial(|| shifted_add(&shift, &x, &mut expected));
    for threads in 1..=4 {
        let mut a = DistArray::<f32, 1>::zeros([n + 2]);
        strads::with_threads(threads, || shifted_add(&shift, &x, &mut a));
        assert_eq!(bits(&a), bits(&expected), "{threads} threads");
    }
}

/// k-means' assignment step: the subscript of `counts` is read back from `assign`, which
/// the same iteration has just written. The recording sees the iteration's own write (an
/// overlay per iteration), so the plan matches the run.
#[strads::parallel_for(expect = "reconnaissance")]
fn assign_points(
    points: &DistArray<f32, 1>,
    centers: &DistArray<f32, 1>,
    assign: &mut DistArray<u32, 1>,
    counts: &mut DistArray<u64, 1>,
    sums: &mut DistArray<f32, 1>,
) {
    for i in 0..points.len() {
        let mut best = 0;
        for c in 1..centers.len() {
            if (points[i] - centers[c]).abs() < (points[i] - centers[best]).abs() {
                best = c;
            }
        }
        assign[i] = best as u32;
        counts[assign[i] as usize] += 1;
        let row = sums.row_mut(assign[i] as usize);
        row[0] += points[i];
    }
}

#[test]
fn subscripts_read_back_from_the_iterations_own_writes() {
    let n = 4000;
    let mut next = lcg(5);
    let points =
        DistArray::from_vec([n], (0..n).map(|_| (next() % 1000) as f32).collect()).unwrap();
    let centers = DistArray::from_vec([6], vec![10.0, 200.0, 420.0, 600.0, 810.0, 990.0]).unwrap();
    let run = |threads: usize| {
        let mut assign = DistArray::<u32, 1>::zeros([n]);
        let mut counts = DistArray::<u64, 1>::zeros([6]);
        let mut sums = DistArray::<f32, 1>::zeros([6]);
        let f = || assign_points(&points, &centers, &mut assign, &mut counts, &mut sums);
        on(threads, f);
        (
            assign.as_slice().to_vec(),
            counts.as_slice().to_vec(),
            bits(&sums),
        )
    };
    let expected = run(0);
    for threads in 1..=4 {
        assert_eq!(run(threads), expected, "{threads} threads");
    }
}

/// k-means' reassignment, as Gibbs samplers write it: the old assignment's count goes down
/// before the new one's goes up. Points fall in groups of their own (`i % GROUPS`), each
/// with `K` centers, so iterations of different groups never conflict.
/// `counts[g * K + assign[i]]` reads the value `assign` held before the call, so the
/// recording reads `assign`'s real values (the macro marks it as steering subscripts), and
/// the plan is made again when they change between calls.
#[strads::parallel_for(expect = "reconnaissance")]
fn reassign(
    points: &DistArray<f32, 1>,
    centers: &DistArray<f32, 1>,
    assign: &mut DistArray<u32, 1>,
    counts: &mut DistArray<i64, 1>,
) {
    for i in 0..points.len() {
        let g = i % GROUPS;
        counts[g * K + assign[i] as usize] -= 1;
        let mut best = 0;
        for c in 1..K {
            if (points[i] - centers[g * K + c]).abs() < (points[i] - centers[g * K + best]).abs() {
                best = c;
            }
        }
        assign[i] = best as u32;
        counts[g * K + assign[i] as usize] += 1;
    }
}

const GROUPS: usize = 64;
const K: usize = 4;

#[test]
fn subscripts_read_from_values_written_in_earlier_calls() {
    let n = 4096;
    let mut next = lcg(9);
    let points =
        DistArray::from_vec([n], (0..n).map(|_| (next() % 1000) as f32).collect()).unwrap();
    let run = |threads: usize| {
        let mut centers = DistArray::from_fn([GROUPS * K], |[c]| (c % K) as f32 * 100.0);
        let mut assign = DistArray::<u32, 1>::zeros([n]);
        let mut counts = DistArray::<i64, 1>::zeros([GROUPS * K]);
        for i in 0..n {
            counts[(i % GROUPS) * K] += 1;
        }
        for _ in 0..4 {
            let f = || reassign(&points, &centers, &mut assign, &mut counts);
            on(threads, f);
            // The centers move to their points' means (serial code between the calls).
            let mut sums = vec![0.0f64; GROUPS * K];
            for i in 0..n {
                sums[(i % GROUPS) * K + assign[i] as usize] += points[i] as f64;
            }
            for c in 0..GROUPS * K {
                if counts[c] > 0 {
                    centers[c] = (sums[c] / counts[c] as f64) as f32;
                }
            }
        }
        (assign.as_slice().to_vec(), counts.as_slice().to_vec())
    };
    let expected = run(0);
    for threads in 1..=4 {
        assert_eq!(run(threads), expected, "{threads} threads");
    }
}

/// A walk whose next position comes from the one before: `pos[i]` is read by iteration
/// `i + 1` to pick what it touches. No recording before the run knows those values, so the
/// plan runs the iterations on one worker, in order, instead of guessing.
#[strads::parallel_for(expect = "reconnaissance")]
fn walk_hits(step: &DistArray<u32, 1>, pos: &mut DistArray<u32, 1>, hits: &mut DistArray<u64, 1>) {
    for i in 1..pos.len() {
        pos[i] = (pos[i - 1] + step[i]) % hits.len() as u32;
        hits[pos[i] as usize] += 1;
    }
}

#[test]
fn subscripts_from_other_iterations_writes_run_in_order() {
    let n = 3000;
    let mut next = lcg(13);
    let step = DistArray::from_vec([n], (0..n).map(|_| (next() % 5000) as u32).collect()).unwrap();
    let run = |threads: usize| {
        let mut pos = DistArray::<u32, 1>::zeros([n]);
        let mut hits = DistArray::<u64, 1>::zeros([10_000]);
        for _ in 0..2 {
            let f = || walk_hits(&step, &mut pos, &mut hits);
            on(threads, f);
        }
        (pos.as_slice().to_vec(), hits.as_slice().to_vec())
    };
    let expected = run(0);
    for threads in 1..=4 {
        assert_eq!(run(threads), expected, "{threads} threads");
    }
}
