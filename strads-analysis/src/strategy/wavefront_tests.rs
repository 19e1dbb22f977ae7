use super::*;
use crate::ir::Subscript;
use crate::report::report;
use crate::testutil::{access, spec, sub};

/// Dynamic time warping: d[i+1, j+1] from d[i, j+1], d[i+1, j], d[i, j].
fn dtw(ordered: bool) -> LoopSpec {
    let mut s = spec(
        2,
        &[2],
        vec![
            access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], 1)]),
            access(0, false, vec![sub(&[1, 0], 1), sub(&[0, 1], 0)]),
            access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
            access(0, true, vec![sub(&[1, 0], 1), sub(&[0, 1], 1)]),
        ],
    );
    s.ordered = ordered;
    s
}

#[test]
fn dtw_is_an_unskewed_unimodular_wavefront() {
    for ordered in [false, true] {
        let s = dtw(ordered);
        let a = analyze(&s);
        assert_eq!(
            a.kind(),
            Some(StrategyKind::Unimodular),
            "{}",
            report(&s, &a)
        );
        let c = &a.candidates[0];
        assert_eq!(c.skew, vec![vec![1, 0], vec![0, 1]]);
        assert_eq!(c.placements, vec![Placement::Tiled]);
    }
}

#[test]
fn ordered_rows_through_an_inner_loop_are_ordered_2d() {
    // Ordered SGD-MF: w[u, k] and h[i, k] for k of an inner loop (`*`).
    let mut s = spec(
        2,
        &[2, 2],
        vec![
            access(0, false, vec![sub(&[1, 0], 0), Subscript::Full]),
            access(1, false, vec![sub(&[0, 1], 0), Subscript::Full]),
            access(0, true, vec![sub(&[1, 0], 0), Subscript::Full]),
            access(1, true, vec![sub(&[0, 1], 0), Subscript::Full]),
        ],
    );
    s.ordered = true;
    let a = analyze(&s);
    let got: Vec<_> = a.candidates.iter().map(|c| c.strategy).collect();
    assert_eq!(
        got,
        vec![Strategy::Wavefront {
            space: 0,
            time: 1,
            unimodular: false
        }],
        "{}",
        report(&s, &a)
    );
    assert_eq!(a.candidates[0].placements, vec![Placement::Tiled; 2]);
    assert_eq!(tile_axes(&s, 0), Ok(vec![Some(0), None]));
    assert_eq!(
        tile_bounded(&[Some(0), None], [&[1, 0], &[0, 1]]),
        [true, false]
    );
}

#[test]
fn a_written_array_the_tiles_cannot_see_is_refused() {
    // b[k] (inner loop) written in an ordered 2D loop: every tile touches all of it.
    let mut s = spec(
        2,
        &[2, 1],
        vec![
            access(0, false, vec![sub(&[1, 0], -1), sub(&[0, 1], 0)]),
            access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
            access(1, true, vec![sub(&[0, 0], 0)]),
        ],
    );
    s.ordered = true;
    let a = analyze(&s);
    assert_eq!(a.kind(), None, "{}", report(&s, &a));
}

#[test]
fn gauss_seidel_9_point_needs_a_skew() {
    // a[i, j] from a[i-1, j+1] (and a[i, j-1]): vector (1, -1).
    let mut s = spec(
        2,
        &[2],
        vec![
            access(0, false, vec![sub(&[1, 0], -1), sub(&[0, 1], 1)]),
            access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], -1)]),
            access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
        ],
    );
    s.ordered = true;
    let a = analyze(&s);
    assert_eq!(
        a.kind(),
        Some(StrategyKind::Unimodular),
        "{}",
        report(&s, &a)
    );
    assert_eq!(a.candidates[0].skew, vec![vec![1, 0], vec![1, 1]]);
}

#[test]
fn ordered_5_point_gauss_seidel_is_ordered_2d() {
    let mut s = spec(
        2,
        &[2],
        vec![
            access(0, false, vec![sub(&[1, 0], -1), sub(&[0, 1], 0)]),
            access(0, false, vec![sub(&[1, 0], 0), sub(&[0, 1], -1)]),
            access(0, false, vec![sub(&[1, 0], 1), sub(&[0, 1], 0)]),
            access(0, true, vec![sub(&[1, 0], 0), sub(&[0, 1], 0)]),
        ],
    );
    // Unordered, 2D's rotation cannot place the halo reads: the same wavefront runs.
    let unordered = analyze(&s);
    assert_eq!(unordered.kind(), Some(StrategyKind::TwoD));
    assert!(matches!(
        unordered.rejected[0],
        (Strategy::TwoD { space: 0, time: 1 }, _)
    ));
    s.ordered = true;
    let a = analyze(&s);
    assert_eq!(
        a.candidates[0].strategy,
        Strategy::Wavefront {
            space: 0,
            time: 1,
            unimodular: false
        },
        "{}",
        report(&s, &a)
    );
    assert_eq!(a.kind(), Some(StrategyKind::TwoD));
}
