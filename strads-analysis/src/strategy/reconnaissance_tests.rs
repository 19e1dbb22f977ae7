use super::*;
use crate::ir::Subscript;
use crate::testutil::{access, spec, sub};

#[test]
fn indirect_feature_weights_need_reconnaissance() {
    // Sparse LR over samples s: reads x[k] (inner loop, read-only), writes w[x[k]].
    let s = spec(
        1,
        &[1, 1],
        vec![
            access(0, false, vec![Subscript::Full]),
            access(1, false, vec![Subscript::Indirect]),
            access(1, true, vec![Subscript::Indirect]),
        ],
    );
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::Reconnaissance));
    assert_eq!(
        a.candidates[0].placements,
        vec![Placement::Shared, Placement::Recorded]
    );
    assert!(a.reason.is_some(), "says why no static strategy applies");
}

#[test]
fn indirect_columns_of_aligned_rows_stay_static() {
    // LDA's word-topic counts: nwk[w, z] with z read from data; rows follow w.
    // Doc-topic counts ndk[d, z] rows follow d: 2D over (d, w).
    let s = spec(
        2,
        &[2, 2],
        vec![
            access(0, true, vec![sub(&[1, 0], 0), Subscript::Indirect]),
            access(1, true, vec![sub(&[0, 1], 0), Subscript::Indirect]),
        ],
    );
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::TwoD));
}

/// Affine subscripts and no static plan: an unordered loop is recorded at run time; an
/// ordered one stays refused (its iterations form one chain).
#[test]
fn affine_loops_without_a_static_plan_fall_back_unless_ordered() {
    let mut s = spec(
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
        fallback_note(&s, &a).as_deref(),
        Some(
            "no static strategy (iterations with different `i` conflict: a[i] and a[i - 1] \
             touch the same element of `a`), so the accesses are recorded at run time"
        )
    );
    s.ordered = true;
    assert_eq!(analyze(&s).kind(), None);
}

/// `deg[u] += w; deg[v] += w` over an edge list: no static plan, but a buffer of `deg`
/// makes it 1D; a loop that also assigns `deg` gets no such hint.
#[test]
fn additive_arrays_get_a_buffer_hint() {
    let mut s = spec(
        2,
        &[1],
        vec![
            access(0, true, vec![sub(&[1, 0], 0)]),
            access(0, true, vec![sub(&[0, 1], 0)]),
        ],
    );
    let mut arrays = s.arrays.to_vec();
    arrays[0].additive = true;
    s.arrays = arrays.into();
    let a = analyze(&s);
    assert_eq!(a.kind(), Some(StrategyKind::Reconnaissance));
    assert_eq!(buffer_hint(&s), Some((vec![0], Strategy::OneD { dim: 0 })));
    let note = fallback_note(&s, &a).expect("a note");
    assert!(
        note.ends_with(
            "; `buffer(a)` would make it 1d (1D over `i`): each worker then adds into its \
             own copy, merged in worker order at the end of every step, and reads of `a` \
             inside the loop see this worker's updates only"
        ),
        "{note}"
    );
    let mut arrays = s.arrays.to_vec();
    arrays[0].additive = false;
    s.arrays = arrays.into();
    assert_eq!(buffer_hint(&s), None);
}
