//! Read windows: a read-only array that follows a partitioned dim is read by parts (the
//! image of the block's partition), which is what a rank of a cluster receives of it.

use strads_analysis::{Partition, Strategy, Subscript, analyze};

use super::tests::{access, aff, array, spec};
use super::*;

#[test]
fn read_only_arrays_that_follow_a_partitioned_dim_get_read_windows() {
    // for (u, i) in ratings { e += dot(w.row(u), h.row(i)) + b[i + 1] + c[u] + g[2 * u] }:
    // `w` follows the space dim, `h` the time dim (2D) or nothing (1D), `b` the time dim
    // with an offset, `c` is read in two ways (`c[u]` and `c[0]`), `g` with a stride.
    let ro = |name| array(name, 2, false);
    let s = spec(
        &["u", "i"],
        vec![
            ro("w"),
            ro("h"),
            array("b", 1, false),
            array("c", 1, false),
            ro("g"),
        ],
        vec![
            access(0, false, vec![aff(&[1, 0], 0), Subscript::Full]),
            access(1, false, vec![aff(&[0, 1], 0), Subscript::Full]),
            access(2, false, vec![aff(&[0, 1], 1)]),
            access(3, false, vec![aff(&[1, 0], 0)]),
            access(3, false, vec![aff(&[0, 0], 0)]),
            access(4, false, vec![aff(&[2, 0], 0), Subscript::Full]),
        ],
        false,
    );
    let an = analyze(&s);
    let read = |axis, lo, hi| Window::Range {
        axis,
        lo,
        hi,
        writable: false,
    };
    let all = Window::All { writable: false };
    let shapes: [&[usize]; 5] = [&[4, 3], &[6, 3], &[7], &[4], &[8, 3]];
    let one_d = an
        .candidates
        .iter()
        .find(|c| c.strategy == Strategy::OneD { dim: 0 })
        .expect("a 1D candidate over u");
    let sched = grid::schedule(&s, one_d, &[Partition::uniform(4, 2)], &shapes, 2);
    assert_eq!(
        sched.windows,
        vec![
            vec![
                read(0, 0, 2),
                all.clone(),
                all.clone(),
                all.clone(),
                read(0, 0, 3)
            ],
            vec![
                read(0, 2, 4),
                all.clone(),
                all.clone(),
                all.clone(),
                read(0, 4, 7)
            ],
        ]
    );
    // SGD-MF with read-only biases: `w[u]` and `h[i]` written, `bu[u]` and `bi[i + 1]`
    // read. A 2D plan: each block reads the biases of its two partitions.
    let s2 = spec(
        &["u", "i"],
        vec![
            array("w", 2, true),
            array("h", 2, true),
            array("bu", 1, false),
            array("bi", 1, false),
        ],
        vec![
            access(0, true, vec![aff(&[1, 0], 0), Subscript::Full]),
            access(1, true, vec![aff(&[0, 1], 0), Subscript::Full]),
            access(2, false, vec![aff(&[1, 0], 0)]),
            access(3, false, vec![aff(&[0, 1], 1)]),
        ],
        false,
    );
    let an2 = analyze(&s2);
    let two_d = &an2.candidates[0];
    assert_eq!(two_d.strategy, Strategy::TwoD { space: 0, time: 1 });
    let parts = [Partition::uniform(4, 2), Partition::uniform(6, 2)];
    let shapes2: [&[usize]; 4] = [&[4, 3], &[6, 3], &[4], &[7]];
    let sched2 = grid::schedule(&s2, two_d, &parts, &shapes2, 2);
    let (bu, bi) = (
        |s: usize| read(0, 2 * s, 2 * s + 2),
        |t: usize| read(0, 3 * t + 1, 3 * t + 4),
    );
    for (k, set) in sched2.windows.iter().enumerate() {
        let (sp, t) = (k / 2, k % 2);
        assert_eq!(set[2..], [bu(sp), bi(t)], "block {k}");
    }
    assert_eq!(sched2.overlap(&shapes2), None);
    // Nothing is written: no two windows clash.
    assert_eq!(sched.overlap(&shapes), None);
}

/// A CSR loop, `for s in 0..n { y[2 * s] = x[offsets[s]..offsets[s + 1]] .. ; y[2 * s + 1] = .. }`:
/// `offsets`, read at two constants of the space dim, gets a read window holding both (a
/// block's samples and one more), while `y`, written at two constants, gets the lattice of
/// its own indices.
#[test]
fn a_read_only_array_read_at_several_constants_gets_the_range_holding_them() {
    let s = spec(
        &["s"],
        vec![
            array("offsets", 1, false),
            array("x", 1, false),
            array("y", 1, true),
        ],
        vec![
            access(0, false, vec![aff(&[1], 0)]),
            access(0, false, vec![aff(&[1], 1)]),
            access(1, false, vec![Subscript::Full]),
            access(2, true, vec![aff(&[2], 0)]),
            access(2, true, vec![aff(&[2], 1)]),
        ],
        false,
    );
    let an = analyze(&s);
    let one_d = an
        .candidates
        .iter()
        .find(|c| c.strategy == Strategy::OneD { dim: 0 })
        .expect("a 1D candidate over s");
    let shapes: [&[usize]; 3] = [&[5], &[9], &[8]];
    let sched = grid::schedule(&s, one_d, &[Partition::uniform(4, 2)], &shapes, 2);
    let read = |lo, hi| Window::Range {
        axis: 0,
        lo,
        hi,
        writable: false,
    };
    for (b, (lo, hi)) in [(0, 3), (2, 5)].into_iter().enumerate() {
        assert_eq!(sched.windows[b][0], read(lo, hi), "block {b}");
        assert_eq!(sched.windows[b][1], Window::All { writable: false });
        assert!(
            matches!(sched.windows[b][2], Window::Lattice { writable: true, .. }),
            "block {b}: {:?}",
            sched.windows[b][2]
        );
    }
    assert_eq!(sched.overlap(&shapes), None);
}
