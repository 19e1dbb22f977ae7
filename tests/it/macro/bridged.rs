//! Loop arrays of the types programs already hold (issue 27, item 1): `&Vec<T>`,
//! `&mut Vec<T>`, `&[T]`, `&mut [T]` and ndarray's arrays and views are `DistArray`s to the
//! loop. Each plans as a `DistArray` would, equals the serial loop (`testing::serial`, as
//! `STRADS_SERIAL=1`) bit for bit, replays its recorded order with the same bits, and goes
//! back to the caller's variable (a `Vec`'s buffer itself, without a copy).

use ndarray::{Array2, ArrayViewMut1, s};
use strads::testing::{record, replay, serial};

/// saxpy over vectors (`&Vec` on purpose: the form a program may hold).
#[strads::parallel_for(expect = "1d")]
#[allow(clippy::ptr_arg)]
fn saxpy(a: f32, x: &Vec<f32>, y: &mut Vec<f32>) {
    for i in 0..y.len() {
        y[i] += a * x[i];
    }
}

/// A scale over a slice.
#[strads::parallel_for(expect = "1d")]
fn scale(x: &mut [f64], by: f64) {
    for i in 0..x.len() {
        x[i] *= by;
    }
}

/// ReLU over an ndarray matrix, its bounds ndarray's `nrows` and `ncols`.
#[strads::parallel_for(expect = "1d")]
fn relu(m: &mut Array2<f32>) {
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            if m[[i, j]] < 0.0 {
                m[[i, j]] = 0.0;
            }
        }
    }
}

/// Row sums of a read-only matrix into a mutable view, bounds from `shape()`.
#[strads::parallel_for(expect = "1d")]
fn row_sums(m: &Array2<f32>, out: ArrayViewMut1<f32>, w: &[f32]) {
    for i in 0..m.shape()[0] {
        let mut s = 0.0;
        for j in 0..m.shape()[1] {
            s += m[[i, j]] * w[j];
        }
        out[i] = s;
    }
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn vectors_and_slices_plan_1d_and_equal_the_serial_loop() {
    let n = 50_000;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 11) as f32 * 0.1).collect();
    let mut reference = y0.clone();
    serial(|| saxpy(1.5, &x, &mut reference));
    for threads in 1..=4 {
        let mut y = y0.clone();
        let buffer = y.as_ptr();
        let ((), trace) = strads::with_threads(threads, || {
            strads::testing::plan_always(|| record(|| saxpy(1.5, &x, &mut y)))
        });
        assert_eq!(y.as_ptr(), buffer, "the vector's own buffer came back");
        assert!(
            trace.runs[0].plan.starts_with(&format!(
                "1d dim=i workers={threads} blocks={threads} local=y shared=x"
            )),
            "{}",
            trace.runs[0].plan
        );
        assert_eq!(bits32(&y), bits32(&reference), "{threads} threads");
        let mut again = y0.clone();
        replay(&trace, || saxpy(1.5, &x, &mut again));
        assert_eq!(bits32(&again), bits32(&y));
    }
    // A slice of a vector: the rest is untouched.
    let z0: Vec<f64> = (0..n).map(|i| i as f64 * 0.01).collect();
    let mut want = z0.clone();
    serial(|| scale(&mut want[100..], 0.75));
    let mut z = z0.clone();
    let ((), trace) = strads::testing::plan_always(|| record(|| scale(&mut z[100..], 0.75)));
    assert!(
        trace.runs[0].plan.starts_with("1d dim=i"),
        "{}",
        trace.runs[0].plan
    );
    assert_eq!(z, want);
    assert_eq!(z[..100], z0[..100]);
}

#[test]
fn ndarray_arrays_and_views_plan_1d_and_equal_the_serial_loop() {
    let m0 = Array2::<f32>::from_shape_fn((300, 40), |(i, j)| ((i * 40 + j) as f32 * 0.61).sin());
    let mut want = m0.clone();
    serial(|| relu(&mut want));
    let mut m = m0.clone();
    let ((), trace) = strads::testing::plan_always(|| record(|| relu(&mut m)));
    assert!(
        trace.runs[0].plan.starts_with("1d dim=i"),
        "{}",
        trace.runs[0].plan
    );
    assert_eq!(m, want);
    assert!(m.iter().all(|&v| v >= 0.0));
    // Read-only matrix, a read-only slice of weights, and a view of a column to write.
    let w: Vec<f32> = (0..40).map(|j| 1.0 / (j + 1) as f32).collect();
    let mut out = Array2::<f32>::zeros((300, 3));
    let mut expected = out.clone();
    serial(|| row_sums(&m0, expected.slice_mut(s![.., 1]), &w));
    let ((), trace) =
        strads::testing::plan_always(|| record(|| row_sums(&m0, out.slice_mut(s![.., 1]), &w)));
    assert!(
        trace.runs[0].plan.starts_with("1d dim=i"),
        "{}",
        trace.runs[0].plan
    );
    assert_eq!(out, expected);
    assert!(out.column(0).iter().all(|&v| v == 0.0));
    assert!(out.column(1).iter().any(|&v| v != 0.0));
}

/// The line of `scores`' call of `dot`.
const DOT_LINE: u32 = line!() + 6;

/// A loop whose rows are of different lengths: `dot` panics.
#[strads::parallel_for(expect = "1d")]
fn scores(w: &strads::prelude::DistArray<f32, 2>, q: &[f32], out: &mut Vec<f32>) {
    for u in 0..out.len() {
        out[u] = strads::prelude::dot(w.row(u), q);
    }
}

#[test]
fn a_helper_s_panic_names_the_loop_s_line() {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let prev = std::panic::take_hook();
    let s = seen.clone();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.to_string();
        if msg.contains("strads::dot of slices of different lengths") {
            s.lock().unwrap().push(msg);
        }
    }));
    let w = strads::prelude::DistArray::<f32, 2>::random([64, 8], 1);
    let q = vec![1.0f32; 5];
    let mut out = vec![0.0f32; 64];
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        strads::testing::plan_always(|| scores(&w, &q, &mut out))
    }));
    std::panic::set_hook(prev);
    assert!(caught.is_err());
    let seen = seen.lock().unwrap();
    let line = DOT_LINE;
    assert!(
        seen.iter().any(
            |m| m.contains(&format!("tests/it/macro/bridged.rs:{line}:"))
                && m.contains("(8 and 5)")
        ),
        "{seen:?}"
    );
    // The vector came back to the caller.
    assert_eq!(out.len(), 64);
}

/// README's quick start: a model every iteration updates, over `Vec`s, in `sync = "bsp"`.
#[strads::parallel_for(sync = "bsp", batch = 256)]
fn readme_sgd(x: &[f32], y: &[f32], w: &mut Vec<f32>, d: usize, lr: f32) {
    for s in 0..y.len() {
        let mut p = 0.0;
        for j in 0..d {
            p += x[s * d + j] * w[j];
        }
        let g = p - y[s];
        for j in 0..d {
            w[j] -= lr * g * x[s * d + j];
        }
    }
}

#[test]
fn readme_s_sync_loop_over_vectors_replays_its_order() {
    let (n, d) = (2000, 8);
    let x: Vec<f32> = (0..n * d)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    let y: Vec<f32> = (0..n).map(|s| x[s * d..(s + 1) * d].iter().sum()).collect();
    let mut w = vec![0.0f32; d];
    let ((), trace) =
        strads::testing::plan_always(|| record(|| readme_sgd(&x, &y, &mut w, d, 0.01)));
    assert!(
        trace.runs[0].plan.contains("sync"),
        "{}",
        trace.runs[0].plan
    );
    let mut again = vec![0.0f32; d];
    replay(&trace, || readme_sgd(&x, &y, &mut again, d, 0.01));
    assert_eq!(bits32(&again), bits32(&w));
    // It learns: every weight near 1.
    assert!(w.iter().all(|&v| (v - 1.0).abs() < 0.2), "{w:?}");
}

/// Run by [`a_loop_writing_a_vec_refuses_checkpoints`] with `STRADS_CHECKPOINT` set.
#[test]
#[ignore = "run in a child process by a_loop_writing_a_vec_refuses_checkpoints"]
fn checkpointed_child() {
    let x = vec![1.0f32; 64];
    let mut y = vec![0.0f32; 64];
    saxpy(1.0, &x, &mut y);
    println!("loop ran");
}

/// Checkpoints know arrays by identity across calls; a lent `Vec` is a new array at every
/// call, so a resumed run could not restore it: refused with status 2, saying what to do.
#[test]
fn a_loop_writing_a_vec_refuses_checkpoints() {
    let dir = std::env::temp_dir().join(format!("strads-bridged-ck-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            // libtest names this module with its raw identifier.
            "r#macro::bridged::checkpointed_child",
            "--ignored",
            // The message is printed with `eprintln!`, which libtest would capture.
            "--nocapture",
        ])
        .env("STRADS_CHECKPOINT", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: STRADS_CHECKPOINT is set, and a `#[parallel_for]` loop writes a `Vec`"
        ),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("loop ran"));
}

/// Code that compiled before loop arrays of these types still does (the review of issue
/// 27): a `&mut Vec` the function uses whole after the loop stays a parameter as written.
#[strads::parallel_for]
fn epoch_with_history(w: &mut strads::DistArray<f32, 1>, history: &mut Vec<f64>) {
    let mut loss: f64 = 0.0;
    for i in 0..w.len() {
        w[i] *= 0.5;
        loss += f64::from(w[i]);
    }
    history.push(loss);
}

/// A read-only slice reached by ranges stays a captured value.
#[strads::parallel_for(expect = "1d")]
fn block_sums(x: &[f32], out: &mut Vec<f32>, d: usize) {
    for i in 0..out.len() {
        out[i] = x[i * d..(i + 1) * d].iter().sum();
    }
}

/// A read-only slice of subscripts stays a captured value (its bytes key the plan).
#[strads::parallel_for]
fn counts(ids: &[u32], c: &mut strads::DistArray<u32, 1>) {
    for k in 0..ids.len() {
        c[ids[k] as usize] += 1;
    }
}

/// A parameter named as the function.
#[strads::parallel_for(expect = "1d")]
fn shrink(x: &mut [f64], shrink: f64) {
    for i in 0..x.len() {
        x[i] *= shrink;
    }
}

#[test]
fn functions_that_compiled_before_still_compile_and_run() {
    let mut w = strads::DistArray::<f32, 1>::from_vec([4], vec![2.0; 4]).unwrap();
    let mut history = Vec::new();
    epoch_with_history(&mut w, &mut history);
    assert_eq!(history, [4.0]);
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let mut out = vec![0.0; 4];
    block_sums(&x, &mut out, 3);
    assert_eq!(out, [3.0, 12.0, 21.0, 30.0]);
    let ids: Vec<u32> = (0..1000).map(|k| (k * 7 % 13) as u32).collect();
    let mut c = strads::DistArray::<u32, 1>::zeros([13]);
    let surveys = strads::testing::surveys();
    strads::testing::plan_always(|| {
        counts(&ids, &mut c);
        counts(&ids, &mut c);
    });
    assert_eq!(c.as_slice().iter().sum::<u32>(), 2000);
    // The second call over the same subscripts reuses the first call's plan.
    assert!(strads::testing::surveys() - surveys <= 1);
    let mut v = vec![2.0f64; 5];
    shrink(&mut v, 0.5);
    assert_eq!(v, [1.0; 5]);
}
