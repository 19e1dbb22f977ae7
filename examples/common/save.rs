//! `--save FILE`: a trained model in the format its field's own tools read, written whole or
//! not at all (`strads::checkpoint::write_atomic`). Errors name the file. Compiled
//! into each example through `#[path]`.
//!
//! - [`libmf`]: LIBMF's text model (`mf_save_model`'s layout), which `mf_load_model` reads.
//! - [`word2vec_text`]: the word2vec text format, which gensim's
//!   `KeyedVectors.load_word2vec_format(path, binary=False)` reads.
//! - [`openke_json`]: OpenKE's `save_parameters` JSON (`ent_embeddings.weight`,
//!   `rel_embeddings.weight`), which its `load_parameters` reads.
//! - [`topic_word`]: the topic-word counts as the `lda` package's `nzw_` holds them (a
//!   topic a row, a word a column), whole numbers, one row a line (`numpy.loadtxt`).
//!
//! Floats are written in Rust's shortest form that reads back to the same bits.

#![allow(dead_code)] // each example uses one of these

use std::io::Write;
use std::path::Path;

use strads::prelude::*;

/// Writes `path` through `fill`, whole or not at all (`strads::checkpoint::write_atomic`:
/// a temporary file beside it, synced, then renamed).
fn write_whole(
    path: &Path,
    fill: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> Result<(), String> {
    let mut bytes = Vec::new();
    fill(&mut bytes).map_err(|e| format!("cannot save the model to {}: {e}", path.display()))?;
    strads::checkpoint::write_atomic(path, &bytes)
        .map_err(|e| format!("cannot save the model: {e}"))
}

/// Row `r` of `a`, its values separated by spaces, each followed by `end`.
fn row(out: &mut impl Write, a: &DistArray<f32, 2>, r: usize, sep: &str) -> std::io::Result<()> {
    for (k, v) in a.row(r).iter().enumerate() {
        if k > 0 {
            out.write_all(sep.as_bytes())?;
        }
        write!(out, "{v}")?;
    }
    Ok(())
}

/// LIBMF's text model of factors `p` (users) and `q` (items), `k` columns each: squared
/// loss (`f 0`), the average `b` (what LIBMF predicts for an id it has no row for), then
/// each row as `p<id> T <k values>` (ids 0-based, as the arrays' rows).
pub(crate) fn libmf(
    path: &Path,
    p: &DistArray<f32, 2>,
    q: &DistArray<f32, 2>,
    b: f32,
) -> Result<(), String> {
    let [m, k] = p.shape();
    let n = q.shape()[0];
    write_whole(path, |out| {
        writeln!(out, "f 0\nm {m}\nn {n}\nk {k}\nb {b}")?;
        for (prefix, a, rows) in [('p', p, m), ('q', q, n)] {
            for r in 0..rows {
                write!(out, "{prefix}{r} T ")?;
                row(out, a, r, " ")?;
                writeln!(out, " ")?;
            }
        }
        Ok(())
    })
}

/// The word2vec text format: `<words> <dim>`, then a line per word, `<word> <dim values>`.
pub(crate) fn word2vec_text(
    path: &Path,
    words: &[String],
    vectors: &DistArray<f32, 2>,
) -> Result<(), String> {
    let [n, dim] = vectors.shape();
    write_whole(path, |out| {
        writeln!(out, "{} {dim}", n.min(words.len()))?;
        for (r, word) in words.iter().enumerate().take(n) {
            write!(out, "{word} ")?;
            row(out, vectors, r, " ")?;
            writeln!(out)?;
        }
        Ok(())
    })
}

/// OpenKE's parameters as JSON: `{"ent_embeddings.weight": [[..], ..],
/// "rel_embeddings.weight": [[..], ..]}`.
pub(crate) fn openke_json(
    path: &Path,
    entities: &DistArray<f32, 2>,
    relations: &DistArray<f32, 2>,
) -> Result<(), String> {
    write_whole(path, |out| {
        out.write_all(b"{")?;
        for (i, (key, a)) in [
            ("ent_embeddings.weight", entities),
            ("rel_embeddings.weight", relations),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                out.write_all(b", ")?;
            }
            write!(out, "\"{key}\": [")?;
            for r in 0..a.shape()[0] {
                if r > 0 {
                    out.write_all(b", ")?;
                }
                out.write_all(b"[")?;
                row(out, a, r, ", ")?;
                out.write_all(b"]")?;
            }
            out.write_all(b"]")?;
        }
        writeln!(out, "}}")
    })
}

/// The topic-word counts `nwk` (a word a row) as a topic a row, a word a column: the
/// `lda` package's `nzw_`.
pub(crate) fn topic_word(path: &Path, nwk: &DistArray<i32, 2>) -> Result<(), String> {
    let [words, topics] = nwk.shape();
    let counts = nwk.as_slice();
    write_whole(path, |out| {
        for k in 0..topics {
            for w in 0..words {
                if w > 0 {
                    out.write_all(b" ")?;
                }
                write!(out, "{}", counts[w * topics + k])?;
            }
            writeln!(out)?;
        }
        Ok(())
    })
}
