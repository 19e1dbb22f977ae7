//! `sync = "hybrid"`: the threads of a process share one replica of the arrays the loop
//! writes, without locks (STRADS-AP's hybrid mode, Hogwild within a process). Each
//! iteration reads a row once, on its first access, and at its end adds its changes to the
//! replica's current value with relaxed atomics: no data race, and one thread is exactly
//! the serial loop. Across threads the result depends on their timing, so these tests
//! check what holds whatever the timing: iterations that write disjoint rows give the
//! serial bits, concurrent adds to one element lose at most the updates whose commits
//! interleave, and training converges as the serial loop does.

use strads::prelude::*;
use strads::testing::{bits, plan_always, record, serial};

/// SGD matrix factorisation: every rating updates a row of `l` and a row of `r`, rows that
/// other ratings, on other threads, update too.
#[strads::parallel_for(sync = "hybrid", batch = 128, merge = strads::merge::sum)]
fn mf_hybrid(
    users: &DistArray<u32, 1>,
    items: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    l: &mut DistArray<f32, 2>,
    r: &mut DistArray<f32, 2>,
    lr: f32,
) {
    for n in 0..values.len() {
        let (u, i) = (users[n] as usize, items[n] as usize);
        let e = values[n] - dot(l.row(u), r.row(i));
        let lu = l.row(u).to_vec();
        axpy(lr * e, r.row(i), l.row_mut(u));
        axpy(lr * e, &lu, r.row_mut(i));
    }
}

/// Every iteration counts its key: many threads add to the same few elements.
#[strads::parallel_for(sync = "hybrid", batch = 512)]
fn count_keys(keys: &DistArray<u32, 1>, counts: &mut DistArray<f64, 1>) {
    for k in 0..keys.len() {
        counts[keys[k] as usize] += 1.0;
    }
}

/// Every iteration writes its own row only (reading it first): any timing gives the
/// serial loop's bits.
#[strads::parallel_for(sync = "hybrid", batch = 16, merge = strads::merge::sum)]
fn own_rows(x: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>) {
    for i in 0..out.shape()[0] {
        let before = out[[i, 0]];
        for (o, v) in out.row_mut(i).iter_mut().zip(x.row(i)) {
            *o = *o * 0.5 + v * before;
        }
    }
}

fn ratings(n: usize, users: usize, items: usize) -> [DistArray<f32, 1>; 3] {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut u = Vec::with_capacity(n);
    let mut i = Vec::with_capacity(n);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let (a, b) = (
            (next() % users as u64) as usize,
            (next() % items as u64) as usize,
        );
        u.push(a as f32);
        i.push(b as f32);
        v.push(((a % 5) as f32 + (b % 3) as f32) / 2.0);
    }
    let arr = |v: Vec<f32>| DistArray::from_vec([v.len()], v).expect("a vector");
    [arr(u), arr(i), arr(v)]
}

fn as_u32(a: &DistArray<f32, 1>) -> DistArray<u32, 1> {
    DistArray::from_fn([a.len()], |[k]| a[k] as u32)
}

fn rmse(
    users: &DistArray<u32, 1>,
    items: &DistArray<u32, 1>,
    values: &DistArray<f32, 1>,
    l: &DistArray<f32, 2>,
    r: &DistArray<f32, 2>,
) -> f64 {
    let se: f64 = (0..values.len())
        .map(|n| {
            let e = values[n] - dot(l.row(users[n] as usize), r.row(items[n] as usize));
            f64::from(e * e)
        })
        .sum();
    (se / values.len() as f64).sqrt()
}

#[test]
fn one_thread_is_the_serial_loop() {
    let [u, i, v] = ratings(4000, 60, 40);
    let (u, i) = (as_u32(&u), as_u32(&i));
    let (mut l0, mut r0) = (
        DistArray::<f32, 2>::random([60, 8], 1),
        DistArray::<f32, 2>::random([40, 8], 2),
    );
    let (mut l1, mut r1) = (l0.clone(), r0.clone());
    for _ in 0..3 {
        serial(|| mf_hybrid(&u, &i, &v, &mut l0, &mut r0, 0.02));
        plan_always(|| strads::with_threads(1, || mf_hybrid(&u, &i, &v, &mut l1, &mut r1, 0.02)));
    }
    assert_eq!(bits(&l1), bits(&l0));
    assert_eq!(bits(&r1), bits(&r0));
    let keys = DistArray::from_fn([5000], |[k]| (k * 7 % 13) as u32);
    let (mut want, mut got) = (DistArray::zeros([13]), DistArray::zeros([13]));
    serial(|| count_keys(&keys, &mut want));
    plan_always(|| strads::with_threads(1, || count_keys(&keys, &mut got)));
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn disjoint_rows_give_the_serial_bits_on_any_threads() {
    let x = DistArray::<f32, 2>::random([900, 5], 7);
    let mut want = DistArray::<f32, 2>::random([900, 5], 8);
    let start = want.clone();
    for _ in 0..2 {
        serial(|| own_rows(&x, &mut want));
    }
    for threads in 2..=4 {
        let mut got = start.clone();
        for _ in 0..2 {
            plan_always(|| strads::with_threads(threads, || own_rows(&x, &mut got)));
        }
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
    }
}

#[test]
fn concurrent_adds_count_every_commit_that_does_not_interleave() {
    // 40,000 adds of 1 to 4 elements from 4 threads. A commit adds its change to the value
    // it finds, so an update is lost only when two threads' commits of one element
    // interleave (a few instructions): nearly every add counts, none counts twice, and
    // every count stays a whole number.
    let keys = DistArray::from_fn([40_000], |[k]| (k % 4) as u32);
    let mut counts = DistArray::<f64, 1>::zeros([4]);
    plan_always(|| strads::with_threads(4, || count_keys(&keys, &mut counts)));
    let total: f64 = counts.as_slice().iter().sum();
    assert!(total <= 40_000.0, "{total} counted, more than the adds");
    assert!(total >= 20_000.0, "{total} counted: most adds were lost");
    for &c in counts.as_slice() {
        assert!(c.fract() == 0.0 && c <= 10_000.0, "{c}");
    }
}

#[test]
fn shared_replicas_train_as_the_serial_loop_does() {
    let [u, i, v] = ratings(20_000, 200, 150);
    let (u, i) = (as_u32(&u), as_u32(&i));
    let (l, r) = (
        DistArray::<f32, 2>::random([200, 8], 3),
        DistArray::<f32, 2>::random([150, 8], 4),
    );
    let (mut ls, mut rs) = (l.clone(), r.clone());
    let (mut lh, mut rh) = (l.clone(), r.clone());
    let before = rmse(&u, &i, &v, &l, &r);
    for _ in 0..8 {
        serial(|| mf_hybrid(&u, &i, &v, &mut ls, &mut rs, 0.02));
        plan_always(|| strads::with_threads(3, || mf_hybrid(&u, &i, &v, &mut lh, &mut rh, 0.02)));
    }
    let (serial_rmse, hybrid_rmse) = (rmse(&u, &i, &v, &ls, &rs), rmse(&u, &i, &v, &lh, &rh));
    assert!(
        hybrid_rmse.is_finite() && serial_rmse < before / 2.0,
        "{before} {serial_rmse}"
    );
    assert!(
        (hybrid_rmse - serial_rmse).abs() < 0.05 * serial_rmse,
        "hybrid {hybrid_rmse} against serial {serial_rmse} (from {before})"
    );
}

#[test]
fn the_plan_line_says_the_loop_is_not_reproducible() {
    let x = DistArray::<f32, 2>::random([100, 5], 7);
    let mut out = DistArray::<f32, 2>::zeros([100, 5]);
    let ((), trace) = plan_always(|| strads::with_threads(2, || record(|| own_rows(&x, &mut out))));
    let plan = &trace.runs[0].plan;
    assert!(
        plan.ends_with(
            "sync=hybrid replicas=out every=16 (data-parallel: the threads of a process share \
             its replica without locks, the processes' replicas merged by \
             strads::merge::sum in rank order; not reproducible, not equal to a serial order)"
        ),
        "{plan}"
    );
}
