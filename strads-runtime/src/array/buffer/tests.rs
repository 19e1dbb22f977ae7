//! Write-back buffers: merges, application points, averaged replicas.

use super::*;
use crate::array::access::{ArrayMut, ArrayRef};
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

/// A block of worker `worker` of a call whose first local worker is `home`.
struct TestLender {
    worker: usize,
    home: usize,
    call: u64,
}
impl crate::sync::sealed::Sealed for TestLender {}
impl Lender for TestLender {
    fn lender(&self) -> (usize, u64) {
        (self.worker, self.call)
    }
    fn home(&self) -> usize {
        self.home
    }
}

#[test]
fn hybrid_views_share_a_replica_and_commit_each_iteration() {
    let mut a = DistArray::<f32, 2>::from_fn([40, 3], |[i, j]| (i * 3 + j) as f32);
    let b = Buffered::new(&mut a, 2).averaged().hybrid().named("a");
    let call = crate::sync::next_call();
    let (l0, l1) = (
        TestLender {
            worker: 0,
            home: 0,
            call,
        },
        TestLender {
            worker: 1,
            home: 0,
            call,
        },
    );
    let mut v0 = b.shared_view_in(&l0);
    let mut v1 = b.shared_view_in(&l1);
    // An iteration sees its own writes at once; another view sees them once committed.
    v0.row_mut(2)[1] += 100.0;
    assert_eq!(v0[[2, 1]], 107.0);
    assert_eq!(v1.row(2), &[6.0, 7.0, 8.0]);
    v0.commit();
    v1.commit();
    assert_eq!(v1.row(2), &[6.0, 107.0, 8.0]);
    // Both change one element in the same iteration: each adds its change to the value it
    // finds at its commit.
    v1[[2, 1]] += 1.0;
    v0[[2, 1]] -= 7.0;
    v0.commit();
    v1.commit();
    assert_eq!(v0[[2, 1]], 101.0);
    // Many rows in one iteration (the table grows), read-only rows change nothing.
    let mut sum = 0.0;
    for i in 0..40 {
        sum += v0.row(i)[0];
        v0[[i, 2]] += 1.0;
    }
    assert_eq!(sum, (0..40).map(|i| (i * 3) as f32).sum::<f32>());
    v0.commit();
    assert_eq!(v1.row(39), &[117.0, 118.0, 120.0]);
    // An index outside names the array.
    let outside = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| v1[[40, 0]]));
    assert!(outside.is_err());
    // No exclusive view while shared ones live.
    let exclusive = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.with(0, |_| ())));
    assert!(exclusive.is_err());
    drop((v0, v1));
    b.finish();
    assert_eq!(a[[2, 1]], 101.0);
    assert_eq!(a[[39, 2]], 120.0);
    assert_eq!(a[[0, 0]], 0.0);
}

#[test]
fn hybrid_views_from_threads_never_count_an_add_twice() {
    let mut a = DistArray::<u64, 1>::zeros([3]);
    let b = Buffered::new(&mut a, 4).merged(merge::sum).hybrid();
    let call = crate::sync::next_call();
    std::thread::scope(|s| {
        for w in 0..4 {
            let b = &b;
            s.spawn(move || {
                let mut v = b.shared_view_in(&TestLender {
                    worker: w,
                    home: 0,
                    call,
                });
                for k in 0..5000 {
                    v[k % 3] += 1;
                    v.commit();
                }
            });
        }
    });
    b.finish();
    let total: u64 = a.as_slice().iter().sum();
    assert!((10_000..=20_000).contains(&total), "{total}");
}

#[test]
fn a_shared_view_waits_for_no_exclusive_view() {
    let mut a = DistArray::<f64, 1>::zeros([2]);
    let b = Buffered::new(&mut a, 1).averaged().hybrid();
    let call = crate::sync::next_call();
    let r = b.with(0, |_| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            b.shared_view_in(&TestLender {
                worker: 0,
                home: 0,
                call,
            });
        }))
    });
    assert!(r.is_err(), "a shared view beside an exclusive one");
    // Rows of no elements.
    let mut e = DistArray::<f32, 2>::zeros([3, 0]);
    let empty = Buffered::new(&mut e, 1).averaged().hybrid();
    let mut v = empty.shared_view_in(&TestLender {
        worker: 0,
        home: 0,
        call,
    });
    assert!(v.row(1).is_empty() && v.row_mut(2).is_empty());
    v.commit();
    drop(v);
    empty.finish();
    // A buffer that is not hybrid lends no shared view.
    let mut c = DistArray::<f64, 1>::zeros([2]);
    let plain = Buffered::new(&mut c, 1).averaged();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        plain.shared_view_in(&TestLender {
            worker: 0,
            home: 0,
            call,
        });
    }));
    assert!(r.is_err());
}

#[test]
fn finish_merges_only_what_changed_since_the_last_merge() {
    // A merge function that is not the identity on no change: called once per merge.
    fn halve(value: f64, summed: f64, _: usize) -> f64 {
        value * 0.5 + summed
    }
    let mut a = DistArray::<f64, 1>::from_fn([1], |_| 8.0);
    let mut b = Buffered::new(&mut a, 2).merged(halve);
    b.with(1, |c| c[0] += 2.0);
    let parked = Parked::exclusive(&mut b);
    b.apply(&parked);
    b.finish();
    assert_eq!(a[0], 8.0 * 0.5 + 2.0);
    // A change after the last merge is merged by `finish`.
    let mut a = DistArray::<f64, 1>::from_fn([1], |_| 8.0);
    let mut b = Buffered::new(&mut a, 2).merged(halve);
    let parked = Parked::exclusive(&mut b);
    b.apply(&parked);
    b.with(1, |c| c[0] += 2.0);
    b.finish();
    assert_eq!(a[0], (8.0 * 0.5) * 0.5 + 2.0);
}

#[test]
fn hybrid_workers_share_one_copy_through_with_too() {
    let mut a = DistArray::<u64, 1>::from_fn([2], |_| 10);
    let b = Buffered::new(&mut a, 3).merged(merge::sum).hybrid();
    b.with(2, |c| c[0] += 5);
    b.with(1, |c| c[1] -= 3);
    assert_eq!(b.with(0, |c| (c[0], c[1])), (15, 7));
    b.finish();
    assert_eq!(a.as_slice(), &[15, 7]);
}

#[test]
fn hybrid_integers_decrease_below_another_threads_value_without_overflow() {
    // Every commit adds its change to the value it finds: a decrease onto a value another
    // thread raised meanwhile wraps through the change (a negative `new - old`), as
    // integer arithmetic does, instead of overflowing.
    let mut a = DistArray::<u64, 1>::from_fn([1], |_| 100);
    let b = Buffered::new(&mut a, 2).merged(merge::sum).hybrid();
    let call = crate::sync::next_call();
    let lender = |w| TestLender {
        worker: w,
        home: 0,
        call,
    };
    let (mut v0, mut v1) = (b.shared_view_in(&lender(0)), b.shared_view_in(&lender(1)));
    // Both read 100; v0 adds 50 and commits; v1 takes 30 away and commits onto 150.
    v0[0] += 50;
    v1[0] -= 30;
    v0.commit();
    v1.commit();
    assert_eq!(v0[0], 120);
    drop((v0, v1));
    b.finish();
    assert_eq!(a[0], 120);
}

#[test]
fn unsigned_replicas_below_their_base_merge_by_wrapping() {
    // Three replicas (a tree with an inner node) of a `u32` array merged by `sum`, and a
    // plain buffer of two: copies below the base give differences only wrapping carries.
    let mut a = DistArray::<u32, 1>::from_fn([2], |_| 5);
    let b = Buffered::new(&mut a, 3).merged(super::merge::sum);
    b.with(0, |c| c[0] -= 2);
    b.with(1, |c| c[0] += 1);
    b.with(2, |c| c[1] -= 5);
    b.finish();
    assert_eq!(a.as_slice(), &[4, 0]);
    let mut a = DistArray::<u8, 1>::from_fn([1], |_| 200);
    let b = Buffered::new(&mut a, 2);
    b.with(0, |c| c[0] -= 150);
    b.with(1, |c| c[0] += 50);
    b.finish();
    assert_eq!(a[0], 100);
}

#[test]
fn a_copy_never_lent_is_never_made_and_merges_as_the_value() {
    // Two copies of a plain buffer and of `sync` replicas; worker 1 runs nothing in round 0
    // (in `idle`: at all). A copy never made merges as one lent and left unchanged would,
    // bit for bit: worker 0 turns element 0 (`+0.0`) into `-0.0`, which worker 1's
    // difference from the value, `+0.0`, makes `+0.0` again in the plain buffer's sum (a
    // merge that skipped the copy would keep `-0.0`). When worker 1 first runs in round 1
    // its copy is made from the merged value (it reads element 1, which round 0 changed),
    // not from the array as the call began.
    let init = DistArray::<f32, 1>::from_fn([4], |[i]| [0.0, 1.5, 0.1, 3e7][i]);
    for sync in [true, false] {
        let run = |idle: bool, lend_idle: bool| {
            let mut a = init.clone();
            let mut b = Buffered::new(&mut a, 2);
            if sync {
                b = b.averaged();
            }
            let call = crate::sync::next_call();
            b.with(0, |c| {
                c[0] = -0.0;
                c[1] += 2.0;
            });
            if lend_idle {
                b.with(1, |_| ());
            }
            b.apply(&Parked::next(call, None));
            let made = b.copies[1].made.is_completed();
            b.with(0, |c| c[1] += 0.25);
            if !idle {
                b.with(1, |c| c[2] += c[1] + 1.0);
            }
            b.apply(&Parked::next(call, None));
            b.finish();
            (
                a.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                made,
            )
        };
        let (lent, made_lent) = run(false, true);
        let (late, made_late) = run(false, false);
        assert_eq!(late, lent, "sync: {sync}");
        assert!(made_lent && !made_late);
        assert_eq!(late[0], 0.0f32.to_bits(), "sync: {sync}");
        let (idle, _) = run(true, false);
        let (idle_lent, _) = run(true, true);
        assert_eq!(idle, idle_lent, "sync: {sync}");
    }
}

#[test]
fn merges_and_updates_span_chunks() {
    // Past `MERGE_CHUNK` elements, at the chunks' edges: a plain buffer's merge and an
    // apply function's updates, element by element as written out.
    let n = 2 * MERGE_CHUNK + 7;
    let at = [0, MERGE_CHUNK - 1, MERGE_CHUNK, 2 * MERGE_CHUNK, n - 1];
    let touch = |b: &Buffered<'_, i64, 1>| {
        for (w, add) in [(0, 1), (1, 10), (2, 100)] {
            b.with(w, |c| {
                for &e in &at {
                    c[e] += add * (e as i64 + 1);
                }
            });
        }
    };
    let mut a = DistArray::<i64, 1>::from_fn([n], |[i]| i as i64);
    let b = Buffered::new(&mut a, 3);
    touch(&b);
    b.finish();
    for (e, &x) in a.as_slice().iter().enumerate() {
        let added = if at.contains(&e) {
            111 * (e as i64 + 1)
        } else {
            0
        };
        assert_eq!(x, e as i64 + added, "element {e}");
    }
    let mut g = DistArray::<i64, 1>::zeros([n]);
    let b = Buffered::new(&mut g, 3);
    touch(&b);
    let mut seen = Vec::new();
    b.finish_apply(|e, u| seen.push((e, u)));
    let expected: Vec<(usize, i64)> = at.iter().map(|&e| (e, 111 * (e as i64 + 1))).collect();
    assert_eq!(seen, expected);
    assert!(g.as_slice().iter().all(|&x| x == 0));
}
