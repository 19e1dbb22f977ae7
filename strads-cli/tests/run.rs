//! `strads run` end to end, with shell programs and with an example.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `strads` with `args`, bounded in time.
fn strads(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strads"))
        .args(args)
        .env_remove("STRADS_PROCESSES")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("strads {args:?}: still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ranks_get_their_place_and_workers_stderr_is_prefixed() {
    let (code, out, err) = strads(&[
        "run",
        "-n",
        "3",
        "--",
        "sh",
        "-c",
        "echo out $STRADS_RANK; echo err $STRADS_RANK of $STRADS_SIZE >&2; \
         test -r \"$STRADS_JOB_SECRET_FILE\" && case $STRADS_COORDINATOR in 127.0.0.1:*) ;; \
         *) exit 9;; esac",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    // Only rank 0's output is the program's.
    assert_eq!(out, "out 0\n");
    let mut lines: Vec<&str> = err.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["[rank 1] err 1 of 3", "[rank 2] err 2 of 3", "err 0 of 3"]
    );
}

#[test]
fn a_failing_rank_stops_the_job_with_its_status_and_no_process_left() {
    let (code, _out, err) = strads(&[
        "run",
        "-n",
        "3",
        "--grace",
        "1",
        "--",
        "sh",
        "-c",
        "echo pid $$ >&2; if [ $STRADS_RANK = 1 ]; then exit 3; fi; exec sleep 60",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("strads: rank 1 exited with status 3"), "{err}");
    assert!(err.contains("did not stop within 1 s: killed"), "{err}");
    for pid in err
        .lines()
        .filter_map(|l| l.split("pid ").nth(1))
        .map(|p| p.trim().to_string())
    {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z"),
            "rank process {pid} still runs"
        );
    }
}

#[test]
fn bad_uses_are_clear_errors() {
    let (code, _, err) = strads(&["run", "-n", "0", "--", "true"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("0 is not in 1..=4096"), "{err}");
    let (code, _, err) = strads(&["run", "-n", "2", "--hosts", "a,b", "--", "true"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not supported yet"), "{err}");
    let (code, _, err) = strads(&["run", "-n", "2", "--", "/nonexistent/prog"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("cannot start rank 0 (/nonexistent/prog)"),
        "{err}"
    );
}

#[test]
fn an_example_gives_the_bits_of_as_many_threads() {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("examples/sgd_mf");
    assert!(
        example.exists(),
        "{} is missing: run `cargo test --workspace` (it builds the examples)",
        example.display()
    );
    let ex = example.to_str().unwrap();
    let args = ["--ratings", "20000", "--epochs", "3"];
    let (code, cluster, err) =
        strads(&[&["run", "-n", "2", "--threads", "1", "--", ex], &args[..]].concat());
    assert_eq!(code, Some(0), "{err}");
    let threads = Command::new(ex)
        .args(args)
        .env("STRADS_THREADS", "2")
        .env_remove("STRADS_PROCESSES")
        .output()
        .unwrap();
    let strip = |s: &str| -> String {
        s.lines()
            .last()
            .unwrap_or("")
            .split_whitespace()
            .filter(|f| !f.starts_with("seconds=") && !f.starts_with("threads="))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        strip(&cluster),
        strip(&String::from_utf8_lossy(&threads.stdout))
    );
}
