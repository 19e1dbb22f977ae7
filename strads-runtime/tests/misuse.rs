//! Safe code cannot make two workers' views alias: a block gets one view per array, a
//! `SharedMut` serves one array of one call. Misuse panics with a clear message instead
//! of racing; the valid path still runs.

use std::borrow::Cow;

use strads_analysis::{Access, AccessKind, ArraySpec, LoopSpec, Name, SpaceKind, Subscript};
use strads_runtime::{Buffered, Call, DistArray, LoopState, RangeSpace, SharedMut};

/// `n` workers, each call running its plan (the views under test), however small.
fn with_threads<R>(n: usize, f: impl FnOnce() -> R) -> R {
    strads_runtime::testing::plan_always(|| strads_runtime::with_threads(n, f))
}

/// `for i in 0..n { a[i] += 1; b[i] += 1 }`: 1D, both arrays split by `i`.
fn state() -> &'static LoopState {
    let arr = |name: &'static str| ArraySpec {
        name: Cow::Borrowed(name),
        rank: 1,
        mutable: true,
        additive: false,
        steers: false,
    };
    let acc = |array, kind| Access {
        array,
        kind,
        subscripts: Cow::Owned(vec![Subscript::affine(&[1], 0)]),
        line: 0,
    };
    Box::leak(Box::new(LoopState::new(LoopSpec {
        name: Cow::Borrowed("bump"),
        dims: Cow::Owned(vec![Name::Borrowed("i")]),
        space: SpaceKind::Range,
        arrays: Cow::Owned(vec![arr("a"), arr("b")]),
        accesses: Cow::Owned(vec![
            acc(0, AccessKind::Read),
            acc(0, AccessKind::Write),
            acc(1, AccessKind::Read),
            acc(1, AccessKind::Write),
        ]),
        ordered: false,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    })))
}

fn message(r: std::thread::Result<()>) -> String {
    let e = r.expect_err("misuse must panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

const N: usize = 64;

#[test]
fn one_view_per_array_per_block() {
    for threads in 1..=3 {
        let state = state();
        let (mut a, mut b) = (
            DistArray::<u32, 1>::zeros([N]),
            DistArray::<u32, 1>::zeros([N]),
        );
        let got = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || {
                with_threads(threads, || {
                    let shapes: [&[usize]; 2] = [&[N], &[N]];
                    let (sa, _sb) = (SharedMut::new(&mut a), SharedMut::new(&mut b));
                    let _ = Call::new(state, &shapes).run(&RangeSpace::new(0, N), |blk| {
                        let mut first = blk.view_mut(&sa, 0);
                        let mut second = blk.view_mut(&sa, 0);
                        blk.for_each(|i| {
                            let x = &mut first[i];
                            second[i] += 1;
                            *x += 1;
                        });
                    });
                })
            },
        )));
        assert_eq!(
            got,
            "strads: a second view of `a` in one block of loop `bump` would alias the first \
             (please report it)",
            "{threads} threads"
        );
    }
}

#[test]
fn one_shared_array_serves_one_array_of_one_call() {
    for threads in 1..=3 {
        let state = state();
        let mut a = DistArray::<u32, 1>::zeros([N]);
        let got = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || {
                with_threads(threads, || {
                    let shapes: [&[usize]; 2] = [&[N], &[N]];
                    let sa = SharedMut::new(&mut a);
                    let _ = Call::new(state, &shapes).run(&RangeSpace::new(0, N), |blk| {
                        let mut as_a = blk.view_mut(&sa, 0);
                        let mut as_b = blk.view_mut(&sa, 1);
                        blk.for_each(|i| {
                            as_a[i] += 1;
                            as_b[N - 1 - i] += 1;
                        });
                    });
                })
            },
        )));
        assert_eq!(
            got,
            "strads: a SharedMut lent to another array or another call was given as `b` of loop \
             `bump`: each is lent to one array of one call (please report it)",
            "{threads} threads"
        );
        // The same SharedMut in a second call is refused as well.
        let mut c = DistArray::<u32, 1>::zeros([N]);
        let again = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || {
                with_threads(threads, || {
                    let shapes: [&[usize]; 2] = [&[N], &[N]];
                    let sc = SharedMut::new(&mut c);
                    for _ in 0..2 {
                        let _ = Call::new(state, &shapes).run(&RangeSpace::new(0, N), |blk| {
                            let mut v = blk.view_mut(&sc, 0);
                            blk.for_each(|i| v[i] += 1);
                        });
                    }
                })
            },
        )));
        assert!(
            again.contains("lent to another array or another call"),
            "{again}"
        );
    }
}

#[test]
fn the_valid_path_runs() {
    for threads in 1..=3 {
        let state = state();
        let (mut a, mut b) = (
            DistArray::<u32, 1>::zeros([N]),
            DistArray::<u32, 1>::zeros([N]),
        );
        with_threads(threads, || {
            for _ in 0..2 {
                let shapes: [&[usize]; 2] = [&[N], &[N]];
                let (sa, sb) = (SharedMut::new(&mut a), SharedMut::new(&mut b));
                let _ = Call::new(state, &shapes).run(&RangeSpace::new(0, N), |blk| {
                    let (mut va, mut vb) = (blk.view_mut(&sa, 0), blk.view_mut(&sb, 1));
                    blk.for_each(|i| {
                        va[i] += 1;
                        vb[i] += 2;
                    });
                });
            }
        });
        assert!(a.as_slice().iter().all(|&x| x == 2));
        assert!(b.as_slice().iter().all(|&x| x == 4));
        assert_eq!(a.shape(), [N]);
    }
}

/// A buffer's copies serve the blocks of one call; another call's token (its workers
/// parked, not this call's) may not apply them.
#[test]
fn a_token_applies_only_its_own_calls_buffers() {
    for threads in 2..=3 {
        let state = state();
        let (mut a, mut b) = (
            DistArray::<u32, 1>::zeros([N]),
            DistArray::<u32, 1>::zeros([N]),
        );
        let mut counts = DistArray::<u32, 1>::zeros([N]);
        let shapes: [&[usize]; 2] = [&[N], &[N]];
        let got = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || {
                with_threads(threads, || {
                    let buf = Buffered::new(&mut counts, threads).named("counts");
                    let sa = SharedMut::new(&mut a);
                    let _ = Call::new(state, &shapes)
                        .buffered(&|parked| buf.apply(parked))
                        .run(&RangeSpace::new(0, N), |blk| {
                            let mut va = blk.view_mut(&sa, 0);
                            let mut c = buf.view_in(&*blk);
                            blk.for_each(|i| {
                                va[i] += 1;
                                c[i] += 1;
                            });
                        });
                    // A second call applies the first call's buffer with its own tokens.
                    let sb = SharedMut::new(&mut b);
                    let _ = Call::new(state, &shapes)
                        .buffered(&|parked| buf.apply(parked))
                        .run(&RangeSpace::new(0, N), |blk| {
                            let mut vb = blk.view_mut(&sb, 1);
                            blk.for_each(|i| vb[i] += 1);
                        });
                })
            },
        )));
        assert_eq!(
            got,
            "strads: the buffer `counts` serves one loop call, but was used by another \
             (please report it)",
            "{threads} threads"
        );
    }
}
