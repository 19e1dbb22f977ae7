//! `ordered` loops planned by reconnaissance keep every conflicting pair of iterations in
//! serial order, whatever the plan: batches, task groups and the pieces of split
//! components. Each loop equals the original serial loop bit for bit at 1-4 threads.

use strads::prelude::*;
use strads::testing::{bits, record, serial};

/// A running sum through an index array: each step adds the previous slot into the next.
#[strads::parallel_for(ordered, expect = "reconnaissance")]
fn running_sum(idx: &DistArray<u32, 1>, out: &mut DistArray<f64, 1>, n: usize) {
    for i in 1..n {
        let (a, b) = (idx[i] as usize, idx[i - 1] as usize);
        out[a] = out[a] * 0.5 + out[b] + 1.0;
    }
}

/// A Gauss-Seidel sweep over a graph's edges, read through index arrays: each edge moves
/// its head towards its tail, using the values earlier edges of this sweep wrote.
#[strads::parallel_for(ordered, expect = "reconnaissance")]
fn gauss_seidel(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    x: &mut DistArray<f32, 1>,
    m: usize,
) {
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        x[b] = 0.5 * x[b] + 0.25 * x[a] + 0.125;
    }
}

fn array(v: Vec<u32>) -> DistArray<u32, 1> {
    let n = v.len();
    DistArray::from_vec([n], v).unwrap()
}

fn field(plan: &str, name: &str) -> usize {
    plan.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name}= in {plan}"))
        .parse()
        .unwrap()
}

#[test]
fn running_sum_through_an_index_array_equals_serial() {
    let n = 3000;
    let idx = array((0..n as u32).map(|i| (i * 7919 + i / 3) % 700).collect());
    let start = DistArray::<f64, 1>::random([700], 3);
    let mut want = start.clone();
    serial(|| running_sum(&idx, &mut want, n));
    for threads in 1..=4 {
        let mut got = start.clone();
        strads::with_threads(threads, || {
            running_sum(&idx, &mut got, n);
            // Again, with the plan cached.
            let mut again = start.clone();
            running_sum(&idx, &mut again, n);
            assert_eq!(
                again.as_slice(),
                want.as_slice(),
                "{threads} threads, cached plan"
            );
        });
        let (g, w): (Vec<u64>, Vec<u64>) = (
            got.as_slice().iter().map(|v| v.to_bits()).collect(),
            want.as_slice().iter().map(|v| v.to_bits()).collect(),
        );
        assert_eq!(g, w, "{threads} threads");
    }
}

/// A grid's edges, node by node: one conflict component that unordered loops split.
#[test]
fn gauss_seidel_over_grid_edges_equals_serial() {
    let side = 40;
    let (src, dst) = strads::generate::grid_edges(side);
    let m = src.len();
    let (src, dst) = (array(src), array(dst));
    let start = DistArray::<f32, 1>::random([side * side], 5);
    let mut want = start.clone();
    serial(|| {
        for _ in 0..2 {
            gauss_seidel(&src, &dst, &mut want, m)
        }
    });
    for threads in 1..=4 {
        let mut got = start.clone();
        strads::with_threads(threads, || {
            for _ in 0..2 {
                gauss_seidel(&src, &dst, &mut got, m)
            }
        });
        assert_eq!(
            bits(got.as_slice()),
            bits(want.as_slice()),
            "{threads} threads"
        );
    }
}

/// Two chains joined by their last edge: an ordered split pays here (the second chunk
/// waits only at its end), so pieces really run side by side, and still equal serial.
#[test]
fn an_ordered_split_that_pays_equals_serial() {
    let h = 500u32;
    let mut src: Vec<u32> = (0..h).collect();
    let mut dst: Vec<u32> = (1..=h).collect();
    src.extend((0..h - 1).map(|e| 1000 + e));
    dst.extend((0..h - 1).map(|e| 1001 + e));
    src.push(h);
    dst.push(1000 + h - 1);
    let m = src.len();
    let (src, dst) = (array(src), array(dst));
    let start = DistArray::<f32, 1>::random([1000 + h as usize], 9);
    let mut want = start.clone();
    serial(|| gauss_seidel(&src, &dst, &mut want, m));
    for threads in 1..=4 {
        let mut got = start.clone();
        let ((), trace) =
            strads::with_threads(threads, || record(|| gauss_seidel(&src, &dst, &mut got, m)));
        if threads == 2 {
            assert_eq!(
                field(&trace.runs[0].plan, "split"),
                1,
                "{}",
                trace.runs[0].plan
            );
        }
        assert_eq!(
            bits(got.as_slice()),
            bits(want.as_slice()),
            "{threads} threads"
        );
    }
}
