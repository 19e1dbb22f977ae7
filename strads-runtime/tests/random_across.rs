//! Random loops on real processes (issue 23): the loops of `random_loops` (random accesses
//! of three arrays, interpreted by one body, over ranges, stepped range nests, dense and
//! sparse spaces, ordered or not), each registered for workers to serve as the macro
//! registers a `#[parallel_for]` loop, and called through the same cluster path its
//! generated code takes. The program runs every loop three calls in a row on the same
//! arrays and prints their bits after the second call (two calls in place, the arrays'
//! parts where the calls left them) and after the third (after the driver read every
//! array and wrote one element of one). `RANDOM` loops are drawn afresh from a seed
//! (`RANDOM_ACROSS_SEED=n` draws others, to look for more), and `PINNED` draws are kept.
//!
//! It runs as `STRADS_SERIAL=1`, on 2 and 4 threads, and as 2 processes x 1 thread and
//! 2 x 2 (every call runs its plan: `STRADS_COST=0`), and compares:
//! - every loop: 2 x 1 processes print what 2 threads print, and 2 x 2 what 4 threads
//!   print. A static plan for `w` workers is the same schedule on threads and across
//!   processes, and a schedule orders every pair of iterations that conflict, so the
//!   bits depend only on `w`.
//! - the loops whose plans keep the serial order (ordered loops, and wavefronts over a
//!   space in index order, as `random_loops` asserts): every layout prints the serial
//!   loop's bits. The other loops may run conflicting iterations in another serial order
//!   than the loop's own (a 1D plan over a reversed subscript, say), which is what they
//!   promise; `random_loops` checks that result against the replay of the order run.
//!
//! A test without libtest's harness: `main` starts the cluster first thing, as
//! `#[strads::main]` does, so the copies of this binary that `STRADS_PROCESSES` starts go
//! straight to serving.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use strads_analysis::SpaceKind;
use strads_runtime::cluster::call::Served;
use strads_runtime::cluster::registry::{LOOPS, RemoteLoop, Serve};
use strads_runtime::cluster::store::Stored;
use strads_runtime::cluster::wire::WireArray;
use strads_runtime::{
    Call, DistArray, GridSpace, LoopState, RangeSpace, SerialRun, SharedMut, Space, SparseArray,
};

#[path = "common/random.rs"]
mod random;
use random::{
    SIDE, body, build, coords, fresh, space_kind, sparse_points, spec_strategy, static_plan,
    stencil_strategy, stepped, structured_strategy, wavefront,
};

/// Random loops (`RANDOM_ACROSS_SEED` picks others), the pinned draws after them, and calls
/// of each.
const RANDOM: usize = 24;
const K: usize = RANDOM + PINNED.len();
const CALLS: usize = 3;

/// Draws kept as cases: `(k, seed)` is loop `k` of `RANDOM_ACROSS_SEED=seed`. Strided loops
/// whose windows are lattices (`b[*, 2i + 10]` written beside `b[.., 2i + 9]` read), which
/// fail when a lattice window's region across processes leaves out the indices it only
/// reads (the bug 425e8fe fixed). With that fix undone, 5 of the 3,360 loops of seeds 41
/// to 250 (16 loops each then) failed, these two among them; the test's own 24 did not.
const PINNED: [(usize, u64); 2] = [(15, 53), (9, 112)];
/// How long one run of the program may take.
const LIMIT: Duration = Duration::from_secs(120);

/// One random loop: its state (spec, plans) and the space it runs over.
struct Case {
    state: LoopState,
    n_dims: usize,
    /// As `random::space_kind` reads it.
    kind: u8,
    extent: usize,
    sparse_seed: u64,
    /// The strategy that made it.
    family: &'static str,
}

impl Case {
    /// The plan keeps the serial order: every layout gives the serial loop's bits.
    fn serial_order(&self) -> bool {
        let spec = self.state.spec();
        let in_index_order = match spec.space {
            SpaceKind::Array { sparse: true, .. } => {
                sparse_points(self.extent, self.n_dims, self.sparse_seed).is_sorted()
            }
            _ => true,
        };
        spec.ordered || (wavefront(spec) && in_index_order)
    }

    /// What the space is, for the report.
    fn space_name(&self) -> String {
        let n = self.n_dims;
        match (self.state.spec().space, self.kind) {
            (SpaceKind::Range, 3) => format!("stepped {n}D range nest"),
            (SpaceKind::Range, _) => format!("{n}D range"),
            (SpaceKind::Array { sparse: true, .. }, _) => {
                let sorted = sparse_points(self.extent, n, self.sparse_seed).is_sorted();
                format!(
                    "{n}D sparse ({})",
                    if sorted { "index order" } else { "shuffled" }
                )
            }
            (SpaceKind::Array { .. }, _) => format!("{n}D dense"),
        }
    }
}

fn draw<S: Strategy>(runner: &mut TestRunner, s: S) -> S::Value {
    s.new_tree(runner).expect("a value").current()
}

/// Loop `slot`: random loop `slot`, or a pinned one.
fn generate(slot: usize) -> Case {
    let (k, seed) = match slot.checked_sub(RANDOM) {
        None => (slot, other_loops()),
        Some(p) => PINNED[p],
    };
    let mut case = draw_loop(k, seed);
    let mut spec = case.state.spec().clone();
    spec.name = Cow::Borrowed(NAMES[slot]);
    case.state = LoopState::new(spec);
    case
}

/// Loop `k` of `seed`, drawn from `random_loops`' strategies by a generator seeded with
/// both (and an attempt number, until the loop has a static plan, as `random_loops`
/// assumes). Its space kind, whether it is ordered and whether sparse entries are sorted
/// follow `k`, so the loops cover every combination; the strategy is `k % 3`.
fn draw_loop(k: usize, seed: u64) -> Case {
    let kind = (k % 4) as u8;
    let ordered = (k / 4) % 2 == 1;
    let sorted = (k / 8) % 2 == 0;
    for attempt in 0u64.. {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&(k as u64).to_le_bytes());
        bytes[8..16].copy_from_slice(&attempt.to_le_bytes());
        bytes[16..24].copy_from_slice(&seed.to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
        );
        let (family, ((n_dims, raw), extent, sparse_seed)) = match k % 3 {
            0 => (
                "any",
                draw(&mut runner, (spec_strategy(), 1usize..6, any::<u64>())),
            ),
            1 => (
                "factor-shaped",
                draw(
                    &mut runner,
                    (structured_strategy(), 1usize..7, any::<u64>()),
                ),
            ),
            _ => (
                "stencil",
                draw(&mut runner, (stencil_strategy(), 2usize..7, any::<u64>())),
            ),
        };
        // A range is 1D (a nest of more dims iterates a dense array).
        if kind == 0 && k % 3 == 0 && n_dims != 1 {
            continue;
        }
        let spec = build(n_dims, &raw, space_kind(kind, n_dims), ordered);
        if !static_plan(&spec) {
            continue;
        }
        return Case {
            state: LoopState::new(spec),
            n_dims,
            kind,
            extent,
            sparse_seed: (sparse_seed & !1) | u64::from(!sorted),
            family,
        };
    }
    unreachable!("attempts never end")
}

/// `RANDOM_ACROSS_SEED=n`: other random loops than the test's own (0), to look for more.
fn other_loops() -> u64 {
    std::env::var("RANDOM_ACROSS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn case(k: usize) -> &'static Case {
    static CASES: [OnceLock<Case>; K] = [const { OnceLock::new() }; K];
    CASES[k].get_or_init(|| generate(k))
}

/// One call of loop `k` over `space`, as the macro's generated code makes it on the driver
/// and on a worker alike: `Call::new` (the driver) or `Call::served` (a worker, with the
/// call its serve loop gave it), then `cluster` with the loop's captured bytes (here
/// `k`), the space when it is a range (`range`), the arrays in the spec's order (the
/// space array last), and `run` with the body over the block's views. `Some`: the call
/// handed the loop back to its serial body.
fn call<S, Sp>(
    k: usize,
    served: Option<Served>,
    space: &S,
    range: Option<&Sp>,
    space_array: Option<&dyn WireArray>,
    to_point: &(impl Fn(&S::Item<'_>) -> Vec<usize> + Sync),
    arrays: &mut [DistArray<f64, 2>],
) -> Option<SerialRun>
where
    S: Space,
    Sp: serde::Serialize,
{
    let state = &case(k).state;
    let spec = state.spec();
    let mut shapes = vec![vec![SIDE, SIDE]; 3];
    if space_array.is_some() {
        shapes.push(space.extents());
    }
    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let call = match served {
        Some(served) => Call::served(state, &shapes, served),
        None => Call::new(state, &shapes),
    };
    let shared: Vec<SharedMut<'_, f64, 2>> = arrays.iter_mut().map(SharedMut::new).collect();
    let mut wires: Vec<&dyn WireArray> = shared.iter().map(|s| s as &dyn WireArray).collect();
    wires.extend(space_array);
    call.cluster(NAMES[k], || Some(vec![k as u8]), range, &wires, None)
        .run(space, |blk| {
            let mut views: Vec<_> = (0..3).map(|a| blk.view_mut(&shared[a], a)).collect();
            blk.for_each(|it| body(spec, &to_point(&it), &mut views));
        })
        .serial()
}

/// Where a call's space comes from: the driver makes it from the case; a worker takes it
/// from the driver's message (a range) or its copy of the space array (array 3), and
/// puts the array back after the call.
trait Spaces {
    /// A worker's: the driver's call it serves; the driver's: `None`.
    fn served(&self) -> Option<Served>;
    fn range<S: serde::de::DeserializeOwned>(
        &mut self,
        make: impl FnOnce() -> S,
    ) -> Result<S, String>;
    fn dense<const N: usize>(&mut self, c: &Case) -> Result<DistArray<u8, N>, String>;
    fn sparse<const N: usize>(&mut self, c: &Case) -> Result<SparseArray<u8, N>, String>;
    fn put<A: Stored>(&mut self, space: A) -> Result<(), String>;
}

/// The driver's spaces, made from the case.
struct Made;

impl Spaces for Made {
    fn served(&self) -> Option<Served> {
        None
    }
    fn range<S>(&mut self, make: impl FnOnce() -> S) -> Result<S, String> {
        Ok(make())
    }
    fn dense<const N: usize>(&mut self, c: &Case) -> Result<DistArray<u8, N>, String> {
        Ok(DistArray::zeros([c.extent; N]))
    }
    fn sparse<const N: usize>(&mut self, c: &Case) -> Result<SparseArray<u8, N>, String> {
        let entries = sparse_points(c.extent, N, c.sparse_seed)
            .into_iter()
            .map(|p| (std::array::from_fn(|d| p[d]), 0u8))
            .collect();
        SparseArray::from_entries([c.extent; N], entries).map_err(|e| e.to_string())
    }
    fn put<A: Stored>(&mut self, _: A) -> Result<(), String> {
        Ok(())
    }
}

/// A worker's spaces, from the driver's call.
impl Spaces for Serve<'_> {
    fn served(&self) -> Option<Served> {
        Some(Serve::served(self))
    }
    fn range<S: serde::de::DeserializeOwned>(
        &mut self,
        _: impl FnOnce() -> S,
    ) -> Result<S, String> {
        self.space::<S>()
    }
    fn dense<const N: usize>(&mut self, _: &Case) -> Result<DistArray<u8, N>, String> {
        Serve::dense::<u8, N>(self, 3)
    }
    fn sparse<const N: usize>(&mut self, _: &Case) -> Result<SparseArray<u8, N>, String> {
        Serve::sparse::<u8, N>(self, 3)
    }
    fn put<A: Stored>(&mut self, space: A) -> Result<(), String> {
        Serve::put(self, 3, space)
    }
}

/// One call of loop `k` on `arrays`, over its space from `from`: as the driver's program
/// calls it, or as a worker serves the driver's call (the macro's serve function runs the
/// call and ignores what it returns).
fn run_case(
    k: usize,
    from: &mut impl Spaces,
    arrays: &mut [DistArray<f64, 2>],
) -> Result<(), String> {
    let c = case(k);
    let served = from.served();
    let none = None::<&()>;
    macro_rules! on {
        (grid $n:literal) => {{
            let s =
                from.range(|| GridSpace::<$n>::new(std::array::from_fn(|d| stepped(d, c.extent))))?;
            one(k, served.clone(), &s, Some(&s), None, |p| coords(p), arrays);
        }};
        (range) => {{
            let s = from.range(|| RangeSpace::new(0, c.extent + 1))?;
            one(k, served.clone(), &s, Some(&s), None, |&i| vec![i], arrays);
        }};
        ($take:ident $n:literal) => {{
            let s = from.$take::<$n>(c)?;
            one(
                k,
                served.clone(),
                &s,
                none,
                Some(&s),
                |(p, _)| p.to_vec(),
                arrays,
            );
            from.put(s)?;
        }};
    }
    match (c.state.spec().space, c.kind, c.n_dims) {
        (SpaceKind::Range, 3, 1) => on!(grid 1),
        (SpaceKind::Range, 3, 2) => on!(grid 2),
        (SpaceKind::Range, 3, _) => on!(grid 3),
        (SpaceKind::Range, _, _) => on!(range),
        (SpaceKind::Array { sparse: true, .. }, _, 1) => on!(sparse 1),
        (SpaceKind::Array { sparse: true, .. }, _, 2) => on!(sparse 2),
        (SpaceKind::Array { sparse: true, .. }, _, _) => on!(sparse 3),
        (SpaceKind::Array { .. }, _, 1) => on!(dense 1),
        (SpaceKind::Array { .. }, _, 2) => on!(dense 2),
        (SpaceKind::Array { .. }, _, _) => on!(dense 3),
    }
    Ok(())
}

/// One call of loop `k` over `space`: the driver's (the serial loop when asked for or
/// handed back), or a worker's.
fn one<S, Sp>(
    k: usize,
    served: Option<Served>,
    space: &S,
    range: Option<&Sp>,
    space_array: Option<&dyn WireArray>,
    to_point: impl Fn(&S::Item<'_>) -> Vec<usize> + Sync,
    arrays: &mut [DistArray<f64, 2>],
) where
    S: Space,
    Sp: serde::Serialize,
{
    let state = &case(k).state;
    if served.is_some() {
        let _ = call(k, served, space, range, space_array, &to_point, arrays);
        return;
    }
    let serial = if strads_runtime::serial_env() {
        state.explain_serial();
        Some(SerialRun::requested())
    } else {
        call(k, None, space, range, space_array, &to_point, arrays)
    };
    if let Some(serial) = serial {
        for id in 0..space.len() {
            body(state.spec(), &to_point(&space.item(id)), arrays);
        }
        serial.finish();
    }
}

/// A worker's side of loop `k`: this rank's part of the driver's call, with the arrays
/// taken and put back in the spec's order, as the macro's serve function does.
fn serve(k: usize, serve: &mut Serve<'_>) -> Result<(), String> {
    if serve.captured_bytes() != [k as u8] {
        return Err(format!(
            "loop {k} got the captured bytes {:?}",
            serve.captured_bytes()
        ));
    }
    let mut arrays = (0..3)
        .map(|a| serve.dense::<f64, 2>(a))
        .collect::<Result<Vec<_>, _>>()?;
    run_case(k, serve, &mut arrays)?;
    for (a, array) in arrays.into_iter().enumerate() {
        serve.put(a, array)?;
    }
    Ok(())
}

/// The loops, registered for workers to find by name as the macro registers each
/// `#[parallel_for]` loop: the name the driver's calls send, the spec (a worker refuses a
/// call whose spec differs) and the serve function.
macro_rules! register {
    ($($k:literal $slot:ident),* $(,)?) => {
        const NAMES: [&str; K] = [$(concat!("random_across_", $k)),*];
        $(
            #[strads_runtime::linkme::distributed_slice(LOOPS)]
            #[linkme(crate = strads_runtime::linkme)]
            static $slot: RemoteLoop = RemoteLoop {
                name: NAMES[$k],
                spec: || case($k).state.spec().clone(),
                serve: |s| serve($k, s),
            };
        )*
    };
}

register!(
    0 LOOP_0, 1 LOOP_1, 2 LOOP_2, 3 LOOP_3, 4 LOOP_4, 5 LOOP_5, 6 LOOP_6, 7 LOOP_7,
    8 LOOP_8, 9 LOOP_9, 10 LOOP_10, 11 LOOP_11, 12 LOOP_12, 13 LOOP_13, 14 LOOP_14, 15 LOOP_15,
    16 LOOP_16, 17 LOOP_17, 18 LOOP_18, 19 LOOP_19, 20 LOOP_20, 21 LOOP_21, 22 LOOP_22,
    23 LOOP_23, 24 LOOP_24, 25 LOOP_25,
);

/// Bits of several arrays, as one number.
fn digest(arrays: &[DistArray<f64, 2>]) -> u64 {
    arrays
        .iter()
        .flat_map(strads_runtime::testing::bits)
        .fold(0u64, |s, b| s.wrapping_mul(1_000_003).wrapping_add(b))
}

/// The program under test: every loop, `CALLS` calls in a row, its arrays' bits after the
/// second and the last; a line per print, `loop <k> <serial|plan> after <n> calls:
/// <digest>` (`serial`: the plan keeps the serial order).
fn program() {
    for k in 0..K {
        let c = case(k);
        let class = if c.serial_order() { "serial" } else { "plan" };
        let mut arrays = fresh();
        for n in 1..=CALLS {
            if n == CALLS {
                // The driver writes an element the workers' copies may hold.
                arrays[k % 3][[k % SIDE, 8]] += 0.5;
            }
            run_case(k, &mut Made, &mut arrays).expect("the driver makes its spaces");
            if n >= 2 {
                println!(
                    "loop {k:02} {class} after {n} calls: {:016x}",
                    digest(&arrays)
                );
            }
        }
    }
}

/// Runs this binary as the program under test with `env` (`STRADS_COST=0`, so every call
/// runs its plan, and `STRADS_EXPLAIN=1`; no `STRADS_*` of the caller's), waiting at most
/// `LIMIT`: its output and its explain lines.
fn run(env: &[(&str, &str)]) -> Result<(String, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("STRADS_COST", "0")
        .env("RANDOM_ACROSS_ROLE", "program")
        .env("STRADS_EXPLAIN", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if start.elapsed() > LIMIT {
            // Its workers die with it (they are started with a parent-death signal).
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Some(s) if s.success() => Ok((stdout, stderr)),
        Some(s) => Err(format!("{env:?} failed ({s}):\n{stdout}\n{stderr}")),
        None => Err(format!(
            "{env:?} ran past {LIMIT:?} and was killed:\n{stdout}\n{stderr}"
        )),
    }
}

/// A run's lines: `loop <k> <class> after <n> calls` to its digest.
fn lines(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The lines of run `a` that run `b` does not print alike (only `serial` loops' when
/// `serial_only`); each run is `(name, lines)`.
fn differ(
    (a_name, a): (&str, &BTreeMap<String, String>),
    (b_name, b): (&str, &BTreeMap<String, String>),
    serial_only: bool,
) -> Vec<String> {
    a.iter()
        .filter(|(k, _)| !serial_only || k.contains(" serial "))
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, v)| {
            let other = b.get(k).map_or("nothing", String::as_str);
            format!("{k}: {v} on {a_name}, {other} on {b_name}")
        })
        .collect()
}

fn check() -> Result<(), String> {
    let t0 = Instant::now();
    let (serial, _) = run(&[("STRADS_SERIAL", "1")])?;
    let serial = lines(&serial);
    if serial.len() != K * (CALLS - 1) {
        return Err(format!("the serial run printed {serial:?}"));
    }
    let mut crossed = Vec::new();
    for (procs, threads, same) in [("2", "1", "2"), ("2", "2", "4")] {
        let (one, _) = run(&[("STRADS_THREADS", same)])?;
        let one = lines(&one);
        let threads_name = format!("{same} threads");
        let wrong = differ(("the serial loop", &serial), (&threads_name, &one), true);
        if !wrong.is_empty() || one.len() != serial.len() {
            return Err(format!(
                "{same} threads differ from the serial loops where the plans keep the serial \
                 order:\n{}",
                wrong.join("\n")
            ));
        }
        let (many, explain) = run(&[("STRADS_PROCESSES", procs), ("STRADS_THREADS", threads)])?;
        let many = lines(&many);
        let procs_name = format!("{procs} x {threads}");
        let wrong = differ((&threads_name, &one), (&procs_name, &many), false);
        if !wrong.is_empty() || many.len() != one.len() {
            return Err(format!(
                "{procs} processes x {threads} threads differ from {same} threads:\n{}\n\
                 explain:\n{explain}",
                wrong.join("\n")
            ));
        }
        // Every loop crossed, or says why it ran on the driver's threads, or has a plan of
        // fewer workers than the job's (one, when the schedule it made failed its own
        // check), which runs on the driver without a word.
        let workers = procs.parse::<usize>().unwrap_or(0) * threads.parse::<usize>().unwrap_or(0);
        let mut n = 0;
        for name in NAMES {
            let said = |line: &str| explain.lines().find(|l| l.starts_with(line));
            let plan = said(&format!("strads plan {name}: "))
                .and_then(|l| l.split_once(" workers="))
                .and_then(|(_, w)| w.split(' ').next()?.parse::<usize>().ok());
            if said(&format!(
                "strads cluster {name}: {procs} processes x {threads} threads;"
            ))
            .is_some()
            {
                n += 1;
            } else if said(&format!(
                "strads cluster {name}: runs on the driver's threads"
            ))
            .is_none()
                && plan.is_none_or(|w| w >= workers)
            {
                return Err(format!(
                    "{name} said neither that it crossed processes nor why it did not \
                     ({procs} x {threads}):\n{explain}"
                ));
            }
        }
        crossed.push(format!("{n} of {K} crossed at {procs} x {threads}"));
    }
    for k in 0..K {
        let c = case(k);
        let spec = c.state.spec();
        let accesses: Vec<String> = spec
            .accesses
            .iter()
            .map(|a| format!("{} {}", a.display(spec), a.kind))
            .collect();
        println!(
            "loop {k:02}: {} {}{} ({}), {}",
            c.family,
            if spec.ordered { "ordered " } else { "" },
            c.space_name(),
            accesses.join(", "),
            if c.serial_order() {
                "the serial loop's bits"
            } else {
                "a plan's order"
            },
        );
    }
    println!(
        "random_across: {K} random loops ({RANDOM} drawn, {} pinned) print the same bits on \
         2 x 1 processes as on 2 threads, on 2 x 2 as on 4, and the serial loop's where the \
         plan keeps its order ({}; {:.1} s)",
        PINNED.len(),
        crossed.join(", "),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    // As `#[strads::main]`: a worker rank serves here and never returns.
    strads_runtime::cluster::start();
    if std::env::var("RANDOM_ACROSS_ROLE").as_deref() == Ok("program") {
        program();
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check() {
        eprintln!("random_across: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
