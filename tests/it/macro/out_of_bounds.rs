//! An index outside an array inside a parallel loop is a panic that names the array, the
//! index and the shape (never "please report it", which is for strads' own errors): for
//! arrays the loop only reads, arrays it writes, and the recording pass of reconnaissance.
//! Each loop reaches outside its array at one iteration only, so the message is the same
//! whichever worker gets there, one worker included (its plan runs first, to be timed).
//! A reconnaissance loop's first call over new contents runs the original serial loop (the
//! cost model: a survey would serve that call alone), whose arrays know no names: the
//! message gives the index and the shape.

use strads::prelude::*;

#[strads::parallel_for(expect = "1d")]
fn shift_read(src: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, n: usize) {
    for i in 0..n {
        out[i] = src[i + 1];
    }
}

#[strads::parallel_for(expect = "1d")]
fn shift_read_2d(src: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>, n: usize) {
    for i in 0..n {
        out[[i, 0]] = src[[i, 2]] + src.row(i + 1)[0];
    }
}

#[strads::parallel_for(expect = "1d")]
fn shift_write(out: &mut DistArray<f32, 2>, n: usize) {
    for i in 0..n {
        out[[i + 1, 1]] = 1.0;
    }
}

#[strads::parallel_for(expect = "reconnaissance")]
fn scatter(idx: &DistArray<u32, 1>, out: &mut DistArray<f32, 1>, n: usize) {
    for i in 0..n {
        out[idx[i] as usize] += 1.0;
    }
}

/// The message expected: the plan's, naming the array, or (`planned` false) the serial
/// loop's, without the name.
fn expected(planned: bool, named: &str) -> String {
    if planned {
        return named.to_string();
    }
    let plain = named.trim_start_matches("strads: ");
    let (before, after) = plain.split_once(" of `").expect("a named message");
    let (_, rest) = after.split_once('`').expect("a named message");
    format!("{before}{rest}")
}

fn message(f: impl FnOnce()) -> String {
    let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("must panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn indices_outside_an_array_name_it() {
    for threads in 1..=4 {
        let src = DistArray::<f32, 1>::zeros([40]);
        let mut out = DistArray::<f32, 1>::zeros([40]);
        assert_eq!(
            message(|| strads::with_threads(threads, || shift_read(&src, &mut out, 40))),
            expected(
                true,
                "strads: index [40] of `src` is outside the array's shape [40]"
            ),
            "{threads} threads"
        );
        let src2 = DistArray::<f32, 2>::zeros([40, 3]);
        let mut out2 = DistArray::<f32, 2>::zeros([40, 3]);
        assert_eq!(
            message(|| strads::with_threads(threads, || shift_read_2d(&src2, &mut out2, 40))),
            expected(
                true,
                "strads: index [40] of `src` is outside the array's shape [40]"
            ),
            "{threads} threads"
        );
        let mut narrow = DistArray::<f32, 2>::zeros([40, 2]);
        assert_eq!(
            message(|| strads::with_threads(threads, || shift_write(&mut narrow, 40))),
            expected(
                true,
                "strads: index [40, 1] of `out` is outside the array's shape [40, 2]"
            ),
            "{threads} threads"
        );
        let idx = DistArray::from_vec(
            [40],
            (0..40u32).map(|i| if i == 30 { 99 } else { i }).collect(),
        )
        .unwrap();
        let mut small = DistArray::<f32, 1>::zeros([40]);
        assert_eq!(
            message(|| strads::with_threads(threads, || scatter(&idx, &mut small, 40))),
            expected(
                false,
                "strads: index [99] of `out` is outside the array's shape [40]"
            ),
            "{threads} threads"
        );
    }
}

#[strads::parallel_for(buffer(counts), expect = "1d")]
fn count(x: &mut DistArray<f32, 1>, counts: &mut DistArray<u32, 1>, n: usize) {
    for i in 0..n {
        x[i] += 1.0;
        counts[i / 2 + if i == 39 { 1 } else { 0 }] += 1;
    }
}

#[test]
fn indices_outside_a_buffer_name_it() {
    for threads in 1..=4 {
        let mut x = DistArray::<f32, 1>::zeros([40]);
        let mut counts = DistArray::<u32, 1>::zeros([20]);
        assert_eq!(
            message(|| strads::with_threads(threads, || count(&mut x, &mut counts, 40))),
            expected(
                true,
                "strads: index [20] of `counts` is outside the array's shape [20]"
            ),
            "{threads} threads"
        );
    }
}
