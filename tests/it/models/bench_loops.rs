//! The benches' own loops (`benches/common/`, compiled in through `#[path]`, as the benches
//! do): the variants of the hand-written SGD-MF loop keep its arithmetic and order, so its
//! result bit for bit (the prefetching one runs the only `unsafe` of the benches), and the
//! ring the `sgd_mf` bench rebuilds over strads' blocks equals strads' own 2-thread run,
//! and the AdaGrad loop `peers --rule adagrad` times (LIBMF's two groups of factors, the
//! first epoch on the first group alone) equals its hand-written counterpart at one thread
//! and the replay of its recorded order at more.
//! No timing here.

#[path = "../../../benches/common/sgd.rs"]
mod sgd;

#[path = "../../../benches/common/ring.rs"]
mod ring;

use ring::{RingPlan, Start, ring_epoch};
use sgd::{
    SLOW, adagrad_epoch, aligned_copy, init_factors, serial_adagrad_epoch, serial_epoch,
    serial_epoch_dot_before, serial_epoch_prefetch, sgd_epoch,
};
use strads::prelude::*;

const K: usize = 8;
const LR: f32 = 0.01;
const REG: f32 = 0.05;

fn ratings() -> SparseArray<f32, 2> {
    strads::generate::low_rank_ratings(&strads::generate::LowRankConfig {
        users: 300,
        items: 200,
        ratings: 6_000,
        ..Default::default()
    })
}

fn flat(r: &SparseArray<f32, 2>) -> Vec<(u32, u32, f32)> {
    r.iter()
        .map(|([u, i], &v)| (u as u32, i as u32, v))
        .collect()
}

#[test]
fn serial_variants_equal_the_plain_loop_bit_for_bit() {
    let r = ratings();
    let [users, items] = r.shape();
    let data = flat(&r);
    let (w0, h0) = (init_factors(users, K, 1), init_factors(items, K, 2));
    let run = |f: &dyn Fn(&mut [f32], &mut [f32])| {
        let (mut w, mut h) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
        for _ in 0..3 {
            f(&mut w, &mut h);
        }
        (w, h)
    };
    let plain = run(&|w, h| serial_epoch(&data, w, h, K, LR, REG));
    for ahead in [1, 4, 16, 10_000] {
        let pf = run(&|w, h| serial_epoch_prefetch(&data, w, h, K, LR, REG, ahead));
        assert_eq!(pf, plain, "prefetch {ahead} ahead");
    }
    let before = run(&|w, h| serial_epoch_dot_before(&data, w, h, K, LR, REG));
    assert_eq!(before, plain, "the dot product as it was");
    // Aligned copies: the same values, the first element on a 64-byte boundary.
    let (mut wa, ow) = aligned_copy(w0.as_slice(), 64);
    let (mut ha, oh) = aligned_copy(h0.as_slice(), 64);
    assert_eq!(wa[ow..].as_ptr() as usize % 64, 0);
    let (nw, nh) = (w0.len(), h0.len());
    for _ in 0..3 {
        serial_epoch(
            &data,
            &mut wa[ow..ow + nw],
            &mut ha[oh..oh + nh],
            K,
            LR,
            REG,
        );
    }
    assert_eq!((wa[ow..ow + nw].to_vec(), ha[oh..oh + nh].to_vec()), plain);
}

#[test]
fn rebuilt_ring_equals_strads_at_two_threads() {
    let r = ratings();
    let [users, items] = r.shape();
    let data = flat(&r);
    let (w0, h0) = (init_factors(users, K, 1), init_factors(items, K, 2));
    let (mut ws, mut hs) = (w0.clone(), h0.clone());
    let (_, trace) = strads::testing::record(|| {
        strads::with_threads(2, || sgd_epoch(&r, &mut ws, &mut hs, LR, REG));
    });
    let (plan, transposed) = RingPlan::from_steps(&trace.runs[0].steps, &data, r.shape());
    let pool = |n: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .expect("a rayon pool")
    };
    let (two, one) = (pool(2), pool(1));
    for (start, pool, ahead) in [
        (Start::Broadcast, &two, 0),
        (Start::CallerJoins, &one, 0),
        (Start::CallerJoins, &one, 3),
    ] {
        let (mut w, mut h) = (w0.clone(), h0.clone());
        ring_epoch(
            &plan, start, pool, transposed, ahead, &mut w, &mut h, LR, REG,
        );
        assert_eq!(w.as_slice(), ws.as_slice(), "{start:?}, prefetch {ahead}");
        assert_eq!(h.as_slice(), hs.as_slice(), "{start:?}, prefetch {ahead}");
    }
}

/// LIBMF's two-group AdaGrad: k = 20 makes two groups, the second of 12 factors padded to
/// 16 (LIBMF pads k to a multiple of 8), and the first epoch updates the first group only.
#[test]
fn adagrad_loop_equals_hand_written_and_its_replay() {
    const K: usize = 20;
    let r = ratings();
    let [users, items] = r.shape();
    let data = flat(&r);
    let (w0, h0) = (init_factors(users, K, 1), init_factors(items, K, 2));
    let ones = |n: usize| DistArray::<f32, 2>::from_fn([n, 2], |_| 1.0);
    let lr = 0.1;
    // By hand, flat arrays; after the first epoch, the first epoch alone.
    let (mut w, mut h) = (w0.as_slice().to_vec(), h0.as_slice().to_vec());
    let (mut gw, mut gh) = (vec![1.0f32; 2 * users], vec![1.0f32; 2 * items]);
    let mut first = None;
    for epoch in 0..3 {
        let fast = epoch > 0;
        serial_adagrad_epoch(
            &data,
            (&mut w, &mut h),
            (&mut gw, &mut gh),
            K,
            (lr, REG),
            fast,
        );
        first.get_or_insert_with(|| (w.clone(), h.clone(), gw.clone()));
    }
    // The first epoch: factors past the first 8 and the second sums untouched.
    let (w1, h1, gw1) = first.expect("one epoch ran");
    for (a, b) in [(&w1, w0.as_slice()), (&h1, h0.as_slice())] {
        for (x, y) in a.chunks(K).zip(b.chunks(K)) {
            assert_eq!(
                x[SLOW..],
                y[SLOW..],
                "the first epoch leaves the second group"
            );
        }
    }
    assert!(gw1.chunks(2).all(|g| g[1] == 1.0), "and its sums");
    // Every row with a rating has added to both sums; the others keep their 1s.
    for (u, g) in gw.chunks(2).enumerate() {
        let rated = data.iter().any(|&(x, _, _)| x as usize == u);
        assert_eq!((g[0] > 1.0, g[1] > 1.0), (rated, rated), "user {u}");
    }
    for threads in [1, 2, 3] {
        let (mut ws, mut hs, mut gws, mut ghs) = (w0.clone(), h0.clone(), ones(users), ones(items));
        let ((), trace) = strads::with_threads(threads, || {
            strads::testing::record(|| {
                for epoch in 0..3 {
                    adagrad_epoch(&r, &mut ws, &mut hs, &mut gws, &mut ghs, lr, REG, epoch > 0);
                }
            })
        });
        if threads == 1 {
            assert_eq!(ws.as_slice(), &w[..], "1 thread: w");
            assert_eq!(hs.as_slice(), &h[..], "1 thread: h");
            assert_eq!(gws.as_slice(), &gw[..], "1 thread: gw");
            assert_eq!(ghs.as_slice(), &gh[..], "1 thread: gh");
        } else {
            assert_ne!(ws.as_slice(), &w[..], "{threads} threads run another order");
        }
        let (mut wr, mut hr, mut gwr, mut ghr) = (w0.clone(), h0.clone(), ones(users), ones(items));
        strads::testing::replay(&trace, || {
            for epoch in 0..3 {
                adagrad_epoch(&r, &mut wr, &mut hr, &mut gwr, &mut ghr, lr, REG, epoch > 0);
            }
        });
        assert_eq!(wr.as_slice(), ws.as_slice(), "{threads} threads: w");
        assert_eq!(hr.as_slice(), hs.as_slice(), "{threads} threads: h");
        assert_eq!(gwr.as_slice(), gws.as_slice(), "{threads} threads: gw");
        assert_eq!(ghr.as_slice(), ghs.as_slice(), "{threads} threads: gh");
    }
}
