use std::io::Write;

use super::*;
use crate::data::load::words::MAX_WORD;

fn gz(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

fn words_err(contents: &[u8], min_count: u64) -> (TempFile, String) {
    let f = TempFile::new("bad.txt", contents);
    let e = words(&f.0, min_count, 10_000).unwrap_err().to_string();
    (f, e)
}

const EXPECTED: &str =
    "expected UTF-8 text, words separated by whitespace, plain or gzip-compressed";

#[test]
fn words_keep_the_frequent_ones_most_frequent_first() {
    let text = "\u{feff}b a c a\tb a\r\n\n  d b  c\nc\n";
    let f = TempFile::new("w.txt", text);
    let w = words(&f.0, 2, 10_000).unwrap();
    // b, a and c 3 times each (ties in order of first appearance), d once.
    assert_eq!(w.vocab, ["b", "a", "c"]);
    assert_eq!(w.counts, [3, 3, 3]);
    assert_eq!(w.tokens, [0, 1, 2, 1, 0, 1, 0, 2, 2]);
    // Lines are sentences; the empty line makes none.
    assert_eq!(w.sentences, [0, 6, 8, 9]);
    assert_eq!(w.raw_words, 10);
    assert_eq!(w.id("c"), Some(2));
    assert_eq!(w.id("d"), None);
}

/// A file of several gzip members (as `cat a.gz b.gz` makes) reads as its text does, the
/// byte order mark stripped even when the first member ends inside it.
#[test]
fn gzip_members_read_as_one_text() {
    let text = "\u{feff}one two three one\ntwo one three";
    let bytes = text.as_bytes();
    let mut members = gz(&bytes[..1]);
    members.extend(gz(&bytes[1..5]));
    members.extend(gz(&bytes[5..]));
    let plain = TempFile::new("m.txt", text);
    let packed = TempFile::new("m.txt.gz", members);
    let (a, b) = (
        words(&plain.0, 1, 100).unwrap(),
        words(&packed.0, 1, 100).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a.vocab, ["one", "two", "three"]);
    assert_eq!(a.raw_words, 7);
}

#[test]
fn gzip_reads_as_plain_text_and_long_lines_are_cut() {
    let text = "one two three one two one\nthree";
    let plain = TempFile::new("w.txt", text);
    let packed = TempFile::new("w.txt.gz", gz(text.as_bytes()));
    let (a, b) = (
        words(&plain.0, 1, 4).unwrap(),
        words(&packed.0, 1, 4).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a.vocab, ["one", "two", "three"]);
    // Sentences of at most 4 words: the first line is cut after its fourth word.
    assert_eq!(a.sentences, [0, 4, 6, 7]);
}

#[test]
fn a_word_dropped_from_a_sentence_leaves_no_empty_sentence() {
    let f = TempFile::new("w.txt", "x y\nrare\nx y\n");
    let w = words(&f.0, 2, 10_000).unwrap();
    assert_eq!(w.vocab, ["x", "y"]);
    assert_eq!(w.sentences, [0, 2, 4]);
    assert_eq!(w.raw_words, 5);
}

#[test]
fn bad_files_name_the_line() {
    let (f, e) = words_err(b"good words\nbad \xff\xfe word\n", 1);
    assert_eq!(
        e,
        format!(
            "{}:2: the word \"\u{fffd}\u{fffd}\" is not UTF-8; {EXPECTED}",
            f.shown()
        )
    );
    let (f, e) = words_err(b"a b\nc\0d\n", 1);
    assert_eq!(
        e,
        format!(
            "{}:2: a NUL byte: this is a binary file, not text; {EXPECTED}",
            f.shown()
        )
    );
    let long = "x".repeat(MAX_WORD + 1);
    let (f, e) = words_err(format!("a\n\n{long}").as_bytes(), 1);
    assert_eq!(
        e,
        format!(
            "{}:3: a word longer than {MAX_WORD} bytes, starting \"{}\"...; {EXPECTED}",
            f.shown(),
            "x".repeat(40)
        )
    );
    let (f, e) = words_err(b"a b c\na\n", 3);
    assert_eq!(
        e,
        format!(
            "{}:3: no word occurs 3 times or more (4 words read, 3 distinct); {EXPECTED}",
            f.shown()
        )
    );
    let (f, e) = words_err(b"", 1);
    assert_eq!(
        e,
        format!(
            "{}:1: no word occurs 1 times or more (0 words read, 0 distinct); {EXPECTED}",
            f.shown()
        )
    );
}

#[test]
fn a_truncated_gzip_file_is_an_error_at_the_line_reached() {
    let text: String = (0..2000)
        .map(|i| format!("w{} ", i % 50))
        .collect::<String>()
        + "\n";
    let mut packed = gz(format!("{text}{text}").as_bytes());
    packed.truncate(packed.len() - 30);
    let (f, e) = words_err(&packed, 1);
    let prefix = format!("{}:2: the gzip stream is corrupt or truncated (", f.shown());
    assert!(e.starts_with(&prefix), "{e}");
    assert!(e.ends_with(EXPECTED), "{e}");
    let missing = words("/nonexistent/strads/words.txt", 1, 10).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
}

#[test]
fn the_generated_corpus_has_text8s_shape() {
    let w = crate::generate::words_like(&crate::generate::WordsConfig {
        words: 200_000,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(w.raw_words, 200_000);
    assert!(w.counts.windows(2).all(|c| c[0] >= c[1]));
    assert!(w.counts.iter().all(|&c| c >= 5));
    assert_eq!(w.tokens.len() as u64, w.counts.iter().sum::<u64>());
    assert_eq!(*w.sentences.last().unwrap(), w.tokens.len());
    // Zipf: the most frequent word is about 1/ln(types) of half the words or more.
    assert!(w.counts[0] > 200_000 / 40, "{}", w.counts[0]);
    let again = crate::generate::words_like(&crate::generate::WordsConfig {
        words: 200_000,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(w, again);
    let zero = crate::generate::words_like(&crate::generate::WordsConfig {
        words: 0,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(zero.to_string(), "invalid setting words=\"0\": at least 1");
}

#[test]
#[cfg_attr(
    not(strads_data_text8_prefix),
    ignore = "needs ../shared/data/text8-prefix (not found when this test was built)"
)]
fn text8_prefix() {
    let path = crate::data::shared_data("text8-prefix").join("text8_prefix_6877825.txt.gz");
    let w = words(&path, 5, 10_000).unwrap();
    // PROVENANCE.md: the first 6.88 MB of text8, 1.17 M words on one line.
    assert_eq!(w.raw_words, 1_171_946);
    assert_eq!(w.vocab.len(), 15_440);
    assert_eq!(&w.vocab[..3], ["the", "of", "one"]); // as `sort | uniq -c` counts them
    assert_eq!(w.sentences.len() - 1, 118);
    assert_eq!(w.tokens.len() as u64, w.counts.iter().sum::<u64>());
}
