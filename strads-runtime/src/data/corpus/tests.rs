use super::*;

use crate::data::TempFile;

fn entries(c: &Corpus) -> Vec<([usize; 2], u32)> {
    c.counts.iter().map(|(k, &v)| (k, v)).collect()
}

fn err(contents: &str) -> (TempFile, String) {
    let f = TempFile::new("bad.dat", contents.as_bytes());
    let e = lda_c(&f.0, None).unwrap_err().to_string();
    (f, e)
}

#[test]
fn reads_documents() {
    let f = TempFile::new("ok.dat", b"\xEF\xBB\xBF3 0:1 6:2\t2:1 \r\n\n0\n1 4:7\n");
    let c = lda_c(&f.0, None).unwrap();
    assert_eq!((c.docs, c.words, c.tokens()), (3, 7, 11));
    assert_eq!(c.counts.shape(), [3, 7]);
    assert_eq!(
        entries(&c),
        vec![([0, 0], 1), ([0, 6], 2), ([0, 2], 1), ([2, 4], 7)]
    );
    assert!(c.vocab.is_empty());
    assert_eq!(c.word(6), "#6");
}

#[test]
fn vocabulary_sets_the_words() {
    let data = TempFile::new("v.dat", b"2 0:1 1:1\n1 1:3\n");
    let vocab = TempFile::new("vocab.txt", b"alpha\nbeta \ngamma\r\ndelta\n");
    let c = lda_c(&data.0, Some(&vocab.0)).unwrap();
    assert_eq!((c.docs, c.words), (2, 4));
    assert_eq!(c.counts.shape(), [2, 4]);
    assert_eq!(c.vocab, vec!["alpha", "beta", "gamma", "delta"]);
    assert_eq!(c.word(1), "beta");
}

#[test]
fn n_must_match_the_pairs() {
    let (f, e) = err("2 0:1 1:1\n3 0:1 1:1\n");
    assert_eq!(
        e,
        format!(
            "{}:2: the line says N = 3 distinct words but has 2 id:count pairs; \
             expected LDA-C `N id:count id:count ...`: N distinct 0-based integer word \
             ids, each with a positive integer count",
            f.shown()
        )
    );
    let (f, e) = err("1 0:1 1:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: the line says N = 1 distinct words but has 2 id:count pairs; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    // A line that starts with a pair has no N.
    let (f, e) = err("0:1 1:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: the number of words \"0:1\" is not a non-negative integer; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("99999999999 0:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: the number of words \"99999999999\" is too large (at most 4294967295); \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn malformed_pairs() {
    for (pair, line) in [
        ("3", "1 3\n"),
        ("3:", "1 3:\n"),
        (":1", "1 :1\n"),
        ("3:1:1", "1 3:1:1\n"),
    ] {
        let (f, e) = err(line);
        assert_eq!(
            e,
            format!(
                "{}:1: pair \"{pair}\" is not id:count; expected {LDA_C_FORMAT}",
                f.shown()
            )
        );
    }
}

#[test]
fn non_integers() {
    let (f, e) = err("1 0:1\n\n2 x:1 3:1\n");
    assert_eq!(
        e,
        format!(
            "{}:3: word id \"x\" in \"x:1\" is not a non-negative integer; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 -2:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: word id \"-2\" in \"-2:1\" is not a non-negative integer; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 5:1.5\n");
    assert_eq!(
        e,
        format!(
            "{}:1: count \"1.5\" in \"5:1.5\" is not a positive integer; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 4294967296:1\n");
    assert_eq!(
        e,
        format!(
            "{}:1: word id in \"4294967296:1\" is too large (at most 4294967295); \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("1 4:4294967296\n");
    assert_eq!(
        e,
        format!(
            "{}:1: count in \"4:4294967296\" is too large (at most 4294967295); \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn zero_count() {
    let (f, e) = err("2 0:1 7:0\n");
    assert_eq!(
        e,
        format!(
            "{}:1: count 0 in \"7:0\" is invalid: counts are positive; \
             expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn repeated_word() {
    let (f, e) = err("3 5:1 2:1 5:2\n");
    assert_eq!(
        e,
        format!(
            "{}:1: word id 5 appears twice, in \"5:1\" and \"5:2\": the words of a line \
             are distinct; expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn id_beyond_the_vocabulary() {
    let data = TempFile::new("big.dat", b"1 0:1\n2 1:1 3:2\n");
    let vocab = TempFile::new("three.txt", b"a\nb\nc\n");
    let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:2: word id 3 in \"3:2\" is beyond the vocabulary: {} has 3 words \
             (ids 0 to 2); expected {LDA_C_FORMAT}",
            data.shown(),
            vocab.shown()
        )
    );
}

#[test]
fn empty_files() {
    let (f, e) = err("");
    assert_eq!(
        e,
        format!(
            "{}:1: the file has no documents; expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    let (f, e) = err("\n  \n");
    assert_eq!(
        e,
        format!(
            "{}:3: the file has no documents; expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn bad_vocabularies() {
    let data = TempFile::new("d.dat", b"1 0:1\n");
    let check = |contents: &[u8], expected: &str| {
        let vocab = TempFile::new("vocab.txt", contents);
        let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
        assert_eq!(e, format!("{}:{expected}", vocab.shown()));
    };
    check(
        b"",
        "1: the vocabulary has no words; expected one word per line, line k naming word \
         id k - 1",
    );
    check(
        b"a\n\nc\n",
        "2: the line is empty, and words follow it: each line is the word of its id (line 1 \
         is word 0), so remove the empty line; expected one word per line, line k naming \
         word id k - 1",
    );
    check(
        b"a\n\xff\xfe\n",
        &format!("2: the line is not UTF-8; expected {VOCAB_FORMAT}"),
    );
    let missing = std::env::temp_dir().join("strads-corpus-no-such-vocab");
    let e = lda_c(&data.0, Some(&missing)).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if *path == missing),
        "{e:?}"
    );
}

#[test]
#[cfg_attr(
    not(strads_data_lda_ap),
    ignore = "needs ../shared/data/lda-ap (not found when this test was built)"
)]
fn ap_corpus() {
    let dir = crate::data::shared_data("lda-ap");
    let vocab = dir.join("vocab.txt");
    let c = lda_c(dir.join("ap.dat"), Some(&vocab)).unwrap();
    assert_eq!((c.docs, c.words), (2246, 10473));
    assert_eq!(c.counts.shape(), [2246, 10473]);
    assert_eq!(c.tokens(), 435_838);
    assert_eq!(&c.vocab[..3], &["i", "new", "percent"]);
    // The head of PROVENANCE.md: `186 0:1 6144:1 3586:2 ...`.
    assert_eq!(c.counts.entry(2), ([0, 3586], &2));
    let without = lda_c(dir.join("ap.dat"), None).unwrap();
    assert_eq!(without.words, 10473);
    assert_eq!(entries(&without), entries(&c));
}

#[test]
fn generated_is_deterministic_and_skewed() {
    let a = generated(400, 2000, 10, 120.0, 3);
    let b = generated(400, 2000, 10, 120.0, 3);
    let c = generated(400, 2000, 10, 120.0, 4);
    assert_eq!(entries(&a), entries(&b));
    assert_ne!(entries(&a), entries(&c));
    assert_eq!((a.docs, a.words), (400, 2000));
    let mean = a.tokens() as f64 / 400.0;
    assert!((100.0..140.0).contains(&mean), "mean length {mean}");
    // Every document has words, distinct within it.
    let mut per_doc = vec![Vec::new(); 400];
    for ([d, w], _) in &a.counts {
        per_doc[d].push(w);
    }
    for words in &mut per_doc {
        assert!(!words.is_empty());
        let n = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), n);
    }
    // Word frequencies are skewed: the most frequent word is far above the mean.
    let mut freq = vec![0u64; 2000];
    for ([_, w], &n) in &a.counts {
        freq[w] += u64::from(n);
    }
    let max = *freq.iter().max().unwrap() as f64;
    assert!(max > 20.0 * a.tokens() as f64 / 2000.0, "max {max}");
}

#[test]
fn generated_documents_have_few_topics() {
    // With sparse mixtures, documents differ: two documents share far fewer words
    // than they would if every document mixed every topic evenly.
    let c = generated(200, 3000, 20, 200.0, 5);
    let mut docs = vec![std::collections::HashSet::new(); 200];
    for ([d, w], _) in &c.counts {
        docs[d].insert(w);
    }
    let overlap = |a: usize, b: usize| {
        let (x, y) = (&docs[a], &docs[b]);
        x.intersection(y).count() as f64 / x.len().min(y.len()) as f64
    };
    let mean: f64 = (0..100).map(|d| overlap(2 * d, 2 * d + 1)).sum::<f64>() / 100.0;
    assert!(mean < 0.5, "mean overlap {mean}");
}

#[test]
fn tokens_are_bounded() {
    // 2.2e9 tokens in one pair: beyond the per-pair limit (and i32).
    let (f, e) = err("1 0:7\n1 3:2200000000\n");
    assert_eq!(
        e,
        format!(
            "{}:2: the counts up to this line add up to 2200000007 tokens in 2 id:count \
             pairs, more than the limit of 16777216 (the larger of 16777216 and 1024 per \
             pair, at most 2147483647); expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
    // Up to the floor, any counts are fine.
    let f = TempFile::new("heavy.dat", b"1 0:16777215\n1 0:1\n");
    assert_eq!(lda_c(&f.0, None).unwrap().tokens(), 1 << 24);
}

/// The limit grows with the pairs from the floor, and stops at what `i32` counts hold.
#[test]
fn token_limit_stops_at_i32() {
    assert_eq!(token_limit(0), 1 << 24);
    assert_eq!(token_limit(1 << 14), 1 << 24);
    assert_eq!(token_limit(1 << 15), 1 << 25);
    assert_eq!(token_limit(1 << 21), i32::MAX as u64);
    assert_eq!(token_limit(usize::MAX), i32::MAX as u64);
}

#[test]
fn word_ids_are_bounded_without_a_vocabulary() {
    let (f, e) = err("1 0:1\n1 100000000:1\n");
    assert_eq!(
        e,
        format!(
            "{}:2: word id 100000000 is too large for 2 id:count pairs: without a \
             vocabulary, ids may be at most 1048576 (the larger of 1048576 and 16 per \
             pair), since they size the model; expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn a_corpus_without_words_is_refused() {
    let (f, e) = err("0\n\n0\n");
    assert_eq!(
        e,
        format!(
            "{}:4: the file's 2 documents hold no words; expected {LDA_C_FORMAT}",
            f.shown()
        )
    );
}

#[test]
fn a_vocabulary_ending_in_blank_lines_is_read_without_them() {
    let data = TempFile::new("d.dat", b"1 0:1\n");
    for (contents, words) in [
        (&b"a\nb\n\n"[..], &["a", "b"][..]),
        (b"a\r\nb\r\n \r\n\n", &["a", "b"]),
        (b"a\n\n", &["a"]),
    ] {
        let vocab = TempFile::new("vocab.txt", contents);
        let c = lda_c(&data.0, Some(&vocab.0)).unwrap();
        assert_eq!(c.vocab, words);
    }
    // Only blank lines: no words.
    let vocab = TempFile::new("vocab.txt", b"\n\n");
    let e = lda_c(&data.0, Some(&vocab.0)).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "the vocabulary has no words; expected one word per line, line k naming word id k - 1"
        ),
        "{e}"
    );
}

#[test]
fn generated_parameters_are_errors() {
    let e = |r: Result<Corpus>| r.unwrap_err().to_string();
    assert_eq!(
        e(try_generated(10, 100, 5, f64::NAN, 1)),
        "invalid setting avg_len=\"NaN\": a finite number of tokens per document, above 0"
    );
    assert_eq!(
        e(try_generated(10, 100, 5, 0.0, 1)),
        "invalid setting avg_len=\"0\": a finite number of tokens per document, above 0"
    );
    assert_eq!(
        e(try_generated(10, 100, 0, 5.0, 1)),
        "invalid setting topics=\"0\": at least 1 topic for 10 documents"
    );
    assert_eq!(
        e(try_generated(10, 1 << 33, 5, 5.0, 1)),
        "invalid setting words=\"8589934592\": at most 4294967296 (word ids are u32)"
    );
    assert_eq!(
        e(try_generated(10, 100, 5, 1e9, 1)),
        "invalid setting avg_len=\"1000000000\": at most 107374182 tokens per document \
         for 10 documents (a corpus holds at most 2147483647 tokens)"
    );
    assert_eq!(
        e(try_generated(10, 1 << 32, 1 << 30, 5.0, 1)),
        "cannot allocate more than 2^64 bytes for a generated corpus of 10 documents, \
         4294967296 words and 1073741824 topics"
    );
    assert!(
        e(try_generated(10, 1 << 32, 1 << 20, 5.0, 1))
            .starts_with("cannot allocate 36028900098180272 bytes for a generated corpus")
    );
}

#[test]
fn generated_degenerate() {
    let c = generated(0, 0, 0, 10.0, 1);
    assert_eq!((c.docs, c.words, c.tokens()), (0, 0, 0));
    let one = generated(3, 1, 1, 5.0, 1);
    assert!(one.counts.iter().all(|([_, w], _)| w == 0));
    assert_eq!(one.counts.nnz(), 3);
}
