//! Scale by simulation: the cluster's protocol core on the simulated network predicts an
//! SGD-MF epoch on Netflix-size data (100 M ratings, 480,189 x 17,770, k = 100) for 4 to
//! 256 workers over modelled 10 and 40 Gb/s links, with the per-rating compute cost
//! measured on this machine. Prints a table (record it in BENCHMARKS.md); `--plot DIR`
//! writes `DIR/efficiency.svg`.
//!
//! ```text
//! cargo bench --bench cluster_sim
//! cargo bench --bench cluster_sim -- --plot docs/cluster
//! ```
//!
//! Model: one worker per rank (a machine), equal blocks (100 M / P^2 ratings each: the
//! histogram partitions balance rows and columns, not blocks), links of the given
//! bandwidth and `--latency` one way, each directed link carrying one frame at a time;
//! the schedule, the transfers (`Itinerary`) and every message are the real ones. Three
//! placements, each in the steady state of consecutive epochs: `home` (every written
//! element comes back to the driver after each call and goes out again at the next),
//! `copies` (written elements come home after each call, and the next call sends a rank
//! only what it does not still hold), and `in place`, today's runtime between consecutive
//! calls (the written parts stay where they were last written, and the next call takes
//! them from there).
//!
//! Memory per rank (issue 25), for `in place`, the runtime's placement: the ratings (each
//! rank's part as made in place, 12 bytes an entry, and its blocks after the trade, as
//! many again) and the factor rows it holds at its peak over an epoch, walking the
//! itinerary step by step: the parts it holds at the start, each transfer added when its
//! task needs it, and each block it passes on given back when the plan releases it
//! (`rank_MiB`, what the runtime does); `kept_all` is the same without releases (every
//! block a rank ever saw, what it held before the runtime released them). The largest
//! rank is printed. The ten times larger set:
//!
//! ```text
//! cargo bench --bench cluster_sim -- --ratings 1000000000 --users 10000000 --items 1000000 --k 128
//! ```

use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use strads::cluster::proto::sim::{Link, Sim, sgd_mf_2d};
use strads::cluster::proto::{Itinerary, PlanArray, Region};

#[path = "common/sgd.rs"]
#[allow(dead_code)]
mod sgd;
use sgd::serial_epoch;

#[derive(Parser, Debug)]
#[command(about = "Predicted SGD-MF scaling on the simulated network")]
struct Args {
    /// Ratings of the modelled data set.
    #[arg(long, default_value_t = 100_000_000)]
    ratings: u64,
    #[arg(long, default_value_t = 480_189)]
    users: usize,
    #[arg(long, default_value_t = 17_770)]
    items: usize,
    #[arg(long, default_value_t = 100)]
    k: usize,
    /// One-way link latency, microseconds.
    #[arg(long, default_value_t = 10)]
    latency: u64,
    /// Largest worker count (powers of two from 4).
    #[arg(long, default_value_t = 256)]
    max_workers: usize,
    /// Write the plot here.
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Seconds per rating of the serial loop at rank `k`, on a set whose factors fit in cache
/// the way a worker's share of Netflix does.
fn per_rating(k: usize) -> f64 {
    let (users, items, n) = (20_000u32, 2_000u32, 2_000_000usize);
    let mut x = 0x9e3779b97f4a7c15u64;
    let data: Vec<(u32, u32, f32)> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (
                (x % users as u64) as u32,
                ((x >> 32) % items as u64) as u32,
                3.0,
            )
        })
        .collect();
    let mut w = vec![0.05f32; users as usize * k];
    let mut h = vec![0.05f32; items as usize * k];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        serial_epoch(black_box(&data), &mut w, &mut h, k, 0.001, 0.05);
        best = best.min(t.elapsed().as_secs_f64());
    }
    black_box((&w, &h));
    best / n as f64
}

fn main() {
    let args = Args::parse();
    let c = per_rating(args.k);
    let serial = c * args.ratings as f64;
    println!(
        "per-rating cost (serial loop, k = {}): {:.1} ns; modelled serial epoch {:.2} s",
        args.k,
        c * 1e9,
        serial
    );
    println!(
        "{:>8} {:>9} {:>9} {:>11} {:>10} {:>10} {:>11} {:>12} {:>12}",
        "link",
        "workers",
        "placing",
        "epoch_s",
        "speedup",
        "effic",
        "ring_wait",
        "rank_MiB",
        "kept_all"
    );
    let mut rows: Vec<(f64, usize, &str, f64)> = Vec::new();
    for gbps in [10.0f64, 40.0] {
        let link = Link {
            latency: args.latency,
            bandwidth: gbps * 125.0,
        };
        let mut p = 4;
        while p <= args.max_workers {
            let (sched, arrays) = sgd_mf_2d(args.users, args.items, args.k, p);
            // Equal blocks: p space partitions by the schedule's time partitions (one a step).
            let block = args.ratings as f64 / (p * sched.steps.len()) as f64;
            let cost_us = (block * c * 1e6).round() as u64;
            for placing in ["home", "copies", "in place"] {
                let plan = if placing == "home" {
                    Itinerary::new(&sched, p, 1, &arrays, true).expect("2D ships")
                } else if placing == "copies" {
                    let first = Itinerary::new(&sched, p, 1, &arrays, true).expect("2D ships");
                    Itinerary::new(&sched, p, 1, &first.next_arrays(&arrays), true)
                        .expect("2D ships")
                } else {
                    // The steady state, what the runtime does: start where the previous
                    // epoch left the parts (and the copies it left).
                    let first = Itinerary::new(&sched, p, 1, &arrays, false).expect("2D ships");
                    Itinerary::new(&sched, p, 1, &first.next_arrays(&arrays), false)
                        .expect("2D ships")
                };
                let mut sim = Sim::new(p, link, u64::MAX / 4, u64::MAX / 4);
                let r = sim.run_call(&sched, &plan, &|_, _| cost_us, &[4, 4], u64::MAX / 4);
                let epoch = r.makespan as f64 / 1e6;
                let eff = serial / (p as f64 * epoch);
                let wait = r.waiting as f64 / (p as f64 * r.makespan as f64);
                let (held, kept_all) = if placing == "in place" {
                    let start = Itinerary::new(&sched, p, 1, &arrays, false).expect("2D ships");
                    let data = 24.0 * args.ratings as f64 / p as f64;
                    let before = start.next_arrays(&arrays);
                    let now = memory(&plan, &before, p, true);
                    let all = memory(&plan, &before, p, false);
                    (
                        format!("{:.0}", (data + now) / MIB),
                        format!("{:.0}", (data + all) / MIB),
                    )
                } else {
                    ("-".into(), "-".into())
                };
                println!(
                    "{:>6}Gb {:>9} {:>9} {:>11.4} {:>10.1} {:>9.1}% {:>10.1}% {:>12} {:>12}",
                    gbps,
                    p,
                    placing,
                    epoch,
                    serial / epoch,
                    eff * 100.0,
                    wait * 100.0,
                    held,
                    kept_all
                );
                rows.push((gbps, p, placing, eff));
            }
            p *= 2;
        }
    }
    if let Some(dir) = &args.plot {
        plot(dir, &rows).expect("the plot is written");
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The elements of `0..len` outside `r`.
fn complement(r: &Region, len: u64) -> Region {
    let mut out = Region::default();
    let mut at = 0;
    for &(lo, hi) in &r.0 {
        out.push(at, lo);
        at = hi;
    }
    out.push(at, len);
    out
}

/// The largest rank's factor bytes over the call: for each rank, what it holds at the
/// start (the parts the previous epoch left it; the driver, what no other rank holds),
/// plus each transfer it receives when its task needs it; with `release`, less each block
/// it passes on that the plan releases (`Itinerary::release`, what the runtime does);
/// without, every block it ever saw (what a rank held before the runtime released them).
fn memory(plan: &Itinerary, arrays: &[PlanArray], ranks: usize, release: bool) -> f64 {
    let mut most: u64 = 0;
    for r in 0..ranks {
        let mut have: Vec<Region> = arrays
            .iter()
            .map(|pa| {
                let len: u64 = pa.shape.iter().product::<usize>() as u64;
                let away: Region = pa
                    .away
                    .iter()
                    .fold(Region::default(), |u, (g, _)| u.union(g));
                let mut start: Region = pa
                    .away
                    .iter()
                    .filter(|(_, o)| *o == r)
                    .fold(Region::default(), |u, (g, _)| u.union(g));
                if r == 0 {
                    start = start.union(&complement(&away, len));
                }
                start
            })
            .collect();
        let total = |have: &[Region]| have.iter().map(Region::len).sum::<u64>();
        let mut peak = total(&have);
        // One worker a rank (the simulator's layout): worker `r`'s tasks, step by step.
        for t in 0..plan.waits.len() {
            for &tid in &plan.waits[t][r] {
                let tr = &plan.transfers[tid];
                have[tr.array] = have[tr.array].union(&tr.region);
            }
            peak = peak.max(total(&have));
            for &tid in plan.sends[t][r]
                .iter()
                .filter(|&&tid| release && plan.release[tid])
            {
                let tr = &plan.transfers[tid];
                have[tr.array] = minus(&have[tr.array], &tr.region);
            }
        }
        most = most.max(peak);
    }
    most as f64 * 4.0
}

/// The elements of `a` outside `b`.
fn minus(a: &Region, b: &Region) -> Region {
    let mut out = Region::default();
    for &(lo, hi) in &a.0 {
        let mut at = lo;
        for &(x, y) in b.0.iter().filter(|&&(x, y)| y > lo && x < hi) {
            if x > at {
                out.push(at, x);
            }
            at = at.max(y);
        }
        if at < hi {
            out.push(at, hi);
        }
    }
    out
}

fn plot(dir: &std::path::Path, rows: &[(f64, usize, &str, f64)]) -> std::io::Result<()> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir)?;
    let path = dir.join("efficiency.svg");
    let root = SVGBackend::new(&path, (720, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(std::io::Error::other)?;
    let max_p = rows.iter().map(|r| r.1).max().unwrap_or(4) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "SGD-MF on Netflix-size data: predicted parallel efficiency",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d((4f64..max_p).log_scale(), 0f64..1.05)
        .map_err(std::io::Error::other)?;
    chart
        .configure_mesh()
        .x_desc("workers")
        .y_desc("efficiency")
        .draw()
        .map_err(std::io::Error::other)?;
    let series = [
        (10.0, "home", RED),
        (10.0, "copies", RGBColor(230, 140, 0)),
        (10.0, "in place", MAGENTA),
        (40.0, "home", BLUE),
        (40.0, "copies", CYAN),
        (40.0, "in place", GREEN),
    ];
    for (gbps, placing, color) in series {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.0 == gbps && r.2 == placing)
            .map(|r| (r.1 as f64, r.3))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color))
            .map_err(std::io::Error::other)?
            .label(format!("{gbps} Gb/s, {placing}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(std::io::Error::other)?;
    root.present().map_err(std::io::Error::other)?;
    println!("wrote {}", path.display());
    Ok(())
}
