//! Splitting large conflict components (reconnaissance): embedding SGD over the edges of a
//! grid graph (a road network's shape), edges in row-major order, two models:
//! - `undirected`: one vector per node, each edge pulls both ends' vectors together. Every
//!   batch is one conflict component, so without splitting one worker runs it all; split,
//!   each worker runs a contiguous chunk and waits only where chunks meet.
//! - `line`: node and context vectors (LINE's second order), reached by rows. Components
//!   stay small (an edge meets only the edges sharing its source or its target), so nothing
//!   is split: the control.
//!
//! One table per model, all in one run: the hand-written serial loop (plain slices, same
//! arithmetic), strads at 1 thread, at 2 threads, and at 2 threads with `STRADS_SPLIT=0` (a
//! child process of this binary, since the setting is read once). The first strads call
//! (recording and planning) is reported apart from the median epoch. Record the tables in
//! BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench split
//! cargo bench --bench split -- --side 1000 --k 32 --rounds 9
//! ```

use std::process::Command;
use std::time::Instant;

use clap::Parser;
use strads::prelude::*;
use strads::testing::median;

/// Undirected embedding step: every edge `(a, b)` pulls the two nodes' vectors together.
#[strads::parallel_for(expect = "reconnaissance")]
fn undirected_epoch(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    emb: &mut DistArray<f32, 2>,
    m: usize,
    k: usize,
    lr: f32,
) {
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        let mut dot = 0.0f32;
        for j in 0..k {
            dot += emb[[a, j]] * emb[[b, j]];
        }
        let g = lr * (1.0 - dot);
        for j in 0..k {
            let (x, y) = (emb[[a, j]], emb[[b, j]]);
            emb[[a, j]] = x + g * y;
            emb[[b, j]] = y + g * x;
        }
    }
}

/// The same loop on a plain slice.
fn undirected_serial(src: &[u32], dst: &[u32], emb: &mut [f32], k: usize, lr: f32) {
    for (&a, &b) in src.iter().zip(dst) {
        let (a, b) = (a as usize * k, b as usize * k);
        let mut dot = 0.0f32;
        for j in 0..k {
            dot += emb[a + j] * emb[b + j];
        }
        let g = lr * (1.0 - dot);
        for j in 0..k {
            let (x, y) = (emb[a + j], emb[b + j]);
            emb[a + j] = x + g * y;
            emb[b + j] = y + g * x;
        }
    }
}

/// LINE-style step (second-order proximity, no negative samples): every edge `(a, b)`
/// pulls node `a`'s vector and node `b`'s context vector together.
#[strads::parallel_for(expect = "reconnaissance")]
fn line_epoch(
    src: &DistArray<u32, 1>,
    dst: &DistArray<u32, 1>,
    w: &mut DistArray<f32, 2>,
    c: &mut DistArray<f32, 2>,
    m: usize,
    lr: f32,
) {
    for e in 0..m {
        let (a, b) = (src[e] as usize, dst[e] as usize);
        let (wa, cb) = (w.row_mut(a), c.row_mut(b));
        let g = lr * (1.0 - dot(wa, cb));
        for j in 0..wa.len() {
            let (x, y) = (wa[j], cb[j]);
            wa[j] = x + g * y;
            cb[j] = y + g * x;
        }
    }
}

/// The same loop on plain slices.
fn line_serial(src: &[u32], dst: &[u32], w: &mut [f32], c: &mut [f32], k: usize, lr: f32) {
    for (&a, &b) in src.iter().zip(dst) {
        let (a, b) = (a as usize * k, b as usize * k);
        let (wa, cb) = (&mut w[a..a + k], &mut c[b..b + k]);
        let g = lr * (1.0 - dot(wa, cb));
        for j in 0..k {
            let (x, y) = (wa[j], cb[j]);
            wa[j] = x + g * y;
            cb[j] = y + g * x;
        }
    }
}

#[derive(Parser, Debug)]
struct Args {
    /// Grid side: side * side nodes, about 2 * side^2 edges.
    #[arg(long, default_value_t = 700)]
    side: usize,
    /// Embedding size.
    #[arg(long, default_value_t = 16)]
    k: usize,
    /// Timed epochs per configuration (the median is reported).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Internal: run only strads at 2 threads on this model and print its times.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Accepted and ignored (cargo bench passes it).
    #[arg(long, hide = true)]
    bench: bool,
}

const LR: f32 = 0.01;

/// Small random vectors, one `nodes x k` array per seed.
fn start(nodes: usize, k: usize, seed: u64) -> DistArray<f32, 2> {
    let r = DistArray::<f32, 1>::random([nodes * k], seed);
    DistArray::from_fn([nodes, k], |[i, j]| 0.1 * r[i * k + j])
}

/// One model's data and state, stepped by serial or strads code.
struct Run {
    src: Vec<u32>,
    dst: Vec<u32>,
    d_src: DistArray<u32, 1>,
    d_dst: DistArray<u32, 1>,
    a: DistArray<f32, 2>,
    b: DistArray<f32, 2>,
    k: usize,
    line: bool,
}

impl Run {
    fn new(args: &Args, line: bool) -> Run {
        let (src, dst) = strads::generate::grid_edges(args.side);
        let m = src.len();
        let nodes = args.side * args.side;
        Run {
            d_src: DistArray::from_vec([m], src.clone()).unwrap(),
            d_dst: DistArray::from_vec([m], dst.clone()).unwrap(),
            src,
            dst,
            a: start(nodes, args.k, 3),
            b: start(nodes, args.k, 4),
            k: args.k,
            line,
        }
    }

    fn serial(&mut self) {
        if self.line {
            line_serial(
                &self.src,
                &self.dst,
                self.a.as_mut_slice(),
                self.b.as_mut_slice(),
                self.k,
                LR,
            );
        } else {
            undirected_serial(&self.src, &self.dst, self.a.as_mut_slice(), self.k, LR);
        }
    }

    fn strads(&mut self) {
        let m = self.src.len();
        if self.line {
            line_epoch(&self.d_src, &self.d_dst, &mut self.a, &mut self.b, m, LR);
        } else {
            undirected_epoch(&self.d_src, &self.d_dst, &mut self.a, m, self.k, LR);
        }
    }
}

/// `(first call, median epoch, plan line)` of strads at `threads`.
fn strads_times(args: &Args, line: bool, threads: usize) -> (f64, f64, String) {
    let mut run = Run::new(args, line);
    strads::with_threads(threads, || {
        let t = Instant::now();
        let ((), trace) = strads::testing::record(|| run.strads());
        let first = t.elapsed().as_secs_f64();
        let mut times: Vec<f64> = (0..args.rounds)
            .map(|_| {
                let t = Instant::now();
                run.strads();
                t.elapsed().as_secs_f64()
            })
            .collect();
        (first, median(&mut times), trace.runs[0].plan.clone())
    })
}

/// Strads at 2 threads with `STRADS_SPLIT=0`, in a child process.
fn unsplit_times(args: &Args, model: &str) -> (f64, f64, String) {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let out = Command::new(exe)
        .env("STRADS_SPLIT", "0")
        .args(["--child", model, "--side", &args.side.to_string()])
        .args([
            "--k",
            &args.k.to_string(),
            "--rounds",
            &args.rounds.to_string(),
        ])
        .output()
        .expect("re-running the bench binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let mut it = line.splitn(3, ' ');
    let first = it.next().unwrap().parse().unwrap();
    let t = it.next().unwrap().parse().unwrap();
    (first, t, it.next().unwrap_or("").trim().to_string())
}

fn main() {
    let args = Args::parse();
    if let Some(model) = &args.child {
        let (first, med, plan) = strads_times(&args, model == "line", 2);
        println!("{first} {med} {plan}");
        return;
    }
    let m = strads::generate::grid_edges(args.side).0.len();
    println!(
        "embedding SGD on a {0}x{0} grid: {m} edges, k = {1}, {2} rounds (median)",
        args.side, args.k, args.rounds
    );
    for (model, line) in [("undirected", false), ("line", true)] {
        // Serial baseline, and the check that strads at 1 thread computes the same thing.
        let mut serial = Run::new(&args, line);
        let mut times: Vec<f64> = (0..args.rounds)
            .map(|_| {
                let t = Instant::now();
                serial.serial();
                t.elapsed().as_secs_f64()
            })
            .collect();
        let serial_t = median(&mut times);
        let (mut x, mut y) = (Run::new(&args, line), Run::new(&args, line));
        x.serial();
        strads::with_threads(1, || y.strads());
        assert!(
            x.a == y.a && x.b == y.b,
            "strads at 1 thread equals the serial loop"
        );
        let (first1, t1, _) = strads_times(&args, line, 1);
        let (first2, t2, plan) = strads_times(&args, line, 2);
        let (first_ns, t_ns, plan_ns) = unsplit_times(&args, model);
        println!("\n{model}");
        println!(
            "{:<34} {:>12} {:>12} {:>10}",
            "system", "first call s", "epoch s", "speed-up"
        );
        println!(
            "{:<34} {:>12} {:>12.4} {:>10.2}",
            "hand-written serial", "-", serial_t, 1.0
        );
        for (name, first, t) in [
            ("strads 1 thread", first1, t1),
            ("strads 2 threads", first2, t2),
            ("strads 2 threads, STRADS_SPLIT=0", first_ns, t_ns),
        ] {
            println!("{name:<34} {first:>12.4} {t:>12.4} {:>10.2}", serial_t / t);
        }
        println!("plan:                  {plan}");
        println!("plan (STRADS_SPLIT=0): {plan_ns}");
    }
}
