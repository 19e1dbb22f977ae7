// Locals bound by tuple, array and struct patterns take their types from the annotation,
// split along the pattern, or from the evident type of the value's part: as captures and
// as reductions. Each loop's result equals the serial computation's on 1 to 3 threads.

use strads::prelude::*;

type Bounds = (f32, f32);

struct Point {
    x: f32,
    y: f32,
}

struct Pair(u32, u32);

/// Suffixed literals in a tuple; a tuple whose first part is the reduction's accumulator.
#[strads::parallel_for]
fn clamped(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> f64 {
    let (lo, hi) = (1.0f32, 5.0f32);
    let (mut s, t) = (0.0f64, 2u8);
    for i in 0..x.len() {
        let v = x[i].max(lo).min(hi);
        out[i] = v * t as f32;
        s += v as f64;
    }
    s
}

/// An annotated tuple pattern, the type split per element; `_` in the annotation takes
/// the value's part; an alias is not split, the value's parts are evident.
#[strads::parallel_for]
fn annotated(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>) -> u64 {
    let (lo, hi): (f32, f32) = (1.0, 5.0);
    let (scale, mut n): (f32, _) = (3.0, 0u64);
    let (a, b): Bounds = (0.5f32, 0.25f32);
    for i in 0..x.len() {
        out[i] = scale * x[i].clamp(lo, hi) + a - b;
        if x[i] > hi {
            n += 1;
        }
    }
    n
}

/// A 2D array's shape as a tuple (`usize` parts), and a `usize` count.
#[strads::parallel_for]
fn border(x: &DistArray<f32, 2>) -> usize {
    let (h, w) = (x.shape()[0], x.shape()[1]);
    let mut count = 0usize;
    for ([i, j], &v) in x {
        if (i == 0 || j == 0 || i + 1 == h || j + 1 == w) && v >= 0.0 {
            count += 1;
        }
    }
    count
}

/// Array patterns: of literals, annotated, a max and a min reduction bound together, and
/// a rest binding (an array of the remaining elements).
#[strads::parallel_for]
fn arrays(x: &DistArray<f64, 1>) -> (f64, f64, f64) {
    let [a, b] = [0.5f64, 2.0];
    let [c, d]: [f64; 2] = [1.0, 3.0];
    let [mut best, mut worst] = [f64::MIN, f64::MAX];
    let [first, rest @ ..] = [1u32, 2, 3];
    let mut total = 0.0f64;
    for i in 0..x.len() {
        let v = a * x[i] + b - c * d + (first + rest[0] + rest[1]) as f64;
        best = best.max(v);
        worst = worst.min(v);
        total += v;
    }
    (best, worst, total)
}

/// Nested tuples; struct and tuple struct patterns against literals of their path (the
/// struct pattern annotated); `ref`, `_` and `..` parts; a reference to a tuple (its
/// parts bound by reference).
#[strads::parallel_for]
fn mixed(x: &DistArray<u32, 1>) -> (u64, f64) {
    let ((a, b), c) = ((1u32, 2u32), 3.0f64);
    let Point { x: px, y: py }: Point = Point { x: 0.5f32, y: 1.5f32 };
    let Pair(p, q) = Pair(2u32, 3u32);
    let (ref scale, _, .., shift) = (2.0f64, 0u8, 0u16, 0.5f64);
    let (lo, hi) = &(1u32, 6u32);
    let (mut sum, mut weighted) = (0u64, 0.0f64);
    for i in 0..x.len() {
        let v = x[i];
        if v >= *lo && v < *hi {
            sum += u64::from(a * v + b + p * q);
        }
        weighted += c * f64::from(v) * *scale + shift + f64::from(px + py);
    }
    (sum, weighted)
}

fn main() {
    let xs: Vec<f32> = (0..20).map(|i| i as f32 * 0.5).collect();
    let x = DistArray::from_vec([20], xs.clone()).unwrap();
    let grid = DistArray::from_fn([4, 5], |[i, j]| (i * j) as f32);
    let xd = DistArray::from_fn([12], |[i]| i as f64);
    let xu = DistArray::from_fn([10], |[i]| i as u32);
    for threads in 1..=3 {
        let mut out = DistArray::zeros([20]);
        let s = strads::with_threads(threads, || clamped(&x, &mut out));
        let want: f64 = xs.iter().map(|v| v.clamp(1.0, 5.0) as f64).sum();
        assert_eq!(s, want, "{threads} threads");
        for (i, v) in xs.iter().enumerate() {
            assert_eq!(out[i], v.clamp(1.0, 5.0) * 2.0);
        }

        let mut out = DistArray::zeros([20]);
        let n = strads::with_threads(threads, || annotated(&x, &mut out));
        assert_eq!(n, xs.iter().filter(|v| **v > 5.0).count() as u64);
        for (i, v) in xs.iter().enumerate() {
            assert_eq!(out[i], 3.0 * v.clamp(1.0, 5.0) + 0.5 - 0.25);
        }

        let count = strads::with_threads(threads, || border(&grid));
        assert_eq!(count, 4 * 5 - 2 * 3);

        let (best, worst, total) = strads::with_threads(threads, || arrays(&xd));
        let vs: Vec<f64> = (0..12).map(|i| 0.5 * i as f64 + 2.0 - 3.0 + 6.0).collect();
        assert_eq!(best, vs.iter().copied().fold(f64::MIN, f64::max));
        assert_eq!(worst, vs.iter().copied().fold(f64::MAX, f64::min));
        assert_eq!(total, vs.iter().sum::<f64>());

        let (sum, weighted) = strads::with_threads(threads, || mixed(&xu));
        let want_sum: u64 = (1..6u32).map(|v| u64::from(v + 2 + 6)).sum();
        let want_weighted: f64 = (0..10).map(|v| 3.0 * v as f64 * 2.0 + 0.5 + 2.0).sum();
        assert_eq!(sum, want_sum);
        assert_eq!(weighted, want_weighted);
    }
}
