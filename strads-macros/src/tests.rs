//! Expansion snapshots: `expand::parallel_for` on a loop, pretty-printed. Each snapshot is
//! the readable code `cargo expand` shows a user, so a change to generated code is reviewed
//! as a diff of that code.

use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[parallel_for(args)] item` and compares the pretty-printed output with the
/// snapshot `name`. Tokens from `quote!` carry no source lines, so the report's
/// `(line ..)` notes read `line 1` here; in a real build they name the source line.
fn check(name: &str, args: TokenStream, item: TokenStream) {
    let out = crate::expand::parallel_for(args, item);
    let file: syn::File = syn::parse2(out.clone())
        .unwrap_or_else(|e| panic!("expansion is not a file of items: {e}\n{out}"));
    insta::assert_snapshot!(name, prettyplease::unparse(&file));
}

/// The SGD-MF loop of docs/design.md: 2D, `w` and `h` written through `row_mut`, `lr` captured.
#[test]
fn sgd_mf() {
    check(
        "sgd_mf",
        quote!(expect = "2d"),
        quote! {
            fn sgd_epoch(
                ratings: &SparseArray<f32, 2>,
                w: &mut DistArray<f32, 2>,
                h: &mut DistArray<f32, 2>,
                lr: f32,
            ) {
                for ([u, i], &r) in ratings {
                    let (wu, hi) = (w.row_mut(u), h.row_mut(i));
                    let err = r - dot(wu, hi);
                    for k in 0..wu.len() {
                        let wk = wu[k];
                        wu[k] += lr * (err * hi[k] - 0.05 * wk);
                        hi[k] += lr * (err * wk - 0.05 * hi[k]);
                    }
                }
            }
        },
    );
}

/// A range loop writing `out[i]` from a row of `inp`: 1D; the struct holds only `m`.
#[test]
fn range_1d() {
    check(
        "range_1d",
        quote!(),
        quote! {
            pub fn row_sums(inp: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>, m: usize) {
                for i in 0..out.len() {
                    let mut acc = 0.0;
                    for k in 0..m {
                        acc += inp[[i, k]];
                    }
                    out[i] = acc;
                }
            }
        },
    );
}

/// Iterating a dense array: the space is the array, `out` is written at the same index.
#[test]
fn dense_iteration() {
    check(
        "dense_iteration",
        quote!(),
        quote! {
            fn smooth(grid: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>, alpha: f32) {
                for ([i, j], &x) in grid {
                    out[[i, j]] = alpha * x + (1.0 - alpha) * (i + j) as f32;
                }
            }
        },
    );
}

/// A `&[f32]` capture becomes a `Cow` field; a `String` capture is bound by reference in the
/// body and given back to the function after the loop, which returns its length.
#[test]
fn non_copy_captures() {
    check(
        "non_copy_captures",
        quote!(),
        quote! {
            fn tagged(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, bias: &[f32; 4], tag: String) -> usize {
                let scale: f32 = 2.0;
                for i in 0..x.len() {
                    out[i] = scale * x[i] + bias[i % bias.len()] + tag.len() as f32;
                }
                tag.len()
            }
        },
    );
}

/// Parameters of the types programs hold (a `Vec`, a slice, an ndarray array) are lent to
/// the loop as `DistArray`s by a wrapper with the signature as written; the loop function,
/// nested inside it, is expanded as over `DistArray`s.
#[test]
fn bridged_arrays() {
    check(
        "bridged_arrays",
        quote!(expect = "1d"),
        quote! {
            pub fn saxpy(a: f32, x: &[f32], y: &mut Vec<f32>, m: &mut ndarray::Array2<f32>) {
                for i in 0..y.len() {
                    y[i] += a * x[i] + m[[i, 0]];
                    m[[i, 1]] = y[i];
                }
            }
        },
    );
}

/// `continue` of the parallel loop becomes `return` from the body method; the inner loop's
/// `continue` stays.
#[test]
fn continue_to_return() {
    check(
        "continue_to_return",
        quote!(),
        quote! {
            fn positive_sums(x: &DistArray<f32, 2>, out: &mut DistArray<f32, 1>) {
                for i in 0..out.len() {
                    if x[[i, 0]] < 0.0 {
                        continue;
                    }
                    let mut acc = 0.0;
                    for k in 0..4 {
                        if x[[i, k]] < 0.0 {
                            continue;
                        }
                        acc += x[[i, k]];
                    }
                    out[i] = acc;
                }
            }
        },
    );
}

/// Reductions: `sse` (an `f64` local, `+=`), `best` (`max`), `worst` (`min` written
/// `e.min(worst)`) and `count` (a parameter, `+=` inside an `if`). They are not captures:
/// each block accumulates into a `StatsReductions` starting from the identities, the parts
/// are folded in schedule order, and the total is applied to the outer variables; the
/// trailing expression returns them.
#[test]
fn reduction() {
    check(
        "reduction",
        quote!(),
        quote! {
            pub fn stats(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, mut count: usize) -> (f64, f32, f32, usize) {
                let mut sse: f64 = 0.0;
                let mut best: f32 = f32::NEG_INFINITY;
                let mut worst: f32 = f32::INFINITY;
                for i in 0..x.len() {
                    let v = x[i];
                    out[i] = v * v;
                    sse += (v * v) as f64;
                    best = best.max(v);
                    worst = v.min(worst);
                    if v > 0.0 {
                        count += 1;
                    }
                }
                (sse, best, worst, count)
            }
        },
    );
}

/// An `ordered` loop's float `+=` and `*=` keep their terms (`Terms`), told each
/// iteration's place (`for_each_at`, `__at`), and are added onto the variables in the
/// serial order after the call; its integer `+=` and its `max` stay per-block
/// accumulators.
#[test]
fn ordered_reduction() {
    check(
        "ordered_reduction",
        quote!(ordered),
        quote! {
            fn fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) -> (f64, f32, u64, f32) {
                let mut sse: f64 = 0.5;
                let mut prod: f32 = 1.0;
                let mut n: u64 = 0;
                let mut best: f32 = f32::NEG_INFINITY;
                for ([i, j], &c) in cost {
                    let v = c + d[[i, j + 1]].min(d[[i + 1, j]]);
                    d[[i + 1, j + 1]] = v;
                    sse += (v * v) as f64;
                    prod *= v;
                    n += 1;
                    best = best.max(v);
                }
                (sse, prod, n, best)
            }
        },
    );
}

/// Subscripts seen through tuple and array locals: `p.0`, `p.1` of `let p = (i, j + 1)`,
/// `r`, `c` destructured from `p`, `q[0]` of `let q = [2 * i, j]`, and `src[q]` indexed by the
/// whole array. The spec holds `out[i, j + 1]`, `src[2i, j]`, `src[i, j]`, `src[2i, j + 3]`.
#[test]
fn tuple_subscripts() {
    check(
        "tuple_subscripts",
        quote!(expect = "1d"),
        quote! {
            fn shifted(grid: &DistArray<f32, 2>, src: &DistArray<f32, 2>, out: &mut DistArray<f32, 2>) {
                for ([i, j], &x) in grid {
                    let p = (i, j + 1);
                    let (r, c) = p;
                    let q = [2 * i, j];
                    out[[p.0, p.1]] = x + src[q] + src[[r, c - 1]] + src[[q[0], q[1] + 3]];
                }
            }
        },
    );
}

/// An erroneous loop: the original function, unchanged, then one `compile_error!` per problem.
#[test]
fn error_keeps_original_function() {
    check(
        "error_keeps_original_function",
        quote!(),
        quote! {
            fn scale(x: &DistArray<f32, 1>, out: &mut DistArray<f32, 1>, mut lr: f32) {
                for i in 0..x.len() {
                    if x[i] > 10.0 {
                        break;
                    }
                    out[i] = lr * x[i];
                    lr = 0.5 * lr;
                }
            }
        },
    );
}

/// Dynamic time warping, `ordered`: neither 1D nor 2D; the report shows the unimodular
/// wavefront (no skew needed) and the tiled array.
#[test]
fn unimodular_dtw() {
    check(
        "unimodular_dtw",
        quote!(ordered, expect = "unimodular"),
        quote! {
            fn dtw_fill(cost: &DistArray<f32, 2>, d: &mut DistArray<f32, 2>) {
                for ([i, j], &c) in cost {
                    let best = d[[i, j + 1]].min(d[[i + 1, j]]).min(d[[i, j]]);
                    d[[i + 1, j + 1]] = c + best;
                }
            }
        },
    );
}

/// A 9-point Gauss-Seidel sweep: the (1, -1) dependence needs the skew `j' = i + j`, which
/// the report shows with the skewed vectors.
#[test]
fn unimodular_skewed_gauss_seidel() {
    check(
        "unimodular_skewed_gauss_seidel",
        quote!(ordered),
        quote! {
            fn sweep(grid: &DistArray<u8, 2>, a: &mut DistArray<f64, 2>, omega: f64) {
                for ([i, j], _) in grid {
                    let sum = a[[i, j]] + a[[i, j + 1]] + a[[i, j + 2]] + a[[i + 1, j]]
                        + a[[i + 1, j + 2]] + a[[i + 2, j]] + a[[i + 2, j + 1]] + a[[i + 2, j + 2]];
                    let old = a[[i + 1, j + 1]];
                    a[[i + 1, j + 1]] = old + omega * (sum / 8.0 - old);
                }
            }
        },
    );
}

/// An `ordered` 5-point sweep: dependences (1, 0) and (0, 1) only, so ordered 2D (tiles
/// in wavefront order without a skew).
#[test]
fn ordered_2d_sweep() {
    check(
        "ordered_2d_sweep",
        quote!(ordered, expect = "2d"),
        quote! {
            fn sweep(grid: &DistArray<u8, 2>, a: &mut DistArray<f64, 2>) {
                for ([i, j], _) in grid {
                    a[[i + 1, j + 1]] = 0.25 * (a[[i, j + 1]] + a[[i + 2, j + 1]] + a[[i + 1, j]] + a[[i + 1, j + 2]]);
                }
            }
        },
    );
}

/// `examples/sgd_mf-expanded.rs` is the `sgd_mf` snapshot with hand comments: its code
/// (comments, header and `main` aside) must stay exactly the snapshot's.
#[test]
fn expanded_example_matches_the_snapshot() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let snap = std::fs::read_to_string(
        root.join("strads-macros/src/snapshots/strads_macros__tests__sgd_mf.snap"),
    )
    .expect("snapshot");
    let example =
        std::fs::read_to_string(root.join("examples/sgd_mf-expanded.rs")).expect("example");
    let code = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//") || l.starts_with("///"))
            .map(String::from)
            .collect()
    };
    // The snapshot's body follows its second `---` line.
    let snap_body = snap.splitn(3, "---\n").nth(2).expect("snapshot body");
    let start = example
        .find("/// The `#[strads::parallel_for]` loop")
        .expect("expansion start");
    let end = example.find("\n#[strads::main]").expect("main");
    assert_eq!(code(&example[start..end]), code(snap_body));
}

/// `max_delay`: the state carries it; the serial loop hands its difference to the apply
/// function every 32 iterations (a counter at the top of the body, before any `continue`),
/// as the parallel run applies its buffers every 32 iterations of each worker.
#[test]
fn buffer_with_max_delay() {
    check(
        "buffer_with_max_delay",
        quote!(buffer(grad, apply = adagrad(w, g2), max_delay = 32)),
        quote! {
            fn gradients(
                x: &DistArray<f32, 2>,
                y: &DistArray<f32, 1>,
                w: &mut DistArray<f32, 1>,
                g2: &mut DistArray<f32, 1>,
                grad: &mut DistArray<f32, 1>,
                n: usize,
            ) {
                for s in 0..n {
                    if y[s] == 0.0 {
                        continue;
                    }
                    let row = x.row(s);
                    let mut pred = 0.0f32;
                    for k in 0..row.len() {
                        pred += row[k] * w[k];
                    }
                    let err = pred - y[s];
                    for k in 0..row.len() {
                        grad[k] += err * row[k];
                    }
                }
            }
        },
    );
}

/// A write-back buffer with an apply function (AdaGrad): per-worker copies of `grad`, the
/// workers' views in a block of their own, then each merged update handed to `adagrad`;
/// the serial path hands over the original loop's difference.
#[test]
fn buffer_with_apply() {
    check(
        "buffer_with_apply",
        quote!(buffer(grad, apply = adagrad(w, g2)), expect = "1d"),
        quote! {
            fn gradients(
                x: &DistArray<f32, 2>,
                y: &DistArray<f32, 1>,
                w: &mut DistArray<f32, 1>,
                g2: &mut DistArray<f32, 1>,
                grad: &mut DistArray<f32, 1>,
                n: usize,
            ) {
                for s in 0..n {
                    let row = x.row(s);
                    let mut pred = 0.0f32;
                    for k in 0..row.len() {
                        pred += row[k] * w[k];
                    }
                    let err = pred - y[s];
                    for k in 0..row.len() {
                        grad[k] += err * row[k];
                    }
                }
            }
        },
    );
}

/// An `iter_mut()` loop: the call takes the array mutably, lists a placeholder for it
/// among the arrays that cross processes (the call puts its indices there) and gives the
/// values' codec, which the probe finds when they serialize.
#[test]
fn iter_mut_values() {
    check(
        "iter_mut_values",
        quote!(buffer(nk), expect = "1d"),
        quote! {
            fn reassign(
                tokens: &mut SparseArray<Vec<u16>, 2>,
                ndk: &mut DistArray<i32, 2>,
                nk: &mut DistArray<i32, 1>,
            ) {
                for ([d, w], zs) in tokens.iter_mut() {
                    for z in zs.iter_mut() {
                        let old = *z as usize;
                        ndk[[d, old]] -= 1;
                        nk[old] -= 1;
                        *z = w as u16;
                        ndk[[d, w]] += 1;
                        nk[w] += 1;
                    }
                }
            }
        },
    );
}

/// A perfect nest of range loops, the inner one stepped: a 2-D space of `[i, j]`, the
/// body the inner loop's; `j` is `2 * t + 1` of the step `t`.
#[test]
fn nested_ranges() {
    check(
        "nested_ranges",
        quote!(ordered),
        quote! {
            fn red_sweep(u: &mut DistArray<f64, 2>, n: usize) {
                for i in 1..n - 1 {
                    for j in (1..u.shape()[1] - 1).step_by(2) {
                        u[[i, j]] = 0.5 * (u[[i, j - 1]] + u[[i, j + 1]]) + 0.1 * u[[i - 1, j]];
                    }
                }
            }
        },
    );
}

/// `sync = "hybrid"`: every written array a `hybrid()` replica merged by the function,
/// reached through the process's shared view, committed after every iteration; the spec's
/// buffers are `shared()`.
#[test]
fn sync_hybrid() {
    check(
        "sync_hybrid",
        quote!(sync = "hybrid", batch = 64, merge = strads::merge::sum),
        quote! {
            fn lr(f: &DistArray<u32, 1>, y: &DistArray<f32, 1>, w: &mut DistArray<f32, 1>) {
                for s in 0..y.len() {
                    let z = w[f[s] as usize];
                    w[f[s] as usize] -= 0.1 * (z - y[s]);
                }
            }
        },
    );
}
