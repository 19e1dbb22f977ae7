use super::*;

fn with(vars: &[(&str, &str)]) -> Result<Config> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Config::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into()))
}

fn error(vars: &[(&str, &str)]) -> String {
    with(vars).unwrap_err().to_string()
}

#[test]
fn checkpoint_settings_are_read_and_bad_ones_named() {
    let c = with(&[
        ("STRADS_CHECKPOINT", "/tmp/ck"),
        ("STRADS_CHECKPOINT_SECONDS", "0.5"),
        ("STRADS_RESUME", "yes"),
        ("STRADS_RESTARTS", "0"),
    ])
    .unwrap();
    assert_eq!(
        c.checkpoint.as_deref(),
        Some(std::path::Path::new("/tmp/ck"))
    );
    assert_eq!(c.checkpoint_every, std::time::Duration::from_millis(500));
    assert!(c.resume);
    assert_eq!(c.restarts, 0);
    let d = with(&[]).unwrap();
    assert_eq!(
        (d.checkpoint_every.as_secs(), d.resume, d.restarts),
        (60, false, 3)
    );
    let e = error(&[("STRADS_CHECKPOINT_SECONDS", "-1")]);
    assert!(
        e.starts_with("invalid setting STRADS_CHECKPOINT_SECONDS=\"-1\""),
        "{e}"
    );
    let e = error(&[("STRADS_CHECKPOINT_SECONDS", "NaN")]);
    assert!(e.contains("a number from 0"), "{e}");
    let e = error(&[("STRADS_RESTARTS", "1001")]);
    assert!(e.contains("from 0 to 1000"), "{e}");
    let e = error(&[("STRADS_RESUME", "maybe")]);
    assert!(e.starts_with("invalid setting STRADS_RESUME"), "{e}");
}

#[test]
fn unknown_strads_variables_are_named_with_the_known_ones() {
    let known = "the known settings are STRADS_THREADS, STRADS_SERIAL, STRADS_EXPLAIN, \
                 STRADS_SPLIT, STRADS_COST, STRADS_AFFINITY, STRADS_PARTITION, \
                 STRADS_PROCESSES, STRADS_RANK, STRADS_SIZE, STRADS_COORDINATOR, STRADS_JOB_SECRET_FILE, \
                 STRADS_CHECKPOINT, STRADS_CHECKPOINT_SECONDS, STRADS_RESUME, STRADS_RESTARTS";
    assert_eq!(
        unknown_warning(["HOME", "STRADS_THREAD", "STRADS_SERIAL"]),
        Some(format!(
            "warning: unknown setting STRADS_THREAD is ignored; {known}"
        ))
    );
    assert_eq!(
        unknown_warning(["STRADS_SPILT", "STRADS_EXPLAIN", "STRADS_", "STRADS_SPILT"]),
        Some(format!(
            "warning: unknown settings STRADS_, STRADS_SPILT are ignored; {known}"
        ))
    );
    assert_eq!(unknown_warning(KNOWN), None);
    assert_eq!(unknown_warning(["strads_threads", "THREADS"]), None);
    assert_eq!(unknown_warning(Vec::<OsString>::new()), None);
}

#[test]
fn unset_and_empty_mean_the_defaults() {
    assert_eq!(with(&[]).unwrap(), Config::default());
    let empty: Vec<(&str, &str)> = [
        "STRADS_THREADS",
        "STRADS_SERIAL",
        "STRADS_EXPLAIN",
        "STRADS_SPLIT",
        "STRADS_AFFINITY",
        "STRADS_PARTITION",
    ]
    .iter()
    .map(|&n| (n, " "))
    .collect();
    assert_eq!(with(&empty).unwrap(), Config::default());
    let d = Config::default();
    assert_eq!(
        (d.threads, d.serial, d.explain, d.split, d.affinity),
        (None, false, false, true, true)
    );
    assert_eq!(d.partition, Partitioning::Balanced);
}

#[test]
fn booleans_have_one_grammar() {
    for name in [
        "STRADS_SERIAL",
        "STRADS_EXPLAIN",
        "STRADS_SPLIT",
        "STRADS_COST",
        "STRADS_AFFINITY",
    ] {
        let get = |v: &str| {
            let c = with(&[(name, v)]).unwrap();
            match name {
                "STRADS_SERIAL" => c.serial,
                "STRADS_EXPLAIN" => c.explain,
                "STRADS_SPLIT" => c.split,
                "STRADS_COST" => c.cost,
                _ => c.affinity,
            }
        };
        for on in ["1", "true", "TRUE", "Yes", "on", " on\n"] {
            assert!(get(on), "{name}={on:?}");
        }
        for off in ["0", "false", "False", "NO", "off", "\t0 "] {
            assert!(!get(off), "{name}={off:?}");
        }
        for bad in ["maybe", "2", "-1", "y", "01", "enabled"] {
            assert_eq!(
                error(&[(name, bad)]),
                format!("invalid setting {name}={bad:?}: {BOOLEAN}")
            );
        }
    }
}

#[test]
fn threads_are_a_whole_number_from_one() {
    assert_eq!(with(&[("STRADS_THREADS", "3")]).unwrap().threads, Some(3));
    assert_eq!(
        with(&[("STRADS_THREADS", " 1024 ")]).unwrap().threads,
        Some(1024)
    );
    for bad in [
        "0",
        "abc",
        "-1",
        "1.5",
        "1025",
        "99999999999999999999999",
        "+",
    ] {
        assert_eq!(
            error(&[("STRADS_THREADS", bad)]),
            format!(
                "invalid setting STRADS_THREADS={bad:?}: a whole number of worker threads \
                 from 1 to 1024; empty or unset for the available cores"
            )
        );
    }
}

#[test]
fn partition_is_balanced_or_uniform() {
    let p = |v: &str| with(&[("STRADS_PARTITION", v)]).unwrap().partition;
    assert_eq!(p("balanced"), Partitioning::Balanced);
    assert_eq!(p("Histogram"), Partitioning::Balanced);
    assert_eq!(p("UNIFORM"), Partitioning::Uniform);
    assert_eq!(
        error(&[("STRADS_PARTITION", "bogus")]),
        "invalid setting STRADS_PARTITION=\"bogus\": balanced (or histogram: equal \
         iteration counts, the default) or uniform (equal id ranges), in any case; empty \
         or unset for the default"
    );
}

#[test]
fn cluster_settings_are_checked() {
    let c = with(&[
        ("STRADS_RANK", "2"),
        ("STRADS_SIZE", "4"),
        ("STRADS_COORDINATOR", "node01:20100"),
        ("STRADS_PROCESSES", "3"),
    ])
    .unwrap();
    assert_eq!(c.rank, Some((2, 4)));
    assert_eq!(c.coordinator.as_deref(), Some("node01:20100"));
    assert_eq!(c.processes, Some(3));
    assert_eq!(
        error(&[("STRADS_RANK", "4"), ("STRADS_SIZE", "4")]),
        "invalid setting STRADS_RANK=\"4\": a rank below STRADS_SIZE=4"
    );
    assert_eq!(
        error(&[("STRADS_RANK", "1")]),
        "invalid setting STRADS_RANK=\"1\": a rank together with STRADS_SIZE (both or \
         neither)"
    );
    assert_eq!(
        error(&[("STRADS_PROCESSES", "0")]),
        "invalid setting STRADS_PROCESSES=\"0\": a whole number of processes from 1 to \
         4096; empty or unset for one"
    );
    for bad in ["node01", ":80", "host:0", "host:99999", "host:x"] {
        assert!(
            error(&[("STRADS_COORDINATOR", bad)]).starts_with("invalid setting STRADS_COORDINATOR"),
            "{bad}"
        );
    }
}

#[test]
fn the_first_bad_setting_is_reported() {
    let e = error(&[("STRADS_PARTITION", "x"), ("STRADS_THREADS", "0")]);
    assert!(e.starts_with("invalid setting STRADS_THREADS=\"0\""), "{e}");
}

#[cfg(unix)]
#[test]
fn non_utf8_values_are_shown_lossily() {
    use std::os::unix::ffi::OsStringExt;
    let e = Config::from_lookup(|name| {
        (name == "STRADS_SERIAL").then(|| OsString::from_vec(b"\xff1".to_vec()))
    })
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        format!("invalid setting STRADS_SERIAL=\"\u{fffd}1\": {BOOLEAN}")
    );
}
