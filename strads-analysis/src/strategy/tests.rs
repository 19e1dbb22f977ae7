use super::*;
use crate::ir::Subscript;
use crate::testutil::{access, spec, sub};

#[test]
fn kinds_print_the_words_expect_takes() {
    let words: Vec<String> = StrategyKind::ALL.iter().map(|k| k.to_string()).collect();
    assert_eq!(words, ["1d", "2d", "unimodular", "reconnaissance"]);
    for k in StrategyKind::ALL {
        assert_eq!(StrategyKind::from_word(k.as_str()), Some(k));
    }
    assert_eq!(StrategyKind::from_word("static"), None);
    let ordered_2d = Strategy::Wavefront {
        space: 0,
        time: 1,
        unimodular: false,
    };
    assert_eq!(ordered_2d.kind(), StrategyKind::TwoD);
    assert!(!StrategyKind::Reconnaissance.is_static());
}

fn sgd() -> LoopSpec {
    spec(
        2,
        &[2, 2],
        vec![
            access(0, true, vec![sub(&[1, 0], 0), Subscript::Full]),
            access(1, true, vec![sub(&[0, 1], 0), Subscript::Full]),
        ],
    )
}

#[test]
fn why_not_1d_names_a_dependence_crossing_each_dim() {
    let s = sgd();
    let a = analyze(&s);
    assert_eq!(
        a.why_not(&s, StrategyKind::OneD).as_deref(),
        Some(
            "no dim can be split alone: iterations with different `i` touch the same \
             element through b[j, *], and iterations with different `j` touch the same \
             element through a[i, *]"
        )
    );
    assert_eq!(a.why_not(&s, StrategyKind::TwoD), None);
}

#[test]
fn conflicts_are_the_pairs_that_defeat_a_kind() {
    let pairs = |a: &Analysis, s: &LoopSpec, k| -> Vec<(usize, usize, String)> {
        a.conflicts(s, k)
            .iter()
            .map(|v| (v.src, v.dst, crate::dep::format_dist(&v.dist)))
            .collect()
    };
    let s = sgd();
    let a = analyze(&s);
    let both = vec![
        (0, 0, "(0, +inf)".to_string()),
        (1, 1, "(+inf, 0)".to_string()),
    ];
    assert_eq!(pairs(&a, &s, StrategyKind::OneD), both);
    // No vector varies in two dims: every loop-carried one is named.
    assert_eq!(pairs(&a, &s, StrategyKind::TwoD), both);
    assert_eq!(pairs(&a, &s, StrategyKind::Reconnaissance), vec![]);
    // a[i] = a[i - 1] + 1; b[i] = b[i - 1] * 2: both pairs, though their vectors are
    // the same (the analysis's `vectors` keep one).
    let mut ramp = spec(
        1,
        &[1, 1],
        vec![
            access(0, false, vec![sub(&[1], -1)]),
            access(0, true, vec![sub(&[1], 0)]),
            access(1, false, vec![sub(&[1], -1)]),
            access(1, true, vec![sub(&[1], 0)]),
        ],
    );
    ramp.ordered = true;
    let a = analyze(&ramp);
    assert_eq!(a.kind(), None);
    assert_eq!(a.vectors.len(), 1);
    assert_eq!(
        pairs(&a, &ramp, StrategyKind::Unimodular),
        vec![(0, 1, "(1)".to_string()), (2, 3, "(1)".to_string())]
    );
}

#[test]
fn sgd_mf_is_2d_both_ways() {
    let a = analyze(&sgd());
    let got: Vec<_> = a.candidates.iter().map(|c| c.strategy).collect();
    assert_eq!(
        got,
        vec![
            Strategy::TwoD { space: 0, time: 1 },
            Strategy::TwoD { space: 1, time: 0 }
        ]
    );
    let c = &a.candidates[0];
    assert!(matches!(
        c.placements[0],
        Placement::Local(Align {
            axis: 0,
            dim: 0,
            ..
        })
    ));
    assert!(matches!(
        c.placements[1],
        Placement::Rotated(Align {
            axis: 0,
            dim: 1,
            ..
        })
    ));
}

#[test]
fn choose_rotates_the_smaller_array() {
    let a = analyze(&sgd());
    // a is 943 x 32, b is 1682 x 32: rotate a, so space is dim 1.
    let c = choose(&a, &[943 * 32, 1682 * 32], 2).unwrap();
    assert_eq!(c.strategy, Strategy::TwoD { space: 1, time: 0 });
    let c = choose(&a, &[2000 * 32, 1682 * 32], 2).unwrap();
    assert_eq!(c.strategy, Strategy::TwoD { space: 0, time: 1 });
}

#[test]
fn row_update_is_1d() {
    // a[i, j] = f(b[j]) over (i, j): 1D over i and over j? b is read-only.
    let s = spec(
        2,
        &[2, 1],
        vec![
            access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
            access(1, false, vec![sub(&[0, 1], 0)]),
        ],
    );
    let a = analyze(&s);
    let got: Vec<_> = a.candidates.iter().map(|c| c.strategy).collect();
    assert_eq!(
        got,
        vec![Strategy::OneD { dim: 0 }, Strategy::OneD { dim: 1 }]
    );
    assert_eq!(a.candidates[0].placements[1], Placement::Shared);
}

#[test]
fn unalignable_write_is_rejected_with_reason() {
    // a[2i] written, a[4i + 1] read: independent, but not one coefficient.
    let s = spec(
        1,
        &[1],
        vec![
            access(0, true, vec![sub(&[2], 0)]),
            access(0, false, vec![sub(&[4], 1)]),
        ],
    );
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::Reconnaissance));
    assert_eq!(
        a.reason.as_deref(),
        Some(
            "the dependences allow 1D over `i`, but `a` is written and no subscript of it \
             follows `i` alone, identically in every access"
        )
    );
}

#[test]
fn strided_red_black_is_1d() {
    // x[2k + 1] written from x[2k] and x[2k + 2]: odd and even never meet.
    let s = spec(
        1,
        &[1],
        vec![
            access(0, false, vec![sub(&[2], 0)]),
            access(0, false, vec![sub(&[2], 2)]),
            access(0, true, vec![sub(&[2], 1)]),
        ],
    );
    let a = analyze(&s);
    assert!(a.vectors.is_empty());
    assert_eq!(a.kind(), Some(StrategyKind::OneD), "{:?}", a.reason);
    let al = Align {
        axis: 0,
        dim: 0,
        coeff: 2,
        constant: 0,
        writes: 0b010,
        touches: 0b111,
    };
    assert_eq!(a.candidates[0].placements, vec![Placement::Local(al)]);
    // Iterations 2..4 write x[5], x[7] and read x[4], x[6], x[8].
    let got: Vec<(usize, bool, bool)> = (3..10)
        .map(|x| (x, al.holds(2, 4, x, false), al.holds(2, 4, x, true)))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, false, false),
            (4, true, false),
            (5, true, true),
            (6, true, false),
            (7, true, true),
            (8, true, false),
            (9, false, false),
        ]
    );
    assert_eq!(al.image(2, 4, 100), (4, 9));
}

#[test]
fn congruent_constants_do_not_align() {
    // x[2k] written, x[2k + 2] read: iteration k reads what k + 1 writes.
    let s = spec(
        2,
        &[1],
        vec![
            access(0, true, vec![sub(&[2, 0], 0)]),
            access(0, false, vec![sub(&[2, 0], 2)]),
        ],
    );
    assert!(alignments(&s, 0).is_empty());
    // With a third constant that is odd, the even ones still meet.
    let s = spec(
        1,
        &[1],
        vec![
            access(0, true, vec![sub(&[2], 0)]),
            access(0, false, vec![sub(&[2], 1)]),
            access(0, false, vec![sub(&[2], -2)]),
        ],
    );
    assert!(alignments(&s, 0).is_empty());
}

#[test]
fn serial_chain_has_a_reason() {
    let s = spec(
        1,
        &[1],
        vec![
            access(0, true, vec![sub(&[1], 0)]),
            access(0, false, vec![sub(&[1], -1)]),
        ],
    );
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::Reconnaissance));
    assert_eq!(
        a.reason.as_deref(),
        Some(
            "iterations with different `i` conflict: a[i] and a[i - 1] touch the same element of `a`"
        )
    );
}

#[test]
fn image_of_ranges() {
    let a = Align::uniform(0, 0, 2, 1);
    assert_eq!(a.image(0, 3, 100), (1, 6));
    let r = Align::uniform(0, 0, -1, 9);
    assert_eq!(r.image(2, 5, 10), (5, 8));
    assert_eq!(r.image(0, 0, 10), (0, 0));
}
