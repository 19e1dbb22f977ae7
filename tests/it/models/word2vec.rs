//! The word2vec example's loops: skip-gram in the data-parallel mode (replicas merged by
//! summing their differences) runs the serial loop on one worker and equals the replay of
//! its recorded order on more; the analogy loop (read-only, 1D) counts what the serial
//! loop counts.

use strads::generate::{WordsConfig, words_like};
use strads::load::Words;
use strads::prelude::*;
use strads::testing::{bits, plan_always, record, replay, serial};

/// The example's loops, compiled here as they are there.
#[path = "../../../examples/word2vec/model.rs"]
#[allow(dead_code)]
mod model;
use model::{analogies, sigmoid_table, skipgram_epoch};

const DIM: usize = 16;

struct Setup {
    tokens: DistArray<u32, 1>,
    sentence: DistArray<u32, 1>,
    keep: DistArray<u32, 1>,
    alias: DistArray<u32, 1>,
    sigmoid: DistArray<f32, 2>,
    vocab: usize,
}

fn setup() -> Setup {
    let w: Words = words_like(&WordsConfig {
        words: 6_000,
        types: 400,
        sentence: 1_000,
        ..Default::default()
    })
    .unwrap();
    let sentence: Vec<u32> = w
        .sentences
        .windows(2)
        .enumerate()
        .flat_map(|(s, r)| std::iter::repeat_n(s as u32, r[1] - r[0]))
        .collect();
    Setup {
        tokens: DistArray::from_fn([w.tokens.len()], |[k]| w.tokens[k]),
        sentence: DistArray::from_fn([sentence.len()], |[k]| sentence[k]),
        // Noise words: word k kept with probability 1/2 (its alias the next word, kept).
        keep: DistArray::from_fn(
            [w.vocab.len()],
            |[k]| if k % 2 == 0 { 1 << 31 } else { u32::MAX },
        ),
        alias: DistArray::from_fn([w.vocab.len()], |[k]| ((k + 1) % w.vocab.len()) as u32),
        sigmoid: sigmoid_table(),
        vocab: w.vocab.len(),
    }
}

fn vectors(s: &Setup) -> (DistArray<f32, 2>, DistArray<f32, 2>) {
    (
        DistArray::from_fn([s.vocab, DIM], |[w, k]| {
            ((w * 7 + k * 3) % 11) as f32 / 100.0 - 0.05
        }),
        DistArray::zeros([s.vocab, DIM]),
    )
}

fn epoch(s: &Setup, syn0: &mut DistArray<f32, 2>, syn1: &mut DistArray<f32, 2>) -> (f64, u64) {
    skipgram_epoch(
        &s.tokens,
        &s.sentence,
        &s.keep,
        &s.alias,
        &s.sigmoid,
        syn0,
        syn1,
        3,
        4,
        0.05,
        0.0,
        0.5,
        17,
    )
}

#[test]
fn one_worker_runs_the_serial_loop() {
    let s = setup();
    let (mut a0, mut a1) = vectors(&s);
    let want = serial(|| epoch(&s, &mut a0, &mut a1));
    let (mut b0, mut b1) = vectors(&s);
    let got = plan_always(|| strads::with_threads(1, || epoch(&s, &mut b0, &mut b1)));
    assert_eq!(got.1, want.1);
    assert_eq!(got.0.to_bits(), want.0.to_bits());
    assert_eq!((bits(&b0), bits(&b1)), (bits(&a0), bits(&a1)));
    assert!(want.0 > 0.0 && want.1 > 1000, "{want:?}");
}

#[test]
fn more_workers_equal_their_replay_and_learn() {
    let s = setup();
    for threads in [2, 3] {
        let (mut a0, mut a1) = vectors(&s);
        let (first, trace) =
            strads::with_threads(threads, || record(|| epoch(&s, &mut a0, &mut a1)));
        let (mut b0, mut b1) = vectors(&s);
        let again = replay(&trace, || epoch(&s, &mut b0, &mut b1));
        assert_eq!((bits(&b0), bits(&b1)), (bits(&a0), bits(&a1)), "{threads}");
        assert_eq!(again.1, first.1);
        // The predictions are the serial loop's (the same draws), the vectors are not.
        let (mut c0, mut c1) = vectors(&s);
        let one = serial(|| epoch(&s, &mut c0, &mut c1));
        assert_eq!(one.1, first.1);
        assert_ne!(bits(&c1), bits(&a1));
        // A second epoch lowers the loss.
        let (next, _) = strads::with_threads(threads, || record(|| epoch(&s, &mut a0, &mut a1)));
        assert!(
            next.0 / (next.1 as f64) < first.0 / (first.1 as f64),
            "{first:?} then {next:?}"
        );
    }
}

#[test]
fn analogies_count_what_the_serial_loop_counts() {
    let (words, dim) = (300, 8);
    let unit = DistArray::<f32, 2>::from_fn([words, dim], |[w, k]| {
        (((w * 31 + k * 17) % 23) as f32 - 11.0) / 11.0
    });
    // Questions whose answer is the word closest to b - a + c: some right, some wrong.
    let questions =
        DistArray::<u32, 2>::from_fn([200, 4], |[q, k]| ((q * 13 + k * 7) % words) as u32);
    let want = serial(|| analogies(&questions, &unit, words));
    for threads in [2, 4] {
        assert_eq!(
            strads::with_threads(threads, || analogies(&questions, &unit, words)),
            want
        );
    }
    // The answer itself, as question d, is counted right.
    let mut best = Vec::new();
    for q in 0..200 {
        let (a, b, c) = (
            questions[[q, 0]] as usize,
            questions[[q, 1]] as usize,
            questions[[q, 2]] as usize,
        );
        let t: Vec<f32> = (0..dim)
            .map(|k| unit[[b, k]] - unit[[a, k]] + unit[[c, k]])
            .collect();
        let mut top = (f32::NEG_INFINITY, 0);
        for v in 0..words {
            let s = dot(unit.row(v), &t);
            if s > top.0 && v != a && v != b && v != c {
                top = (s, v);
            }
        }
        best.push(top.1 as u32);
    }
    let answered =
        DistArray::<u32, 2>::from_fn(
            [200, 4],
            |[q, k]| if k == 3 { best[q] } else { questions[[q, k]] },
        );
    assert_eq!(
        strads::with_threads(2, || analogies(&answered, &unit, words)),
        200
    );
}
