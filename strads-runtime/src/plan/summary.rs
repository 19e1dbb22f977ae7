//! The plan line `STRADS_EXPLAIN` prints and traces keep.

use std::fmt::Write as _;

use strads_analysis::{Candidate, LoopSpec, Placement, Strategy};

/// `1d dim=i workers=2 blocks=2 local=w ...`: the candidate's line for `p` workers (and a
/// 2D plan's `times` time partitions).
pub(crate) fn summary(spec: &LoopSpec, c: &Candidate, p: usize, times: usize) -> String {
    let mut s = String::new();
    let _ = match c.strategy {
        Strategy::OneD { dim } => write!(s, "1d dim={} workers={p} blocks={p}", spec.dims[dim]),
        Strategy::Reconnaissance => write!(s, "reconnaissance workers={p}"),
        Strategy::Wavefront { space, time, .. } => {
            let skew = if strads_analysis::is_identity(&c.skew) {
                String::new()
            } else {
                format!(" skew={:?}", c.skew)
                    .replace(' ', "")
                    .replacen("skew=", " skew=", 1)
            };
            write!(
                s,
                "{}{skew} space={} time={} workers={p}",
                c.strategy.kind(),
                spec.dims[space],
                spec.dims[time]
            )
        }
        Strategy::TwoD { space, time } => write!(
            s,
            "2d space={} time={} workers={p} blocks={p}x{times}",
            spec.dims[space], spec.dims[time]
        ),
    };
    // ` label=a,b` for the arrays whose placement `is` picks.
    let mut list = |label: &str, is: fn(&Placement) -> bool| {
        let names: Vec<&str> = c
            .placements
            .iter()
            .zip(spec.arrays.iter())
            .filter(|(pl, _)| is(pl))
            .map(|(_, a)| a.name.as_ref())
            .collect();
        if !names.is_empty() {
            let _ = write!(s, " {label}={}", names.join(","));
        }
    };
    list("tiled", |pl| matches!(pl, Placement::Tiled));
    list("local", |pl| matches!(pl, Placement::Local(_)));
    list("rotated", |pl| matches!(pl, Placement::Rotated(_)));
    list("shared", |pl| matches!(pl, Placement::Shared));
    s
}

/// The plan line with the loop's write-back buffers named.
pub(crate) fn with_buffers(spec: &LoopSpec, summary: &str) -> String {
    let names: Vec<&str> = spec
        .buffers
        .iter()
        .map(|b| spec.arrays[b.array].name.as_ref())
        .collect();
    if let Some(b) = spec.buffers.iter().find(|b| b.average) {
        let how = match &b.merge {
            None => "averaged".to_owned(),
            Some(f) => format!("merged by {f}"),
        };
        if b.shared {
            return format!(
                "{summary} sync=hybrid replicas={} every={} (data-parallel: the threads of a \
                 process share its replica without locks, the processes' replicas {how} in \
                 rank order; not reproducible, not equal to a serial order)",
                names.join(","),
                spec.max_delay.unwrap_or(0)
            );
        }
        let stale = spec.staleness();
        if stale > 0 {
            return format!(
                "{summary} sync=ssp({stale}) replicas={} every={} (data-parallel: replicas \
                 {how} in the workers' tree order behind the workers, each up to {stale} \
                 batches ahead of the slowest; not equal to a serial order)",
                names.join(","),
                spec.max_delay.unwrap_or(0)
            );
        }
        return format!(
            "{summary} sync replicas={} every={} (data-parallel: replicas {how} in the \
             workers' tree order; not equal to a serial order)",
            names.join(","),
            spec.max_delay.unwrap_or(0)
        );
    }
    match (names.is_empty(), spec.max_delay) {
        (true, _) => summary.to_string(),
        (false, None) => format!("{summary} buffered={}", names.join(",")),
        (false, Some(n)) => format!("{summary} buffered={} max_delay={n}", names.join(",")),
    }
}
