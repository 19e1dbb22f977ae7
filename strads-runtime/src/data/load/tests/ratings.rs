use super::*;

#[test]
fn whitespace_format_is_one_based() {
    let f = TempFile::new(
        "u.data",
        "1\t1\t5\t874965758\n\n2 3   4.5\n  1\t4\t1\t874965759  \r\n",
    );
    let r = ratings(&f.0).unwrap();
    assert_eq!(r.shape(), [2, 4]);
    assert_eq!(
        entries(&r),
        vec![([0, 0], 5.0), ([1, 2], 4.5), ([0, 3], 1.0)]
    );
}

#[test]
fn csv_skips_header_and_reindexes_densely() {
    let f = TempFile::new(
        "ratings.csv",
        "\u{feff}userId,movieId,rating,timestamp\r\n\
         10,500,4.0,964982703\r\n\
         \r\n\
         3,7,3.5,964981247\r\n\
         10,7,0.5,964982224,extra\r\n",
    );
    let r = ratings(&f.0).unwrap();
    assert_eq!(r.shape(), [2, 2]);
    assert_eq!(
        entries(&r),
        vec![([0, 0], 4.0), ([1, 1], 3.5), ([0, 1], 0.5)]
    );
}

#[test]
fn csv_without_header() {
    let f = TempFile::new("nohdr.csv", "0,0,1\n5, 2 ,2\n");
    let r = ratings(&f.0).unwrap();
    assert_eq!(r.shape(), [2, 2]);
    assert_eq!(entries(&r), vec![([0, 0], 1.0), ([1, 1], 2.0)]);
}

#[test]
fn pair_shares_csv_mapping() {
    let train = TempFile::new("train.csv", "u,i,r\n7,100,4\n9,100,2\n");
    let test = TempFile::new("test.csv", "u,i,r\n9,300,3\n11,100,1\n7,300,5\n");
    let (a, b) = ratings_pair(&train.0, &test.0).unwrap();
    assert_eq!(a.shape(), [3, 2]);
    assert_eq!(b.shape(), [3, 2]);
    assert_eq!(entries(&a), vec![([0, 0], 4.0), ([1, 0], 2.0)]);
    assert_eq!(
        entries(&b),
        vec![([1, 1], 3.0), ([2, 0], 1.0), ([0, 1], 5.0)]
    );
}

#[test]
fn pair_shares_one_based_shape() {
    let train = TempFile::new("train", "1 1 5\n2 2 4\n");
    let test = TempFile::new("test", "3 1 3\n1 6 2\n");
    let (a, b) = ratings_pair(&train.0, &test.0).unwrap();
    assert_eq!(a.shape(), [3, 6]);
    assert_eq!(b.shape(), [3, 6]);
    assert_eq!(entries(&b), vec![([2, 0], 3.0), ([0, 5], 2.0)]);
}

#[test]
fn pair_rejects_mixed_formats() {
    let train = TempFile::new("train", "1 1 5\n");
    let test = TempFile::new("test.csv", "\nu,i,r\n1,1,5\n");
    let e = ratings_pair(&train.0, &test.0).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:2: this file is CSV but {} is whitespace-separated; expected the same \
             format as {}: {WHITESPACE_FORMAT}",
            test.shown(),
            train.shown(),
            train.shown()
        )
    );
}

#[test]
fn with_shape_checks_bounds() {
    let f = TempFile::new("ua.test", "1 1 5\n2 2 4\n943 1683 3\n");
    let r = ratings_with_shape(&f.0, [943, 1683]).unwrap();
    assert_eq!(r.shape(), [943, 1683]);
    assert_eq!(r.nnz(), 3);
    let e = ratings_with_shape(&f.0, [943, 1682])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}:3: index [942, 1682] is outside the array's shape [943, 1682]",
            f.shown()
        )
    );
}

#[test]
fn with_shape_rejects_csv() {
    let f = TempFile::new("r.csv", "u,i,r\n1,1,5\n");
    let e = ratings_with_shape(&f.0, [2, 2]).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:1: this is a CSV file, whose ids cannot be checked against a fixed shape; \
             load CSV training and test files together with `ratings_pair`; \
             expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn wrong_field_count() {
    let (f, e) = err("1 1 5\n1 2\n");
    assert_eq!(
        e,
        format!(
            "{}:2: found 2 fields, need 3 or 4; expected whitespace-separated \
             `user item rating [timestamp]` with 1-based integer ids",
            f.shown()
        )
    );
    let (f, e) = err("1 1 5 3 9\n");
    assert_eq!(
        e,
        format!(
            "{}:1: found 5 fields, need 3 or 4; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("u,i,r\n1,1\n");
    assert_eq!(
        e,
        format!(
            "{}:2: found 2 fields, need at least 3; expected CSV \
             `user,item,rating[,timestamp,...]` with non-negative integer ids and an \
             optional header line",
            f.shown()
        )
    );
}

#[test]
fn non_numeric_rating() {
    let (f, e) = err("1 1 5\n\n2 2 x 881250949\n");
    assert_eq!(
        e,
        format!(
            "{}:3: rating \"x\" is not a number; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1,1,four\n");
    assert_eq!(
        e,
        format!(
            "{}:1: rating \"four\" is not a number; expected {CSV_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn non_finite_rating() {
    let (f, e) = err("1 1 NaN\n");
    assert_eq!(
        e,
        format!(
            "{}:1: rating \"NaN\" is not finite; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1,1,3\n2,2,inf\n");
    assert_eq!(
        e,
        format!(
            "{}:2: rating \"inf\" is not finite; expected {CSV_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn non_integer_id() {
    let (f, e) = err("1 1.5 4\n");
    assert_eq!(
        e,
        format!(
            "{}:1: item id \"1.5\" is not a positive integer; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("userId,movieId,rating\n-3,1,4\n");
    assert_eq!(
        e,
        format!(
            "{}:2: user id \"-3\" is not a non-negative integer; expected {CSV_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 99999999999 4\n");
    assert_eq!(
        e,
        format!(
            "{}:1: item id \"99999999999\" is too large (at most 4294967296); \
             expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn bad_timestamp() {
    let (f, e) = err("1 1 4 yesterday\n");
    assert_eq!(
        e,
        format!(
            "{}:1: timestamp \"yesterday\" is not an integer; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn id_zero() {
    let (f, e) = err("1 1 4\n0 3 4\n");
    assert_eq!(
        e,
        format!(
            "{}:2: user id \"0\" is invalid: ids are 1-based; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn empty_files() {
    let (f, e) = err("");
    assert_eq!(
        e,
        format!(
            "{}:1: the file has no ratings; expected {WHITESPACE_FORMAT}, or {CSV_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("\n  \n");
    assert_eq!(
        e,
        format!(
            "{}:3: the file has no ratings; expected {WHITESPACE_FORMAT}, or {CSV_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("userId,movieId,rating\n");
    assert_eq!(
        e,
        format!(
            "{}:2: the file has no ratings; expected {CSV_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn missing_file_is_io_error() {
    let path = std::env::temp_dir().join("strads-load-no-such-file");
    let e = ratings(&path).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path: p, .. } if *p == path),
        "{e:?}"
    );
    assert!(e.to_string().starts_with(&format!("{}: ", path.display())));
}

#[test]
fn long_fields_are_shortened() {
    let long = "7".repeat(30) + &"x".repeat(30);
    let (f, e) = err(&format!("1 1 {long}\n"));
    assert_eq!(
        e,
        format!(
            "{}:1: rating \"{}\"... is not a number; expected {WHITESPACE_FORMAT}",
            f.shown(),
            &long[..MAX_QUOTE]
        )
    );
}

#[test]
fn split_is_deterministic_and_exact() {
    let all = SparseArray::from_entries(
        [50, 40],
        (0..1000).map(|n| ([n % 50, n % 40], n as f32)).collect(),
    )
    .unwrap();
    let (train, test) = split(&all, 0.1, 7);
    let (train2, test2) = split(&all, 0.1, 7);
    let (_, test3) = split(&all, 0.1, 8);
    assert_eq!((train.nnz(), test.nnz()), (900, 100));
    assert_eq!((train.shape(), test.shape()), ([50, 40], [50, 40]));
    assert_eq!(entries(&train), entries(&train2));
    assert_eq!(entries(&test), entries(&test2));
    assert_ne!(entries(&test), entries(&test3));
    // Relative order is kept: the values (original positions) increase in both halves.
    for half in [&train, &test] {
        assert!(half.values().windows(2).all(|w| w[0] < w[1]));
    }
    // Together they are the original entries.
    let mut merged: Vec<f32> = train
        .values()
        .iter()
        .chain(test.values())
        .copied()
        .collect();
    merged.sort_by(f32::total_cmp);
    assert_eq!(merged, all.values());
    let (all_train, none) = split(&all, 0.0, 1);
    assert_eq!((all_train.nnz(), none.nnz()), (1000, 0));
    let (none, all_test) = split(&all, 1.0, 1);
    assert_eq!((none.nnz(), all_test.nnz()), (0, 1000));
}

#[test]
#[cfg_attr(
    not(strads_data_movielens_100k),
    ignore = "needs ../shared/data/movielens-100k (not found when this test was built)"
)]
fn movielens_100k() {
    let dir = crate::data::shared_data("movielens-100k");
    let (train, test) = ratings_pair(dir.join("ua.base"), dir.join("ua.test")).unwrap();
    assert_eq!(train.shape(), [943, 1682]);
    assert_eq!(test.shape(), [943, 1682]);
    assert_eq!(train.nnz(), 90570);
    assert_eq!(test.nnz(), 9430);
    let test_alone = ratings_with_shape(dir.join("ua.test"), train.shape()).unwrap();
    assert_eq!(entries(&test_alone), entries(&test));
}

#[test]
#[cfg_attr(
    not(strads_data_movielens_latest_small),
    ignore = "needs ../shared/data/movielens-latest-small (not found when this test was built)"
)]
fn movielens_latest_small() {
    let path = crate::data::shared_data("movielens-latest-small").join("ratings.csv");
    let r = ratings(path).unwrap();
    assert_eq!(r.nnz(), 100836);
    assert_eq!(r.shape(), [610, 9724]);
    assert!(r.values().iter().all(|v| (0.5..=5.0).contains(v)));
}

/// Ids that would size the model far beyond what the file holds are refused, naming
/// the line of the largest id (the whitespace format; CSV ids are re-indexed).
#[test]
fn ids_are_bounded_by_the_ratings() {
    let (f, e) = err("1 1 5\n100000000 2 3\n");
    assert_eq!(
        e,
        format!(
            "{}:2: user id 100000000 is too large for 2 ratings: 1-based ids may be at most \
             1048576 (the larger of 1048576 and 16 per rating), since they size the model; \
             re-index the ids densely, or use the CSV format, which does; expected \
             {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 4294967296 5\n");
    assert!(
        e.starts_with(&format!(
            "{}:1: item id 4294967296 is too large for 1 rating: ",
            f.shown()
        )),
        "{e}"
    );
    // The floor: any file may use ids up to 2^20.
    let f = TempFile::new("floor", "1048576 1 5\n");
    assert_eq!(ratings(&f.0).unwrap().shape(), [1 << 20, 1]);
    // A pair counts the ratings of both files and names the file of the largest id.
    let train = TempFile::new("train", "1 1 5\n");
    let test = TempFile::new("test", "1 1 5\n1 2000000 3\n");
    let e = ratings_pair(&train.0, &test.0).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}:2: item id 2000000 is too large for 3 ratings",
            test.shown()
        )),
        "{e}"
    );
    // CSV ids are dense whatever their values.
    let f = TempFile::new("big.csv", "4294967296,99999999999,5\n");
    assert_eq!(ratings(&f.0).unwrap().shape(), [1, 1]);
}

#[test]
fn huge_ratings_are_refused() {
    let (f, e) = err("1 1 5\n2 2 3e38\n");
    assert_eq!(
        e,
        format!(
            "{}:2: rating \"3e38\" is beyond the limit: ratings are at most 1e9 in \
             magnitude; expected {WHITESPACE_FORMAT}",
            f.shown()
        )
    );
    let (_, e) = err("1,1,-2e9\n");
    assert!(e.contains("rating \"-2e9\" is beyond the limit"), "{e}");
    let f = TempFile::new("ok", "1 1 -1e9\n");
    assert_eq!(ratings(&f.0).unwrap().values(), &[-1e9]);
}
