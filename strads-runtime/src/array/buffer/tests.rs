//! Write-back buffers: merges, application points, averaged replicas.

use super::*;
use crate::array::view::SharedMut;

#[test]
fn merges_each_workers_difference_in_order() {
    let mut a = DistArray::<i64, 1>::from_fn([3], |[i]| i as i64 * 10);
    let b = Buffered::new(&mut a, 3);
    b.with(0, |c| c[0] += 1);
    b.with(2, |c| {
        c[0] += 5;
        c[2] -= 3;
    });
    assert_eq!(b.original().as_slice(), &[0, 10, 20]);
    b.finish();
    assert_eq!(a.as_slice(), &[6, 10, 17]);
}

#[test]
fn application_points_share_the_updates() {
    let mut a = DistArray::<i64, 1>::zeros([2]);
    let mut b = Buffered::new(&mut a, 2);
    b.with(0, |c| c[0] += 1);
    b.with(1, |c| c[1] += 2);
    // Each worker sees only its own updates until the buffer is applied ...
    assert_eq!(b.with(0, |c| (c[0], c[1])), (1, 0));
    let parked = Parked::exclusive(&mut b);
    b.apply(&parked);
    // ... and everyone's afterwards.
    assert_eq!(b.with(0, |c| (c[0], c[1])), (1, 2));
    assert_eq!(b.with(1, |c| (c[0], c[1])), (1, 2));
    b.with(1, |c| c[0] += 10);
    b.finish();
    assert_eq!(a.as_slice(), &[11, 2]);
}

#[test]
fn apply_sees_merged_updates_and_leaves_the_buffer() {
    let mut g = DistArray::<f32, 1>::zeros([3]);
    let mut b = Buffered::new(&mut g, 2);
    b.with(0, |c| c[1] += 2.0);
    b.with(1, |c| {
        c[1] += 0.5;
        c[2] -= 1.0;
    });
    let mut seen = Vec::new();
    let parked = Parked::exclusive(&mut b);
    b.apply_with(&parked, |e, u| seen.push((e, u)));
    assert_eq!(seen, vec![(1, 2.5), (2, -1.0)]);
    // The copies start again from the unchanged array.
    assert_eq!(b.with(1, |c| (c[1], c[2])), (0.0, 0.0));
    b.with(0, |c| c[0] += 3.0);
    let mut seen = Vec::new();
    b.finish_apply(|e, u| seen.push((e, u)));
    assert_eq!(seen, vec![(0, 3.0)]);
    assert_eq!(g.as_slice(), &[0.0; 3]);
    let before = g.clone();
    g[0] += 4.0;
    let mut seen = Vec::new();
    Buffered::apply_serial(&mut g, &before, |e, u| seen.push((e, u)));
    assert_eq!(seen, vec![(0, 4.0)]);
    assert_eq!(g.as_slice(), &[0.0; 3]);
}

#[test]
fn averaged_copies_add_the_mean_difference() {
    let mut a = DistArray::<f64, 1>::from_vec([3], vec![1.0, 2.0, 3.0]).unwrap();
    let buf = Buffered::new(&mut a, 2).averaged();
    buf.with(0, |c| c[0] += 4.0);
    buf.with(1, |c| {
        c[0] += 2.0;
        c[2] = 0.0;
    });
    buf.finish();
    // [1 + (4 + 2) / 2, 2, 3 + (0 + -3) / 2]
    assert_eq!(a.as_slice(), &[4.0, 2.0, 1.5]);
    let mut one = DistArray::<f32, 1>::from_vec([1], vec![1e8]).unwrap();
    let buf = Buffered::new(&mut one, 1).averaged();
    buf.with(0, |c| c[0] = 0.1);
    buf.finish();
    assert_eq!(one.as_slice(), &[0.1], "one copy keeps its value exactly");
}

#[test]
fn one_worker_keeps_its_copy_exactly() {
    let mut a = DistArray::<f32, 1>::from_fn([2], |_| 0.1);
    let b = Buffered::new(&mut a, 2);
    b.with(0, |c| c[0] += 0.2);
    b.finish();
    assert_eq!(a[0], 0.1f32 + 0.2);
}

#[test]
fn threads_update_their_own_copies_at_once() {
    let mut a = DistArray::<u64, 2>::zeros([4, 3]);
    let b = Buffered::new(&mut a, 4);
    std::thread::scope(|s| {
        for w in 0..4 {
            let b = &b;
            s.spawn(move || {
                for _ in 0..1000 {
                    b.with(w, |c| {
                        c[[w, 0]] += 1;
                        c[[0, 2]] += 1;
                    });
                }
            });
        }
    });
    b.finish();
    assert_eq!(a[[0, 2]], 4000);
    assert_eq!((0..4).map(|w| a[[w, 0]]).sum::<u64>(), 4000);
}

#[test]
fn an_array_is_lent_once_per_application_point() {
    let mut a = DistArray::<f32, 1>::zeros([3]);
    {
        let shared = SharedMut::new(&mut a);
        let mut token_source = 0u8;
        let first = Parked::exclusive(&mut token_source);
        shared.exclusive(&first)[1] = 2.0;
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.exclusive(&first)[0] = 1.0;
        }));
        assert!(
            again.is_err(),
            "a second slice at the same point would alias the first"
        );
        // The next application point (of the same call) lends it again.
        let next = first.again();
        shared.exclusive(&next)[0] = 1.0;
        // Another call's token does not: its workers are not this call's.
        let mut elsewhere = 0u8;
        let other = Parked::exclusive(&mut elsewhere);
        let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.exclusive(&other)[2] = 3.0;
        }));
        assert_eq!(
            taken
                .expect_err("another call's token")
                .downcast_ref::<&str>()
                .copied(),
            Some(
                "strads: an array lent to one loop call was taken with another call's \
                 token (please report it)"
            )
        );
    }
    assert_eq!(a.as_slice(), &[1.0, 2.0, 0.0]);
}
