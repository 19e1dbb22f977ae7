//! Reconnaissance in the runtime: the recording pass mutates nothing, plans are reused
//! while the arrays the loop reads are unchanged (and remade when they change), random
//! loops with subscripts read from data equal the replay of their recorded order, and a
//! run that strays from what was recorded stops with a clear panic instead of racing.

use std::borrow::Cow;
use std::cell::Cell;

use proptest::prelude::*;
use strads_analysis::{Access, AccessKind, ArraySpec, LoopSpec, Name, SpaceKind, Subscript};
use strads_runtime::testing::{bits, record, replay};
use strads_runtime::{
    ArrayMut, ArrayRef, Call, DistArray, LoopState, RangeSpace, SharedMut, with_threads,
};

/// `for i in 0..n { let j = idx[i]; let k = idx2[i]; out[j] += src[k] * out[k] }`: array 0
/// `idx`, 1 `idx2`, 2 `out` (written, indirect).
fn spec() -> LoopSpec {
    let arr = |name: &'static str, mutable| ArraySpec {
        name: Cow::Borrowed(name),
        rank: 1,
        mutable,
        additive: false,
        // The read-only index arrays reach the subscripts (what the macro finds): they
        // key the plan; `out`'s values steer nothing.
        steers: !mutable,
    };
    let acc = |array, kind, s| Access {
        array,
        kind,
        subscripts: Cow::Owned(vec![s]),
        line: 0,
    };
    let var = Subscript::affine(&[1], 0);
    LoopSpec {
        name: Cow::Borrowed("scatter"),
        dims: Cow::Owned(vec![Name::Borrowed("i")]),
        space: SpaceKind::Range,
        arrays: Cow::Owned(vec![
            arr("idx", false),
            arr("idx2", false),
            arr("out", true),
        ]),
        accesses: Cow::Owned(vec![
            acc(0, AccessKind::Read, var.clone()),
            acc(1, AccessKind::Read, var),
            acc(2, AccessKind::Read, Subscript::Indirect),
            acc(2, AccessKind::Write, Subscript::Indirect),
        ]),
        ordered: false,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    }
}

fn body<A: ArrayMut<f64, 1> + std::ops::IndexMut<usize, Output = f64>>(
    i: usize,
    idx: &DistArray<u32, 1>,
    idx2: &DistArray<u32, 1>,
    out: &mut A,
) {
    let (j, k) = (idx[i] as usize, idx2[i] as usize);
    let x = out[k];
    out[j] = out[j] * 0.5 + x + i as f64;
}

struct Case {
    state: &'static LoopState,
    idx: DistArray<u32, 1>,
    idx2: DistArray<u32, 1>,
}

impl Case {
    fn new(n: usize, m: usize, seed: u64) -> Self {
        let r = DistArray::<f64, 1>::random([2 * n], seed);
        let pick = |x: f64| ((x * x) * m as f64) as u32; // skewed: low ids popular
        Case {
            state: Box::leak(Box::new(LoopState::new(spec()))),
            idx: DistArray::from_fn([n], |[i]| pick(r[i])),
            idx2: DistArray::from_fn([n], |[i]| pick(r[n + i])),
        }
    }

    /// One call; `recordings` counts recording passes.
    fn call(&self, out: &mut DistArray<f64, 1>, recordings: &Cell<usize>) {
        let n = self.idx.len();
        let space = RangeSpace::new(0, n);
        let shapes: [&[usize]; 3] = [&[n], &[n], &out.shape()];
        let keys = [
            self.idx.contents_key(),
            self.idx2.contents_key(),
            out.contents_key(),
        ];
        let shared = SharedMut::new(out);
        let (idx, idx2) = (&self.idx, &self.idx2);
        // The plan runs, however small the call: its recordings are counted.
        let ran = strads_runtime::testing::plan_always(|| {
            Call::new(self.state, &shapes).run_surveyed(
                &space,
                &keys,
                &[],
                |rec| {
                    recordings.set(recordings.get() + 1);
                    let mut out = rec.view_mut(&shared, 2);
                    rec.for_each(|i| body(i, idx, idx2, &mut out));
                },
                |blk| {
                    let mut out = blk.view_mut(&shared, 2);
                    blk.for_each(|i| body(i, idx, idx2, &mut out));
                },
            )
        });
        assert!(ran.serial().is_none());
    }
}

#[test]
fn recording_mutates_nothing_and_plans_are_reused_until_inputs_change() {
    let mut case = Case::new(2000, 300, 1);
    let start = DistArray::<f64, 1>::random([300], 2);
    let count = Cell::new(0);
    // A recording pass alone (the blocks do nothing): the array is unchanged.
    {
        let mut out = start.clone();
        let n = case.idx.len();
        let space = RangeSpace::new(0, n);
        let shapes: [&[usize]; 3] = [&[n], &[n], &out.shape()];
        let keys = [
            case.idx.contents_key(),
            case.idx2.contents_key(),
            out.contents_key(),
        ];
        {
            let shared = SharedMut::new(&mut out);
            let (idx, idx2) = (&case.idx, &case.idx2);
            let _ = strads_runtime::testing::plan_always(|| {
                with_threads(2, || {
                    Call::new(case.state, &shapes).run_surveyed(
                        &space,
                        &keys,
                        &[],
                        |rec| {
                            let mut o = rec.view_mut(&shared, 2);
                            rec.for_each(|i| body(i, idx, idx2, &mut o));
                        },
                        |_| {},
                    )
                })
            });
        }
        assert_eq!(bits(&out), bits(&start));
    }
    let mut out = start.clone();
    with_threads(2, || {
        for _ in 0..3 {
            case.call(&mut out, &count);
        }
    });
    assert_eq!(count.get(), 0, "the plan of the first call is reused");
    // Changing an input the subscripts are read from makes a new plan.
    case.idx.as_mut_slice()[0] = 7;
    with_threads(2, || case.call(&mut out, &count));
    assert_eq!(count.get(), 1);
    with_threads(2, || case.call(&mut out, &count));
    assert_eq!(count.get(), 1);
}

#[test]
#[should_panic(
    expected = "which the recording pass of reconnaissance did not see it touch: control flow or a subscript depends on values of arrays the loop writes"
)]
fn a_run_that_strays_from_the_recording_panics() {
    // The body branches on a value of the written array: in recording it reads a stand-in
    // (0.0), in the real run the value is 1.0 and it writes somewhere else.
    let case = Case::new(200, 40, 3);
    let mut out = DistArray::<f64, 1>::from_fn([40], |_| 1.0);
    let n = case.idx.len();
    let space = RangeSpace::new(0, n);
    let shapes: [&[usize]; 3] = [&[n], &[n], &out.shape()];
    let keys = [
        case.idx.contents_key(),
        case.idx2.contents_key(),
        out.contents_key(),
    ];
    let shared = SharedMut::new(&mut out);
    let idx = &case.idx;
    let stray = |i: usize, o: &mut dyn FnMut(usize) -> f64, w: &mut dyn FnMut(usize, f64)| {
        let j = idx[i] as usize;
        let target = if o(j) > 0.5 { (j + 17 + i) % 40 } else { j };
        w(target, 1.0);
    };
    // Plans always run: the cost model would send a first call over new contents to the
    // serial loop, which the hand-made call here does not have.
    let _ = strads_runtime::testing::plan_always(|| {
        with_threads(2, || {
            Call::new(case.state, &shapes).run_surveyed(
                &space,
                &keys,
                &[],
                |rec| {
                    let mut v = rec.view_mut(&shared, 2);
                    rec.for_each(|i| {
                        let r = v[idx[i] as usize];
                        let j = idx[i] as usize;
                        let target = if r > 0.5 { (j + 17 + i) % 40 } else { j };
                        v[target] = 1.0;
                    });
                },
                |blk| {
                    let v = std::cell::RefCell::new(blk.view_mut(&shared, 2));
                    blk.for_each(|i| {
                        stray(i, &mut |j| v.borrow()[j], &mut |j, x| v.borrow_mut()[j] = x);
                    });
                },
            )
        })
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn indirect_loops_equal_their_replay(n in 1usize..400, m in 1usize..60, seed in any::<u64>(), threads in 1usize..=4) {
        let case = Case::new(n, m, seed);
        let start = DistArray::<f64, 1>::random([m], seed ^ 1);
        let count = Cell::new(0);
        let mut par = start.clone();
        let ((), trace) = with_threads(threads, || record(|| {
            case.call(&mut par, &count);
            case.call(&mut par, &count);
        }));
        prop_assert_eq!(count.get(), 1);
        let mut rep = start.clone();
        // The replay: the recorded order, serially, through the same entry point.
        replay(&trace, || {
            case.call(&mut rep, &count);
            case.call(&mut rep, &count);
        });
        prop_assert_eq!(bits(&par), bits(&rep));
        let _ = ArrayRef::shape(&rep);
    }
}
