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
    let (code, _, err) = strads(&[
        "run",
        "-n",
        "2",
        "--hosts",
        "a,-oProxyCommand=x",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "strads: --hosts: `-oProxyCommand=x` is not a host name (letters, digits, `-._:[]@%`, \
         not starting with `-`)\n"
    );
    let (code, _, err) = strads(&[
        "run",
        "-n",
        "2",
        "--hostfile",
        "/nonexistent/hosts",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("strads: cannot read the hostfile /nonexistent/hosts: "),
        "{err}"
    );
    let (code, _, err) = strads(&["run", "-n", "2", "--", "/nonexistent/prog"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("cannot start rank 0 (/nonexistent/prog)"),
        "{err}"
    );
}

/// The example binary `sgd_mf` beside this test (`cargo test --workspace` builds it).
fn sgd_mf() -> String {
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
    example.to_str().unwrap().to_string()
}

/// sgd_mf's summary line (of `stdout`) without its timing, thread and process counts, and the same
/// line of a run as `threads` threads in one process.
fn summaries_as(ex: &str, args: &[&str], stdout: &str, threads: &str) -> (String, String) {
    let one = Command::new(ex)
        .args(args)
        .env("STRADS_THREADS", threads)
        .env_remove("STRADS_PROCESSES")
        .output()
        .unwrap();
    let last = |s: &str| -> String {
        s.lines()
            .last()
            .unwrap_or("")
            .split_whitespace()
            .filter(|f| {
                !f.starts_with("seconds=")
                    && !f.starts_with("threads=")
                    && !f.starts_with("processes=")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    (last(stdout), last(&String::from_utf8_lossy(&one.stdout)))
}

/// [`summaries_as`] 2 threads.
fn summaries(ex: &str, args: &[&str], stdout: &str) -> (String, String) {
    summaries_as(ex, args, stdout, "2")
}

#[test]
fn an_example_gives_the_bits_of_as_many_threads() {
    let ex = sgd_mf();
    let args = ["--ratings", "20000", "--epochs", "3"];
    let (code, cluster, err) =
        strads(&[&["run", "-n", "2", "--threads", "1", "--", &ex], &args[..]].concat());
    assert_eq!(code, Some(0), "{err}");
    let (many, one) = summaries(&ex, &args, &cluster);
    assert_eq!(many, one);
}

/// `--hosts` through a stand-in for ssh that runs the command line here: the ranks start
/// on their hosts in rank order, get the secret through ssh's standard input and the
/// launcher's other `STRADS_*` settings, print the bits of as many threads, and leave no
/// secret file behind.
#[test]
fn hosts_start_over_ssh_with_the_secret_on_stdin() {
    let ex = sgd_mf();
    let dir = std::env::temp_dir().join(format!("strads-fake-ssh-{}", std::process::id()));
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let ssh = dir.join("fake-ssh");
    let log = dir.join("log");
    std::fs::write(
        &ssh,
        "#!/bin/sh\n# ssh's stand-in: the host, then the command line, run here.\n\
         echo \"$1\" >> \"$FAKE_SSH_LOG\"\nexec sh -c \"$2\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let args = ["--ratings", "20000", "--epochs", "3"];
    let out = Command::new(env!("CARGO_BIN_EXE_strads"))
        .args([
            "run",
            "-n",
            "2",
            "--threads",
            "1",
            "--hosts",
            "localhost,127.0.0.1",
            "--ssh",
            ssh.to_str().unwrap(),
            "--port",
            &port,
            "--",
            &ex,
        ])
        .args(args)
        .env_remove("STRADS_PROCESSES")
        .env("STRADS_EXPLAIN", "1")
        .env("TMPDIR", &tmp)
        .env("FAKE_SSH_LOG", &log)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut hosts: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["127.0.0.1", "localhost"]);
    // The launcher's STRADS_EXPLAIN reached the driver, which ran across both ranks.
    assert!(
        stderr.contains("strads cluster sgd_epoch: 2 processes x 1 threads"),
        "{stderr}"
    );
    let (many, one) = summaries(&ex, &args, &stdout);
    assert_eq!(many, one);
    // Every secret file is gone: the ranks' and the launcher's.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left in {}: {left:?}", tmp.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// With checkpoints on, a job that loses a worker rank restarts every rank from its
/// checkpoint and ends with status 0 and the output of as many threads.
#[test]
fn a_job_that_loses_a_rank_restarts_from_its_checkpoint() {
    let ex = sgd_mf();
    let dir = std::env::temp_dir().join(format!("strads-run-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = ["--ratings", "20000", "--epochs", "200"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_strads"))
        .args([&["run", "-n", "3", "--threads", "1", "--", &ex], &args[..]].concat())
        .env_remove("STRADS_PROCESSES")
        .env("STRADS_CHECKPOINT", &dir)
        .env("STRADS_CHECKPOINT_SECONDS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let launcher = child.id();
    // Once a checkpoint is complete, rank 2 dies.
    let start = Instant::now();
    let manifest = || {
        std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("manifest-"))
            })
    };
    while !manifest() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let rank2 = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| {
            let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1));
            parent == Some(&launcher.to_string())
                && env.split(|&b| b == 0).any(|v| v == b"STRADS_RANK=2")
        })
        .expect("rank 2 of the launcher");
    assert!(
        Command::new("kill")
            .args(["-KILL", &rank2.to_string()])
            .status()
            .unwrap()
            .success()
    );
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the restarted job runs past 300 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("strads: restarting every rank from the newest checkpoint"),
        "{err}"
    );
    assert!(err.contains("strads: resumed from the checkpoint"), "{err}");
    // Every epoch's line once, and the bits of 3 threads.
    let epochs = stdout.lines().filter(|l| l.starts_with("epoch")).count();
    assert_eq!(epochs, 200, "{stdout}");
    let (many, one) = summaries_as(&ex, &args, &stdout, "3");
    assert_eq!(many, one);
    let _ = std::fs::remove_dir_all(&dir);
}
