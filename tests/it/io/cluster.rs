//! The cluster end to end: every example run as several processes prints what the same
//! number of threads in one process prints, bit for bit; a killed rank stops the job with
//! an error naming it and leaves no process behind; a process with another job's secret
//! is refused and nothing runs. Loopback only; every run is bounded in time.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::bins;
use crate::procs::{alive, descendants};
use bins::example;

/// The longest a run may take.
const BOUND: Duration = Duration::from_secs(240);

/// A command for example `name` with `args`, the `STRADS_*` settings `env` and no others.
fn command(name: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(example(name));
    cmd.args(args).stdin(Stdio::null());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("STRADS_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Waits for `child` within `bound`, killing it (and its children) after.
fn finish(
    mut child: Child,
    bound: Duration,
    what: &str,
) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).ok();
        String::from_utf8_lossy(&s).into_owned()
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > bound {
            for p in descendants(child.id()) {
                let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {bound:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    (
        status.code(),
        out.join().unwrap(),
        err.join().unwrap(),
        elapsed,
    )
}

/// The program's output without its timings (`seconds=`, `epoch_seconds=`,
/// `sweep_seconds=`, ..) and thread and process counts.
fn results(stdout: &str) -> String {
    stdout
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter(|f| {
                    let key = f.split('=').next().unwrap_or("");
                    !(key.ends_with("seconds")
                        || key.ends_with("per_second")
                        || key == "threads"
                        || key == "processes")
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_ok(name: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let what = format!("{name} {args:?} {env:?}");
    let child = command(name, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let pid = child.id();
    let (code, out, err, _) = finish(child, BOUND, &what);
    assert_eq!(
        code,
        Some(0),
        "{what}: failed\nstdout: {out}\nstderr: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    let left: Vec<u32> = descendants(pid).into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "{what}: processes left behind: {left:?}");
    results(&out)
}

/// Each example, small enough for a debug build.
fn examples() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("sgd_mf", vec!["--ratings", "20000", "--epochs", "4"]),
        ("dtw", vec!["--n", "300", "--m", "200"]),
        ("sparse_lr", vec!["--epochs", "2"]),
        ("lda", vec!["--iterations", "3"]),
        (
            "word2vec",
            vec!["--words", "30000", "--epochs", "2", "--dim", "16"],
        ),
        (
            "transe",
            vec![
                "--entities",
                "600",
                "--relations",
                "12",
                "--triples",
                "6000",
                "--valid-triples",
                "100",
                "--test-triples",
                "200",
                "--epochs",
                "2",
                "--dim",
                "16",
                "--negatives",
                "4",
            ],
        ),
    ]
}

#[test]
fn every_example_gives_the_same_bits_as_processes_and_as_threads() {
    for (name, args) in examples() {
        for (threads, layout) in [
            ("2", [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "1")]),
            ("3", [("STRADS_PROCESSES", "3"), ("STRADS_THREADS", "1")]),
            ("4", [("STRADS_PROCESSES", "2"), ("STRADS_THREADS", "2")]),
        ] {
            let one = run_ok(name, &args, &[("STRADS_THREADS", threads)]);
            let many = run_ok(name, &args, &layout);
            assert!(!one.is_empty(), "{name}: no output");
            assert_eq!(
                many, one,
                "{name} {args:?}: {layout:?} differs from {threads} threads"
            );
        }
    }
}

/// A job of `STRADS_PROCESSES` leaves nothing in the temp dir: the job secret's file and
/// directory go once every worker has connected, whatever the program does after.
#[test]
fn a_job_leaves_no_secret_file_behind() {
    let tmp = std::env::temp_dir().join(format!("strads-it-tmp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = command(
        "sgd_mf",
        &["--epochs", "2"],
        &[
            ("STRADS_PROCESSES", "2"),
            ("STRADS_THREADS", "1"),
            ("STRADS_EXPLAIN", "1"),
        ],
    );
    cmd.env("TMPDIR", &tmp);
    let out = cmd.output().expect("sgd_mf runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The job ran as 2 processes (so a secret file was made and used).
    assert!(err.contains("2 processes x 1 threads"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
}

/// Runs sgd_mf as 3 processes, sends rank `rank` `signal` mid-run, and checks that the job
/// stops within 30 s naming that rank, leaving no process behind.
fn lose_a_rank(signal: &str, rank: usize) {
    let what = format!("sgd_mf under STRADS_PROCESSES=3, rank {rank} sent {signal}");
    let what = what.as_str();
    let child = command(
        "sgd_mf",
        &["--ratings", "200000", "--epochs", "100000"],
        &[("STRADS_PROCESSES", "3"), ("STRADS_THREADS", "1")],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let driver = child.id();
    // Wait for the workers to start (bounded), then kill rank 2 mid-run.
    let start = Instant::now();
    let workers = loop {
        let d: Vec<u32> = descendants(driver).into_iter().collect();
        if d.len() >= 2 {
            break d;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: no workers"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500));
    // The rank is the worker whose environment says so.
    let var = format!("STRADS_RANK={rank}");
    let pid = workers
        .iter()
        .copied()
        .find(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == var.as_bytes()))
        })
        .expect("the rank's process");
    let killed = Instant::now();
    assert!(
        Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let (code, _out, err, _) = finish(child, Duration::from_secs(60), what);
    let took = killed.elapsed();
    assert_ne!(code, Some(0), "{what}: the driver succeeded\n{err}");
    assert!(took < Duration::from_secs(30), "{what}: took {took:?}");
    assert!(
        err.contains(&format!("rank {rank}")),
        "{what}: the error does not name rank {rank}:\n{err}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let left: Vec<u32> = workers.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "{what}: processes left behind: {left:?}");
}

#[test]
fn a_killed_rank_stops_the_job_naming_it_and_leaves_no_process() {
    lose_a_rank("-KILL", 2);
}

/// A rank that stops answering (stopped, not dead: its connections stay open) is lost by
/// the idle timeout like a dead one, and is killed with the others.
#[test]
fn a_hung_rank_stops_the_job_naming_it_and_leaves_no_process() {
    lose_a_rank("-STOP", 1);
}

#[test]
fn a_process_with_another_jobs_secret_is_refused_and_nothing_runs() {
    let dir = std::env::temp_dir().join(format!("strads-secret-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = |name: &str, byte: u8| -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, [byte; 32]).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    };
    let (good, bad) = (secret("good", 1), secret("bad", 2));
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let coord = format!("127.0.0.1:{port}");
    let driver = command(
        "sgd_mf",
        &["--ratings", "20000", "--epochs", "2"],
        &[
            ("STRADS_RANK", "0"),
            ("STRADS_SIZE", "2"),
            ("STRADS_COORDINATOR", &coord),
            ("STRADS_JOB_SECRET_FILE", good.to_str().unwrap()),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let intruder = command(
        "sgd_mf",
        &["--ratings", "20000", "--epochs", "2"],
        &[
            ("STRADS_RANK", "1"),
            ("STRADS_SIZE", "2"),
            ("STRADS_COORDINATOR", &coord),
            ("STRADS_JOB_SECRET_FILE", bad.to_str().unwrap()),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let (code, out, err, _) = finish(intruder, Duration::from_secs(60), "intruder");
    assert_eq!(code, Some(2), "intruder: {out}\n{err}");
    assert!(err.contains("refused the handshake"), "intruder: {err}");
    assert!(out.is_empty(), "the intruder ran something: {out}");
    // The driver is still waiting for its rank 1: it has run nothing.
    std::thread::sleep(Duration::from_millis(300));
    let mut driver = driver;
    let _ = driver.kill();
    let (_, out, err, _) = finish(driver, Duration::from_secs(10), "driver");
    assert!(out.is_empty(), "the driver ran something: {out}");
    assert!(err.contains("refused a connection"), "driver: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_says_where_each_loop_ran_and_what_the_driver_moved() {
    let what = "sgd_mf as 2 processes under STRADS_EXPLAIN";
    let child = command(
        "sgd_mf",
        &["--ratings", "20000", "--epochs", "2"],
        &[
            ("STRADS_PROCESSES", "2"),
            ("STRADS_THREADS", "1"),
            ("STRADS_EXPLAIN", "1"),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let (code, out, err, _) = finish(child, BOUND, what);
    assert_eq!(
        code,
        Some(0),
        "{what}: failed\nstdout: {out}\nstderr: {err}"
    );
    // The 2D loop crosses processes; its first call's traffic is named.
    assert!(
        err.lines().any(|l| l
            .starts_with("strads cluster sgd_epoch: 2 processes x 1 threads; the driver sent ")),
        "{what}: {err}"
    );
    // At the driver's exit, once: each loop's calls and wait, and the bytes both ways.
    let number = |line: &str, after: &str| -> f64 {
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words.iter().position(|w| *w == after).expect(after);
        words[i + 1].parse().expect("a number")
    };
    let waits: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("strads cluster sgd_epoch: ") && l.contains("calls across"))
        .collect();
    assert_eq!(waits.len(), 1, "{what}: {err}");
    assert!(
        waits[0].starts_with("strads cluster sgd_epoch: 2 calls across processes;"),
        "{}",
        waits[0]
    );
    assert!(number(waits[0], "waited") >= 0.0, "{}", waits[0]);
    let totals: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("strads cluster: the driver sent "))
        .collect();
    assert_eq!(totals.len(), 1, "{what}: {err}");
    assert!(
        number(totals[0], "sent") > 0.0 && number(totals[0], "received") > 0.0,
        "{}",
        totals[0]
    );
    // Worker ranks print no plan lines: each loop's line comes once, from the driver.
    let plans = err
        .lines()
        .filter(|l| l.starts_with("strads plan sgd_epoch:"))
        .count();
    assert_eq!(plans, 1, "{what}: {err}");
}

#[test]
fn a_rank_running_another_program_stops_the_job_naming_both() {
    let dir = std::env::temp_dir().join(format!("strads-other-prog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("secret");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&secret, [7u8; 32]).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let coord = format!("127.0.0.1:{port}");
    let rank = |name: &str, args: &[&str], r: &str| {
        command(
            name,
            args,
            &[
                ("STRADS_RANK", r),
                ("STRADS_SIZE", "2"),
                ("STRADS_COORDINATOR", &coord),
                ("STRADS_JOB_SECRET_FILE", secret.to_str().unwrap()),
                ("STRADS_THREADS", "1"),
                // Every call crosses, so the first loop the driver calls meets rank 1.
                ("STRADS_COST", "0"),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let driver = rank("sgd_mf", &["--ratings", "20000", "--epochs", "2"], "0");
    let other = rank("dtw", &["--n", "50", "--m", "40"], "1");
    let (code, _, err, _) = finish(driver, BOUND, "driver");
    let (ocode, _, oerr, _) = finish(other, BOUND, "the other program");
    let (sgd, dtw) = (
        example("sgd_mf").display().to_string(),
        example("dtw").display().to_string(),
    );
    let said = format!(
        "rank 1 runs {dtw}, which has no loop `sgd_mf::ScaleRowsLoop` that the driver's {sgd} \
         calls: run the same program on every rank"
    );
    assert_ne!(code, Some(0), "driver: {err}");
    assert!(err.contains(&said), "driver: {err}");
    assert_ne!(ocode, Some(0), "rank 1: {oerr}");
    assert!(oerr.contains(&said), "rank 1: {oerr}");
    let _ = std::fs::remove_dir_all(&dir);
}
