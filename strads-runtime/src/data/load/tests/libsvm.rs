use super::*;
use crate::data::load::libsvm::LIBSVM_FORMAT;

fn svm(contents: &str) -> LibSvm {
    let f = TempFile::new("svm", contents);
    libsvm(&f.0).unwrap()
}

fn svm_err(contents: &str) -> (TempFile, String) {
    let f = TempFile::new("bad.svm", contents);
    let e = libsvm(&f.0).unwrap_err().to_string();
    (f, e)
}

#[test]
fn libsvm_reads_csr() {
    let d = svm("\u{feff}+1 3:1 11:0.5 \n\n-1 1:1\t2:-2.5e1\r\n0 # no features\n1.0 4:1 # note\n");
    assert_eq!(d.samples(), 4);
    assert_eq!(d.nnz(), 5);
    assert_eq!(d.n_features, 11);
    assert_eq!(d.labels.as_slice(), &[1.0, -1.0, -1.0, 1.0]);
    assert_eq!(d.offsets.as_slice(), &[0, 2, 4, 4, 5]);
    assert_eq!(d.features.as_slice(), &[2, 10, 0, 1, 3]);
    assert_eq!(d.values.as_slice(), &[1.0, 0.5, 1.0, -25.0, 1.0]);
    assert_eq!(d.positives(), 2);
    assert_eq!(d.sample(1), (-1.0, &[0, 1][..], &[1.0, -25.0][..]));
}

#[test]
fn libsvm_pair_shares_n_features() {
    let train = TempFile::new("train.svm", "+1 1:1 123:1\n");
    let test = TempFile::new("test.svm", "-1 2:1 122:1\n");
    let (a, b) = libsvm_pair(&train.0, &test.0).unwrap();
    assert_eq!((a.n_features, b.n_features), (123, 123));
    let (b, a) = libsvm_pair(&test.0, &train.0).unwrap();
    assert_eq!((a.n_features, b.n_features), (123, 123));
    assert_eq!(libsvm(&test.0).unwrap().n_features, 122);
}

#[test]
fn libsvm_bad_labels() {
    let (f, e) = svm_err("+1 1:1\nyes 2:1\n");
    assert_eq!(
        e,
        format!(
            "{}:2: label \"yes\" is not a number; expected LIBSVM \
             `label index:value index:value ...` with a label +1, 1, -1 or 0 and 1-based, \
             increasing integer indices",
            f.shown()
        )
    );
    let (f, e) = svm_err("2 1:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: label \"2\" is not +1, 1, -1 or 0; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    // A line that starts with a feature has no label.
    let (f, e) = svm_err("1:1 2:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: label \"1:1\" is not a number; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_malformed_entries() {
    for (entry, line) in [
        ("3", "+1 3\n"),
        ("3:", "+1 3:\n"),
        (":1", "-1 :1\n"),
        ("3:1:1", "-1 3:1:1\n"),
    ] {
        let (f, e) = svm_err(line);
        assert_eq!(
            e,
            format!(
                "{}:1: entry \"{entry}\" is not index:value; expected {LIBSVM_FORMAT}",
                f.shown()
            )
        );
    }
    let (f, e) = svm_err("-1 1:1\n-1 2:1\n+1 x:1\n");
    assert_eq!(
        e,
        format!(
            "{}:3: index \"x\" in \"x:1\" is not a positive integer; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("-1 -2:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: index \"-2\" in \"-2:1\" is not a positive integer; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("-1 4294967297:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: index in \"4294967297:1\" is too large (at most 4294967296); \
             expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_index_zero() {
    let (f, e) = svm_err("+1 1:1\n\n+1 0:1 3:1\n");
    assert_eq!(
        e,
        format!(
            "{}:3: index 0 in \"0:1\" is invalid: indices are 1-based; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_indices_must_increase() {
    let (f, e) = svm_err("-1 5:1 7:1 6:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: index 6 in \"6:1\" does not follow index 7: indices must increase; \
             expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("-1 5:1 5:2\n");
    assert_eq!(
        e,
        format!(
            "{}:1: index 5 in \"5:2\" does not follow index 5: indices must increase; \
             expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_indices_are_bounded_by_the_entries() {
    let (f, e) = svm_err("+1 1:1\n-1 4294967296:1\n");
    assert_eq!(
        e,
        format!(
            "{}:2: index 4294967296 is too large for 2 entries: indices may be at most \
             1048576 (the larger of 1048576 and 16 per entry), since they size the model; \
             expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let train = TempFile::new("train.svm", "+1 1:1 2:1\n");
    let test = TempFile::new("test.svm", "-1 5000000:1\n");
    let e = libsvm_pair(&train.0, &test.0).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}:1: index 5000000 is too large for 3 entries",
            test.shown()
        )),
        "{e}"
    );
    assert_eq!(svm("+1 1048576:1\n").n_features, 1 << 20);
}

#[test]
fn libsvm_bad_values() {
    let (f, e) = svm_err("-1 5:one\n");
    assert_eq!(
        e,
        format!(
            "{}:1: value \"one\" in \"5:one\" is not a number; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("+1 1:1\n-1 5:NaN\n");
    assert_eq!(
        e,
        format!(
            "{}:2: value \"NaN\" in \"5:NaN\" is not finite; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("-1 5:-inf\n");
    assert_eq!(
        e,
        format!(
            "{}:1: value \"-inf\" in \"5:-inf\" is not finite; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_empty_files() {
    let (f, e) = svm_err("");
    assert_eq!(
        e,
        format!(
            "{}:1: the file has no samples; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = svm_err("\n# only a comment\n  \n");
    assert_eq!(
        e,
        format!(
            "{}:4: the file has no samples; expected {LIBSVM_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn libsvm_pair_names_the_failing_file() {
    let train = TempFile::new("train.svm", "+1 1:1\n");
    let test = TempFile::new("test.svm", "+1 1:1\n-1 2:x\n");
    let e = libsvm_pair(&train.0, &test.0).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:2: value \"x\" in \"2:x\" is not a number; expected {LIBSVM_FORMAT}",
            test.shown()
        )
    );
    let missing = std::env::temp_dir().join("strads-load-no-such-libsvm");
    let e = libsvm_pair(&missing, &test.0).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if *path == missing),
        "{e:?}"
    );
}

#[test]
fn libsvm_from_parts_checks() {
    let ok = LibSvm::from_parts(
        vec![1.0, -1.0],
        vec![0, 1, 3],
        vec![4, 0, 2],
        vec![1.0; 3],
        5,
    )
    .unwrap();
    assert_eq!(ok.sample(1), (-1.0, &[0, 2][..], &[1.0, 1.0][..]));
    let bad = |labels: Vec<f32>, offsets: Vec<u32>, features: Vec<u32>, n: usize| {
        let values = vec![1.0; features.len()];
        LibSvm::from_parts(labels, offsets, features, values, n)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        bad(vec![1.0], vec![0], vec![], 1),
        "shape mismatch: LIBSVM data: 1 offsets for 1 samples, need one more than the samples"
    );
    assert_eq!(
        bad(vec![1.0], vec![0, 2], vec![0], 1),
        "shape mismatch: LIBSVM data: offsets run from 0 to 2, need 0 to 1 (the number of entries)"
    );
    assert_eq!(
        bad(vec![1.0, 1.0], vec![0, 2, 1], vec![0], 3),
        "shape mismatch: LIBSVM data: offsets decrease at sample 1: 2 > 1"
    );
    assert_eq!(
        bad(vec![1.0], vec![0, 2], vec![3, 3], 5),
        "shape mismatch: LIBSVM data: features of sample 0 do not increase: 3 then 3"
    );
    assert_eq!(
        bad(vec![1.0], vec![0, 1], vec![5], 5),
        "shape mismatch: LIBSVM data: sample 0 has feature 5, not below n_features = 5"
    );
    assert_eq!(
        bad(vec![0.0], vec![0, 0], vec![], 5),
        "shape mismatch: LIBSVM data: label 0 of sample 0 is not +1 or -1"
    );
}

#[test]
#[cfg_attr(
    not(strads_data_libsvm_a9a),
    ignore = "needs ../shared/data/libsvm-a9a (not found when this test was built)"
)]
fn libsvm_a9a() {
    let dir = crate::data::shared_data("libsvm-a9a");
    let (train, test) = libsvm_pair(dir.join("a9a"), dir.join("a9a.t")).unwrap();
    assert_eq!((train.samples(), train.nnz()), (32561, 451592));
    assert_eq!((test.samples(), test.nnz()), (16281, 225731));
    assert_eq!((train.n_features, test.n_features), (123, 123));
    assert_eq!((train.positives(), test.positives()), (7841, 3846));
    assert_eq!(libsvm(dir.join("a9a.t")).unwrap().n_features, 122);
    assert!(train.values.as_slice().iter().all(|&v| v == 1.0));
    // The head of PROVENANCE.md: `-1 3:1 11:1 14:1 19:1 39:1 ...`.
    let (y, f, _) = train.sample(0);
    assert_eq!(y, -1.0);
    assert_eq!(&f[..5], &[2, 10, 13, 18, 38]);
}
