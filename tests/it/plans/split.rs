//! Components too large for one worker are split into pieces that wait only for the pieces
//! they depend on (STRADS-AP sect. 4.4, without locks): a loop over the edges of a grid
//! graph makes one conflict component per batch, which splits; every run equals the serial
//! replay of its recorded order, bit for bit, reductions and buffers included; one worker
//! equals the original loop; a panic inside a piece reaches the caller instead of leaving
//! the other workers waiting.

use strads::prelude::*;
use strads::testing::{record, replay, serial};

/// Diffusion along the edges of a graph: each edge pulls its two ends together. Returns
/// the total movement; counts the updates of every node in a buffer.
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

/// A `side` x `side` grid's edges, node by node: right neighbour, then the one below.
fn grid(side: usize) -> (DistArray<u32, 1>, DistArray<u32, 1>) {
    let (src, dst) = strads::generate::grid_edges(side);
    let n = src.len();
    (
        DistArray::from_vec([n], src).unwrap(),
        DistArray::from_vec([n], dst).unwrap(),
    )
}

fn start(nodes: usize) -> (DistArray<f32, 1>, DistArray<u32, 1>) {
    (
        DistArray::<f32, 1>::random([nodes], 11),
        DistArray::<u32, 1>::zeros([nodes]),
    )
}

fn field(plan: &str, name: &str) -> usize {
    plan.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name}= in {plan}"))
        .parse()
        .unwrap()
}

#[test]
fn grid_edges_split_and_equal_replay() {
    let side = 60;
    let (src, dst) = grid(side);
    let m = src.len();
    for threads in 2..=4 {
        let (mut x, mut visits) = start(side * side);
        let (moved, trace) = strads::with_threads(threads, || {
            record(|| {
                (0..3)
                    .map(|_| diffuse(&src, &dst, &mut x, &mut visits, m, 0.25))
                    .collect::<Vec<f64>>()
            })
        });
        let run = &trace.runs[0];
        let batches = field(&run.plan, "batches");
        assert_eq!(field(&run.plan, "split"), batches, "{}", run.plan);
        assert!(run.steps.len() > batches, "pieces take steps of their own");
        let mut ids = run.order();
        ids.sort();
        assert_eq!(ids, (0..m).collect::<Vec<_>>(), "every edge exactly once");
        // Every worker runs pieces: the split spreads the component.
        assert!(
            run.per_worker().iter().all(|w| w.len() > m / (2 * threads)),
            "{threads} threads"
        );
        let (mut x2, mut visits2) = start(side * side);
        let moved2 = replay(&trace, || {
            (0..3)
                .map(|_| diffuse(&src, &dst, &mut x2, &mut visits2, m, 0.25))
                .collect::<Vec<f64>>()
        });
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&moved), bits(&moved2), "{threads} threads");
        let fbits =
            |a: &DistArray<f32, 1>| a.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(fbits(&x), fbits(&x2), "{threads} threads");
        assert_eq!(visits, visits2, "{threads} threads");
        assert_eq!(
            visits.as_slice().iter().map(|&v| v as usize).sum::<usize>(),
            3 * 2 * m
        );
    }
}

#[test]
fn one_worker_equals_the_original_loop() {
    let side = 30;
    let (src, dst) = grid(side);
    let m = src.len();
    let (mut x, mut visits) = start(side * side);
    let moved = strads::with_threads(1, || diffuse(&src, &dst, &mut x, &mut visits, m, 0.25));
    let (mut xs, mut vs) = start(side * side);
    let moved_serial = serial(|| diffuse(&src, &dst, &mut xs, &mut vs, m, 0.25));
    assert_eq!(moved.to_bits(), moved_serial.to_bits());
    assert_eq!((x, visits), (xs, vs));
}

/// Panics on one edge: the worker running that piece unwinds, the others stop waiting.
#[strads::parallel_for(expect = "reconnaissance")]
fn diffuse_until(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    x: &mut DistArray<f32, 1>,
    m: usize,
    bad: usize,
) {
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        // Recording reads stand-ins (0.0) for `x`: only the real run panics.
        if e == bad && x[a] != 0.0 {
            panic!("edge {e} is bad");
        }
        let d = x[b] - x[a];
        x[a] += 0.25 * d;
        x[b] -= 0.25 * d;
    }
}

#[test]
fn a_panic_in_a_piece_reaches_the_caller() {
    let side = 60;
    let (src, dst) = grid(side);
    let m = src.len();
    // Edge 515 lies in worker 1's first piece of batch 0 (batches of 1024 edges, chunks of
    // about 512), which worker 0's last piece of that batch waits for.
    for bad in [10, 515, m / 2, m - 3] {
        let (mut x, _) = start(side * side);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            strads::with_threads(2, || diffuse_until(&src, &dst, &mut x, m, bad))
        }));
        let msg = r.expect_err("the panic reaches the caller");
        let msg = msg
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert_eq!(msg, format!("edge {bad} is bad"));
    }
}
