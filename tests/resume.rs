//! Checkpoints and fast re-execution (issue 26, items 1 and 2): a program killed part way
//! and run again with `STRADS_RESUME=1` prints what the uninterrupted run prints, bit for
//! bit, on threads and as 2 processes; a checkpoint of another P is refused naming both; a
//! damaged file makes the run fall back to the checkpoint before, or stop naming it; as 2
//! processes, inputs made in parts on the ranks (`from_fn`, `from_entries`) too, the
//! pieces read back by the ranks that wrote them, a changed input in parts refused, and a
//! checkpoint costing no copy of what a rank holds.
//!
//! The program's output includes a value serial code reads of an array between calls,
//! which the skipped part of a resumed run cannot compute: the checkpoint's log of the
//! output stands in for it.
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml): it runs its own
//! binary as the program.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

#[path = "common/procs.rs"]
mod procs;
#[path = "common/self_run.rs"]
mod self_run;
use procs::{alive, descendants};
use self_run::{digest, figure, main_of_roles, peak_kb, run_self, run_self_status};

use strads::prelude::*;

const ROLE: &str = "RESUME_ROLE";
const EPOCHS: usize = 12;

/// A 1D loop that writes every element of `w` from the input `x`.
#[strads::parallel_for(expect = "1d")]
fn step(w: &mut DistArray<f64, 1>, x: &DistArray<f64, 1>, n: usize, lr: f64) {
    for u in 0..n {
        w[u] = w[u] * (1.0 - lr) + lr * x[u] * (u % 7) as f64;
    }
}

/// A read-only loop with two reductions.
#[strads::parallel_for]
fn eval(w: &DistArray<f64, 1>, x: &DistArray<f64, 1>, n: usize) -> (f64, usize) {
    let mut loss: f64 = 0.0;
    let mut big: usize = 0;
    for u in 0..n {
        let d = w[u] - x[u];
        loss += d * d;
        if w[u] > 1.0 {
            big += 1;
        }
    }
    (loss, big)
}

/// `iter_mut()` values: a sparse array whose values every call rewrites.
#[strads::parallel_for]
fn relabel(z: &mut SparseArray<u32, 2>, w: &DistArray<f64, 1>) {
    for ([i, _], v) in z.iter_mut() {
        *v = (*v + (w[i] * 10.0) as u32) % 13;
    }
}

/// A read-only loop over sparse input entries (in parts on the ranks when large).
#[strads::parallel_for]
fn ysum(y: &SparseArray<f32, 2>, w: &DistArray<f64, 1>) -> f64 {
    let mut s: f64 = 0.0;
    for ([u, _], &v) in y {
        s += f64::from(v) * w[u];
    }
    s
}

/// A loop the program calls once, at the start, over an input no later call names.
#[strads::parallel_for(expect = "1d")]
fn start_from(w: &mut DistArray<f64, 1>, raw: &DistArray<f64, 1>, n: usize) {
    for u in 0..n {
        w[u] = raw[u] * 0.5;
    }
}

fn program() {
    // `RESUME_N=200000` makes the inputs `from_fn` makes (1.5 MiB each) and the entries
    // (1.1 MiB) large enough to be made in parts on a job's driver.
    let n: usize = std::env::var("RESUME_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // Written by the first call only, then read by every epoch: on a cluster its parts
    // stay where that call left them, and a resumed run's checkpoints name the pieces the
    // lost run wrote (which no rank of the resumed run is asked to write again).
    // `DENSE_SHIFT` changes one of its values, in the part rank 1 holds of it as 2
    // processes, as a changed input file would.
    let dense_shift: f64 = std::env::var("DENSE_SHIFT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let x_raw = DistArray::<f64, 1>::from_fn([n], |[u]| {
        ((u * 31 % 101) as f64) / 25.0 + if u == n - 5 { dense_shift } else { 0.0 }
    });
    let mut x = DistArray::<f64, 1>::zeros([n]);
    start_from(&mut x, &x_raw, n);
    let mut w = DistArray::<f64, 1>::zeros([n]);
    // Named by this call only: checkpoints must not wait for it to be named again.
    let raw = DistArray::<f64, 1>::from_fn([n], |[u]| (u % 3) as f64);
    start_from(&mut w, &raw, n);
    let entries = (0..if n > 20_000 { 100_000 } else { 3000 })
        .map(|e| ([e * 7 % n, e % 5], (e % 13) as u32))
        .collect();
    let mut z = SparseArray::<u32, 2>::from_entries([n, 5], entries).expect("entries");
    // An input only read (its checksum is what a resumed run compares); `INPUT_SHIFT`
    // changes one of its values, as a changed input file would.
    let shift: f32 = std::env::var("INPUT_SHIFT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let m = if n > 20_000 { 100_000 } else { 3000 };
    let y = SparseArray::<f32, 2>::from_entries_iter(
        [n, 5],
        (0..m).map(|e| {
            let v = (e % 11) as f32 + if e == m - 7 { shift } else { 0.0 };
            ([e * 3 % n, e % 5], v)
        }),
    )
    .expect("entries");
    let die_after: Option<usize> = std::env::var("DIE_AFTER").ok().and_then(|v| v.parse().ok());
    let pause: u64 = std::env::var("PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for epoch in 0..EPOCHS {
        std::thread::sleep(std::time::Duration::from_millis(pause));
        step(&mut w, &x, n, 0.1 + epoch as f64 * 0.01);
        // Serial code sets an element by value (as 2 processes, one rank 1 holds: set
        // there, after the checkpoint the call's end may have begun saving).
        let u = n - 3 - epoch;
        w.set([u], w.value([u]) * 0.5 + 0.25);
        relabel(&mut z, &w);
        // An array written by a call and dropped right after (its parts saved on a cluster
        // rank as the driver drops it).
        let mut scratch = DistArray::<f64, 1>::zeros([n]);
        step(&mut scratch, &x, n, 0.5);
        drop(scratch);
        let (loss, big) = eval(&w, &x, n);
        let ys = ysum(&y, &w);
        // `w[7]` is read by serial code: in the skipped part of a resumed run it is not yet
        // the checkpoint's; the checkpoint's log of the output stands in for this line.
        println!(
            "epoch {epoch}: loss {:016x} big {big} y {:016x} w7 {:016x}",
            loss.to_bits(),
            ys.to_bits(),
            w[7].to_bits()
        );
        if die_after == Some(epoch) {
            // Killed here: what was written survives; the rest is lost.
            strads::__private::resume::flush();
            std::process::exit(9);
        }
    }
    let bits = |a: &[f64]| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let zs = z.values().iter().map(|&v| u64::from(v)).collect::<Vec<_>>();
    println!("final {:016x}", digest(&[bits(w.as_slice()), zs]));
}

/// Runs the program with checkpoints after every call in `dir`, and `env`: exit code,
/// stdout, stderr.
fn run(dir: &Path, env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), String> {
    let dir = dir.to_string_lossy();
    let mut all = vec![
        ("STRADS_CHECKPOINT", &*dir),
        ("STRADS_CHECKPOINT_SECONDS", "0"),
    ];
    all.extend_from_slice(env);
    run_self_status(ROLE, "program", &all)
}

fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strads-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn expect(what: &str, ok: bool, detail: impl std::fmt::Display) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}:\n{detail}"))
    }
}

/// Killed after epoch 6, then resumed: the uninterrupted output, in layout `env`; the
/// directory, and what the resumed run printed on stderr.
fn killed_and_resumed(
    name: &str,
    env: &[(&str, &str)],
    plain: &str,
) -> Result<(PathBuf, String), String> {
    let dir = fresh(name);
    let (code, out, err) = run(&dir, env)?;
    expect(
        &format!("{name}: a run with checkpoints"),
        code == Some(0) && out == plain,
        format!("{code:?}\n{out}\n{err}"),
    )?;
    let mut die = env.to_vec();
    die.push(("DIE_AFTER", "6"));
    let (code, out, err) = run(&dir, &die)?;
    expect(
        &format!("{name}: the killed run"),
        code == Some(9) && out.lines().count() == 7,
        format!("{code:?}\n{out}\n{err}"),
    )?;
    let mut again = env.to_vec();
    again.push(("STRADS_RESUME", "1"));
    let (code, out, err) = run(&dir, &again)?;
    expect(
        &format!("{name}: the resumed run prints the uninterrupted run's output"),
        code == Some(0) && out == plain,
        format!("{code:?}\n{out}\n---\n{plain}\n{err}"),
    )?;
    expect(
        &format!("{name}: it says it resumed"),
        err.contains("strads: resumed from the checkpoint") && err.contains(" calls skipped"),
        &err,
    )?;
    // Checkpoints go on after a resume: a newer one than the checkpoint it resumed from.
    let call_of = |name: &str| -> Option<u64> {
        name.rsplit('/')
            .next()?
            .strip_prefix("manifest-")?
            .strip_suffix(".json")?
            .parse()
            .ok()
    };
    let from = err
        .split("resumed from the checkpoint ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(call_of);
    let newest = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| call_of(e.file_name().to_str()?))
        .max();
    expect(
        &format!("{name}: the resumed run writes checkpoints after the one it resumed from"),
        matches!((from, newest), (Some(f), Some(n)) if n > f),
        format!("resumed from {from:?}, newest {newest:?}\n{err}"),
    )?;
    Ok((dir, err))
}

/// A resumed job's arrays with parts on the other rank were read back there: the resumed
/// line says how much, and nothing of it came to the driver.
fn restored_in_parts(name: &str, err: &str) -> Result<(), String> {
    let line = err
        .lines()
        .find(|l| l.contains("strads: resumed from the checkpoint"))
        .unwrap_or("");
    expect(
        &format!("{name}: the parts other ranks wrote are read back there"),
        line.contains(" MiB of it by the ranks that hold it"),
        err,
    )
}

/// 3 processes; a worker killed with SIGKILL part way: the job restarts itself and ends
/// with the uninterrupted output and status 0, leaving no process behind.
fn worker_killed(plain3: &str, trial: u32) -> Result<(), String> {
    let dir = fresh(&format!("killed-{trial}"));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .env(ROLE, "program")
        .env("STRADS_COST", "0")
        .env("STRADS_CHECKPOINT", &dir)
        .env("STRADS_CHECKPOINT_SECONDS", "0")
        .env("STRADS_PROCESSES", "3")
        .env("STRADS_THREADS", "1")
        .env("PAUSE_MS", "60")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let drain = |r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut r = r;
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    // A moment drawn from the clock, while the epochs run (12 of at least 60 ms).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let at = std::time::Duration::from_millis(250 + u64::from(nanos % 400));
    let start = std::time::Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    let mut killed = None;
    let deadline = start + std::time::Duration::from_secs(300);
    let status = loop {
        seen.extend(descendants(child.id()));
        if killed.is_none() && start.elapsed() >= at {
            // A worker of the first run: a child of the driver, not the restarted driver.
            if let Some(&w) = descendants(child.id()).first() {
                let _ = Command::new("kill")
                    .args(["-KILL", &w.to_string()])
                    .status();
                killed = Some(w);
            }
        }
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err("the killed job ran past 300 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let what = format!("trial {trial}: worker {killed:?} killed at {at:?}");
    expect(
        &format!("{what}: exit 0 and the uninterrupted output"),
        status.success() && out == plain3,
        format!("{status}\n{out}\n---\n{plain3}\n{err}"),
    )?;
    expect(
        &format!("{what}: it says it restarted"),
        killed.is_some() && err.contains("restarting every rank from the newest checkpoint"),
        &err,
    )?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left: Vec<u32> = seen.into_iter().filter(|&p| alive(p)).collect();
    expect(
        &format!("{what}: no process left behind"),
        left.is_empty(),
        format!("{left:?}"),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn check() -> Result<(), String> {
    let (plain, _) = run_self(ROLE, "program", &[("STRADS_THREADS", "2")])?;
    if plain.lines().count() != EPOCHS + 1 {
        return Err(format!("the program's output:\n{plain}"));
    }
    // Checkpoints at most every 0.2 s (epochs of 60 ms): between them the call at the start
    // writes `w` and names `raw` for the only time.
    let spaced = [
        ("STRADS_THREADS", "2"),
        ("STRADS_CHECKPOINT_SECONDS", "0.2"),
        ("PAUSE_MS", "60"),
    ];
    let (dir, _) = killed_and_resumed("spaced", &spaced, &plain)?;
    let _ = std::fs::remove_dir_all(&dir);
    let threads = [("STRADS_THREADS", "2")];
    let (dir, _) = killed_and_resumed("threads", &threads, &plain)?;

    // Another P: refused, naming both.
    let (code, _, err) = run(&dir, &[("STRADS_THREADS", "1"), ("STRADS_RESUME", "1")])?;
    expect(
        "a checkpoint of another P is refused",
        code == Some(2) && err.contains("P = 2 workers") && err.contains("1 workers"),
        &err,
    )?;

    // A file only the newest checkpoint names, damaged: the run falls back to the one
    // before it.
    let named = |manifest: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(manifest).unwrap_or_default();
        text.split("\"file\": \"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next().map(str::to_owned))
            .collect()
    };
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    manifests.sort();
    let [.., before, newest] = &manifests[..] else {
        return Err(format!("two complete checkpoints expected: {manifests:?}"));
    };
    let old = named(before);
    // A file only the newest checkpoint names; when it saved none of its own (nothing
    // changed since the one before), the newest manifest itself.
    let damaged = named(newest)
        .into_iter()
        .find(|f| !old.contains(f))
        .map_or_else(|| newest.clone(), |f| dir.join(f));
    let mut bytes = std::fs::read(&damaged).map_err(|e| e.to_string())?;
    let k = bytes.len() / 2;
    bytes[k] ^= 0x40;
    std::fs::write(&damaged, &bytes).map_err(|e| e.to_string())?;
    let resume = [("STRADS_THREADS", "2"), ("STRADS_RESUME", "1")];
    let (code, out, err) = run(&dir, &resume)?;
    expect(
        "a damaged file: the checkpoint before it",
        code == Some(0)
            && out == plain
            && (err.contains("fails its checksum: falling back")
                || err.contains(": trying the one before it")),
        format!("{code:?}\n{out}\n{err}"),
    )?;
    // Every file damaged: stopped, naming one.
    for e in std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|e| e == "bin") {
            let mut b = std::fs::read(&p).map_err(|e| e.to_string())?;
            b[0] ^= 0x40;
            std::fs::write(&p, &b).map_err(|e| e.to_string())?;
        }
    }
    let (code, out, err) = run(&dir, &resume)?;
    expect(
        "every file damaged: stopped, naming a file",
        code == Some(2)
            && out.is_empty()
            && err.contains("no complete checkpoint in")
            && err.contains(".bin fails its checksum"),
        format!("{code:?}\n{out}\n{err}"),
    )?;
    let _ = std::fs::remove_dir_all(&dir);

    // As 2 processes: the same bits as 2 threads, killed and resumed.
    let procs = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")];
    let (dir, err) = killed_and_resumed("processes", &procs, &plain)?;
    restored_in_parts("processes", &err)?;
    let _ = std::fs::remove_dir_all(&dir);

    // As 2 processes with inputs made in parts on the ranks (both of `from_fn`'s, the first
    // before the job's first call, which starts the job; and the entries `from_entries`
    // makes, which the `iter_mut()` loop then brings home): killed and resumed, the bits
    // of 2 threads.
    let big = ("RESUME_N", "200000");
    let (plain_big, _) = run_self(ROLE, "program", &[("STRADS_THREADS", "2"), big])?;
    let procs_big = [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1"), big];
    let (out, err) = run_self(ROLE, "program", &procs_big)?;
    expect(
        "in parts: made in parts, the bits of 2 threads",
        out == plain_big
            && err
                .matches("(DistArray::from_fn [200000]) made in place")
                .count()
                == 2
            && err.contains("(sparse [200000, 5]) made in place"),
        format!("{out}\n---\n{plain_big}\n{err}"),
    )?;
    let (dir, err) = killed_and_resumed("in-parts", &procs_big, &plain_big)?;
    restored_in_parts("in-parts", &err)?;
    // `z`, whose values the `iter_mut()` loop left on the rank that runs their entries, was
    // saved there: each rank wrote a piece of it (none came to the driver).
    let newest = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .max()
        .ok_or("no manifest")?;
    let text = std::fs::read_to_string(&newest).map_err(|e| e.to_string())?;
    let z = text
        .split("\"kind\": ")
        .find(|a| a.starts_with("\"SparseArray<u32, 2> [200000, 5]"))
        .unwrap_or("");
    expect(
        "in parts: the values an `iter_mut()` loop left where they run are saved there",
        z.contains("\"parts\": [") && z.contains("\"rank\": 1,"),
        &text,
    )?;
    // The input in parts changed (one value): the resumed run refuses the checkpoint, as
    // one process does, though no rank sent its part anywhere to compare.
    let mut changed = procs_big.to_vec();
    changed.extend([("STRADS_RESUME", "1"), ("INPUT_SHIFT", "0.5")]);
    let (code, _, err) = run(&dir, &changed)?;
    expect(
        "in parts: a changed input is refused",
        code == Some(2) && err.contains("its contents differ: did an input file change?"),
        format!("{code:?}\n{err}"),
    )?;
    // So is a changed dense input whose changed part another rank holds (made there by
    // `from_fn`, and read there by the call that names it): its checksum is composed of
    // those the ranks take of their parts.
    let mut changed = procs_big.to_vec();
    changed.extend([("STRADS_RESUME", "1"), ("DENSE_SHIFT", "0.5")]);
    let (code, _, err) = run(&dir, &changed)?;
    expect(
        "in parts: a changed dense input is refused",
        code == Some(2)
            && err.contains("DistArray<f64, 1> [200000]")
            && err.contains("its contents differ: did an input file change?"),
        format!("{code:?}\n{err}"),
    )?;
    let _ = std::fs::remove_dir_all(&dir);

    // A worker killed at a random moment, three times: each run restarts and ends well.
    let (plain3, _) = run_self(ROLE, "program", &[("STRADS_THREADS", "3")])?;
    for trial in 0..3 {
        worker_killed(&plain3, trial)?;
    }
    Ok(())
}

/// Writes every element of `w` (a 1D call: each rank writes its rows, which stay there).
#[strads::parallel_for(expect = "1d")]
fn fill(w: &mut DistArray<f32, 1>, n: usize) {
    for u in 0..n {
        w[u] = (u % 1000) as f32 * 0.5;
    }
}

/// One 32 MB array made in parts (so no rank ever receives more than a piece of it) and
/// written by one call across processes (the checkpoint after it writes each rank's half
/// where it lives), then a reduction.
fn memory() {
    let n = 8_000_000;
    let mut w = DistArray::<f32, 1>::from_fn([n], |[u]| (u % 7) as f32);
    fill(&mut w, n);
    let (total, _) = eval_f32(&w, n);
    println!("total {total}");
    eprintln!("program peak {} kB", peak_kb());
}

/// A read-only reduction over `w`.
#[strads::parallel_for]
fn eval_f32(w: &DistArray<f32, 1>, n: usize) -> (f64, usize) {
    let mut s: f64 = 0.0;
    let mut k: usize = 0;
    for u in 0..n {
        s += f64::from(w[u]);
        k += 1;
    }
    (s, k)
}

/// A checkpoint costs no copy of what a rank holds: 2 processes' peaks with a checkpoint
/// after every call are within 6 MiB of their peaks without (a copy of a rank's half of
/// the array would add 15 MiB).
fn checkpoints_copy_nothing() -> Result<(), String> {
    let procs = [
        ("STRADS_PROCESSES", "2"),
        ("STRADS_THREADS", "1"),
        ("RESUME_ROLE", "memory"),
    ];
    let (plain_out, plain_err) = run_self(ROLE, "memory", &procs)?;
    let dir = fresh("memory");
    let (code, out, err) = run(&dir, &procs)?;
    let _ = std::fs::remove_dir_all(&dir);
    let peak = |text: &str, rank: usize| {
        figure(text, &format!("strads memory rank {rank}: peak resident "))
    };
    for rank in [0, 1] {
        let (without, with) = (peak(&plain_err, rank), peak(&err, rank));
        expect(
            &format!("memory: rank {rank}'s peak with checkpoints is that without"),
            code == Some(0)
                && out == plain_out
                && matches!((without, with), (Some(a), Some(b)) if b < a + 6.0),
            format!("{without:?} MiB without, {with:?} MiB with\n{out}\n{err}"),
        )?;
    }
    // One process: the array, home, is written from where it lives too (a copy of it
    // would add 30.5 MiB).
    let one = [("STRADS_THREADS", "2"), ("RESUME_ROLE", "memory")];
    let (plain_out, plain_err) = run_self(ROLE, "memory", &one)?;
    let dir = fresh("memory-one");
    let (code, out, err) = run(&dir, &one)?;
    let _ = std::fs::remove_dir_all(&dir);
    let peak = |text: &str| figure(text, "program peak ").map(|kb| kb / 1024.0);
    let (without, with) = (peak(&plain_err), peak(&err));
    expect(
        "memory: one process's peak with checkpoints is that without",
        code == Some(0)
            && out == plain_out
            && matches!((without, with), (Some(a), Some(b)) if b < a + 6.0),
        format!("{without:?} MiB without, {with:?} MiB with\n{out}\n{err}"),
    )?;
    Ok(())
}

fn main() -> ExitCode {
    main_of_roles(
        ROLE,
        "resume",
        &[("program", program), ("memory", memory)],
        || check().and_then(|()| checkpoints_copy_nothing()),
    )
}
