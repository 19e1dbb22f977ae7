//! Builders for specs in tests.

use std::borrow::Cow;

use crate::ir::{Access, AccessKind, Affine, ArraySpec, LoopSpec, Name, SpaceKind, Subscript};

/// An affine subscript with owned coefficients.
pub(crate) fn sub(coeffs: &[i64], constant: i64) -> Subscript {
    Subscript::Affine(Affine {
        coeffs: Cow::Owned(coeffs.to_vec()),
        constant,
    })
}

/// An access to `array`.
pub(crate) fn access(array: usize, write: bool, subscripts: Vec<Subscript>) -> Access {
    Access {
        array,
        kind: if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        },
        subscripts: Cow::Owned(subscripts),
        line: 0,
    }
}

/// A range loop over `n_dims` dims named i, j, k, .. with arrays `a`, `b`, .. of the given
/// ranks.
pub(crate) fn spec(n_dims: usize, ranks: &[usize], accesses: Vec<Access>) -> LoopSpec {
    const DIMS: [&str; 6] = ["i", "j", "k", "l", "m", "n"];
    const ARRAYS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
    LoopSpec {
        name: Cow::Borrowed("test_loop"),
        dims: (0..n_dims)
            .map(|d| Name::Borrowed(DIMS[d]))
            .collect::<Vec<_>>()
            .into(),
        space: SpaceKind::Range,
        arrays: ranks
            .iter()
            .enumerate()
            .map(|(k, &rank)| ArraySpec {
                name: Cow::Borrowed(ARRAYS[k]),
                rank,
                mutable: true,
                additive: false,
                steers: false,
            })
            .collect::<Vec<_>>()
            .into(),
        accesses: accesses.into(),
        ordered: false,
        buffers: Default::default(),
        max_delay: None,
        reductions: Default::default(),
    }
}
