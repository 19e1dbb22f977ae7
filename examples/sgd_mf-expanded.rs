//! What `#[strads::parallel_for]` turns `sgd_epoch` of docs/design.md into, with comments.
//!
//! This file is the macro's real output (the `sgd_mf` snapshot in
//! `strads-macros/src/snapshots/`), pretty-printed and annotated by hand; it compiles and
//! runs like the annotated version. The source it comes from:
//!
//! ```ignore
//! #[strads::parallel_for]
//! fn sgd_epoch(ratings: &SparseArray<f32, 2>, w: &mut DistArray<f32, 2>, h: &mut DistArray<f32, 2>, lr: f32) {
//!     for ([u, i], &r) in ratings {
//!         let (wu, hi) = (w.row_mut(u), h.row_mut(i));
//!         let err = r - dot(wu, hi);
//!         for k in 0..wu.len() {
//!             let wk = wu[k];
//!             wu[k] += lr * (err * hi[k] - 0.05 * wk);
//!             hi[k] += lr * (err * wk - 0.05 * hi[k]);
//!         }
//!     }
//! }
//! ```
//!
//! (The snapshot is made from tokens without source lines, so the report says `line 1`.)

// Generated code borrows generically (`&ratings` works for owned and borrowed arrays);
// clippy skips it inside macro output, but here it is plain source.
// The call's result is bound, then finished with (buffers, reductions) when a loop has
// them; this loop has none, so the binding is returned as it is.
#![allow(clippy::needless_borrow, clippy::borrow_deref_ref, clippy::let_and_return)]
// The probes' traits are both imported; which one a call uses depends on the struct (the
// other is unused by design), a lint macro output does not draw.
#![allow(unused_imports)]
// Kept exactly as prettyplease printed it: a test compares it with the snapshot.
#![cfg_attr(rustfmt, rustfmt_skip)]

use strads::prelude::*;

/// The `#[strads::parallel_for]` loop of [`sgd_epoch`].
///
/// ```text
/// iteration space: `ratings` (sparse, dims: u, i)
/// accesses:
///   w[u, *] write (line 1)
///   h[i, *] write (line 1)
/// dependence vectors over (u, i):
///   (0, +inf) from w[u, *] write and w[u, *] write
///   (+inf, 0) from h[i, *] write and h[i, *] write
/// strategy: 2d
/// candidates (the runtime picks the one that moves the fewest elements):
///   2D (space `u`, time `i`): `w` local along axis 0, `h` rotated along axis 0
///   2D (space `i`, time `u`): `w` rotated along axis 0, `h` local along axis 0
/// ```
#[derive(::strads::__private::serde::Serialize, ::strads::__private::serde::Deserialize)]
#[serde(crate = "::strads::__private::serde")]
struct SgdEpochLoop {
    lr: f32,
}
impl SgdEpochLoop {
    /// The loop as the analysis saw it.
    const SPEC: ::strads::__private::LoopSpec = {
        const DIMS: &[::strads::__private::Cow<'static, str>] = &[
            ::strads::__private::Cow::Borrowed("u"),
            ::strads::__private::Cow::Borrowed("i"),
        ];
        const ARRAYS: &[::strads::__private::ArraySpec] = &[
            ::strads::__private::ArraySpec::new("ratings", 2, false),
            ::strads::__private::ArraySpec::new("w", 2, true),
            ::strads::__private::ArraySpec::new("h", 2, true),
        ];
        const SUBSCRIPTS_0: &[::strads::__private::Subscript] = &[
            ::strads::__private::Subscript::affine(&[1, 0], 0),
            ::strads::__private::Subscript::Full,
        ];
        const SUBSCRIPTS_1: &[::strads::__private::Subscript] = &[
            ::strads::__private::Subscript::affine(&[0, 1], 0),
            ::strads::__private::Subscript::Full,
        ];
        const ACCESSES: &[::strads::__private::Access] = &[
            ::strads::__private::Access::new(
                1,
                ::strads::__private::AccessKind::Write,
                SUBSCRIPTS_0,
                1,
            ),
            ::strads::__private::Access::new(
                2,
                ::strads::__private::AccessKind::Write,
                SUBSCRIPTS_1,
                1,
            ),
        ];
        const BUFFERS: &[::strads::__private::BufferSpec] = &[];
        const REDUCTIONS: &[::strads::__private::ReductionSpec] = &[];
        ::strads::__private::LoopSpec {
            name: ::strads::__private::Cow::Borrowed("sgd_epoch"),
            dims: ::strads::__private::Cow::Borrowed(DIMS),
            space: ::strads::__private::SpaceKind::Array {
                array: 0usize,
                sparse: true,
            },
            arrays: ::strads::__private::Cow::Borrowed(ARRAYS),
            accesses: ::strads::__private::Cow::Borrowed(ACCESSES),
            ordered: false,
            buffers: ::strads::__private::Cow::Borrowed(BUFFERS),
            max_delay: ::core::option::Option::None,
            reductions: ::strads::__private::Cow::Borrowed(REDUCTIONS),
        }
    };
    /// One iteration of the loop body, generic over how arrays are reached.
    #[inline(always)]
    #[allow(unused_variables, clippy::all)]
    fn body<
        __W: ::strads::__private::ArrayMut<f32, 2>,
        __H: ::strads::__private::ArrayMut<f32, 2>,
    >(&self, ([u, i], &r): ([usize; 2], &f32), w: &mut __W, h: &mut __H) {
        #[allow(unused_imports)]
        use ::strads::__private::{
            ArrayMut as _, ArrayRef as _, CaptureByCopy as _, CaptureByRef as _,
        };
        let lr = self.lr;
        let (wu, hi) = (w.row_mut(u), h.row_mut(i));
        let err = r - dot(wu, hi);
        for k in 0..wu.len() {
            let wk = wu[k];
            wu[k] += lr * (err * hi[k] - 0.05 * wk);
            hi[k] += lr * (err * wk - 0.05 * hi[k]);
        }
    }
}
impl SgdEpochLoop {
    /// Runs this rank's part of the driver's call (a cluster worker).
    #[doc(hidden)]
    #[allow(unused_variables, unused_mut, unused_braces, clippy::all)]
    fn __strads_serve(
        __serve: &mut ::strads::__private::Serve<'_>,
    ) -> ::core::result::Result<(), ::std::string::String> {
        static __STRADS_LOOP: ::strads::__private::LoopState = ::strads::__private::LoopState::new(
            SgdEpochLoop::SPEC,
        );
        let __loop: SgdEpochLoop = {
            use ::strads::__private::{ProbeNone as _, ProbeSerde as _};
            (&::strads::__private::Probe::<SgdEpochLoop>(::core::option::Option::None))
                .decode(__serve.captured_bytes(), __serve.name())?
        };
        let mut __held_ratings = __serve.sparse::<f32, 2>(0)?;
        let mut __held_w = __serve.dense::<f32, 2>(1)?;
        let mut __held_h = __serve.dense::<f32, 2>(2)?;
        {
            let ratings = &__held_ratings;
            let w = &mut __held_w;
            let h = &mut __held_h;
            let __space: &::strads::__private::SparseArray<f32, 2> = &ratings;
            let __shapes: [&[usize]; 3] = [&ratings.shape(), &w.shape(), &h.shape()];
            let __call = ::strads::__private::Call::served(
                &__STRADS_LOOP,
                &__shapes,
                __serve.served(),
            );
            let _ = {
                let __w = ::strads::__private::SharedMut::new(&mut *w);
                let __h = ::strads::__private::SharedMut::new(&mut *h);
                __call
                    .cluster(
                        ::core::concat!(::core::module_path!(), "::", "SgdEpochLoop"),
                        || {
                            use ::strads::__private::{ProbeNone as _, ProbeSerde as _};
                            (&::strads::__private::Probe(
                                ::core::option::Option::Some(&__loop),
                            ))
                                .encode()
                        },
                        ::core::option::Option::None::<&()>,
                        &[
                            &*ratings as &dyn ::strads::__private::WireArray,
                            &__w as &dyn ::strads::__private::WireArray,
                            &__h as &dyn ::strads::__private::WireArray,
                        ],
                        ::core::option::Option::None,
                    )
                    .run(
                        __space,
                        |__blk| {
                            let mut w = __blk.view_mut(&__w, 1);
                            let mut h = __blk.view_mut(&__h, 2);
                            __blk.for_each(|__it| __loop.body(__it, &mut w, &mut h));
                        },
                    )
            };
        }
        __serve.put(0, __held_ratings)?;
        __serve.put(1, __held_w)?;
        __serve.put(2, __held_h)?;
        ::core::result::Result::Ok(())
    }
}
#[::strads::__private::linkme::distributed_slice(::strads::__private::LOOPS)]
#[linkme(crate = ::strads::__private::linkme)]
#[doc(hidden)]
static __STRADS_REMOTE_SGDEPOCHLOOP: ::strads::__private::RemoteLoop = ::strads::__private::RemoteLoop {
    name: ::core::concat!(::core::module_path!(), "::", "SgdEpochLoop"),
    spec: || SgdEpochLoop::SPEC,
    serve: SgdEpochLoop::__strads_serve,
};
fn sgd_epoch(
    ratings: &SparseArray<f32, 2>,
    w: &mut DistArray<f32, 2>,
    h: &mut DistArray<f32, 2>,
    lr: f32,
) {
    static __STRADS_LOOP: ::strads::__private::LoopState = ::strads::__private::LoopState::new(
        SgdEpochLoop::SPEC,
    );
    let __begun = ::strads::__private::resume::begin(&__STRADS_LOOP);
    let __serial = if __begun.skipped() {
        ::core::option::Option::None
    } else if ::strads::__private::serial_run(&__STRADS_LOOP) {
        ::core::option::Option::Some(::strads::__private::SerialRun::requested())
    } else {
        let __space: &::strads::__private::SparseArray<f32, 2> = &ratings;
        let __loop = SgdEpochLoop { lr };
        let __shapes: [&[usize]; 3] = [&ratings.shape(), &w.shape(), &h.shape()];
        let __call = ::strads::__private::Call::new(&__STRADS_LOOP, &__shapes);
        let __serial = ::strads::__private::Ran::serial({
            let __w = ::strads::__private::SharedMut::new(&mut *w);
            let __h = ::strads::__private::SharedMut::new(&mut *h);
            __call
                .cluster(
                    ::core::concat!(::core::module_path!(), "::", "SgdEpochLoop"),
                    || {
                        use ::strads::__private::{ProbeNone as _, ProbeSerde as _};
                        (&::strads::__private::Probe(
                            ::core::option::Option::Some(&__loop),
                        ))
                            .encode()
                    },
                    ::core::option::Option::None::<&()>,
                    &[
                        &*ratings as &dyn ::strads::__private::WireArray,
                        &__w as &dyn ::strads::__private::WireArray,
                        &__h as &dyn ::strads::__private::WireArray,
                    ],
                    ::core::option::Option::None,
                )
                .run(
                    __space,
                    |__blk| {
                        let mut w = __blk.view_mut(&__w, 1);
                        let mut h = __blk.view_mut(&__h, 2);
                        __blk.for_each(|__it| __loop.body(__it, &mut w, &mut h));
                    },
                )
        });
        __serial
    };
    if let ::core::option::Option::Some(__serial) = __serial {
        for ([u, i], &r) in ratings {
            let (wu, hi) = (w.row_mut(u), h.row_mut(i));
            let err = r - dot(wu, hi);
            for k in 0..wu.len() {
                let wk = wu[k];
                wu[k] += lr * (err * hi[k] - 0.05 * wk);
                hi[k] += lr * (err * wk - 0.05 * hi[k]);
            }
        }
        __serial.finish();
    }
    ::strads::__private::resume::end(
        &__STRADS_LOOP,
        __begun,
        &mut [
            ::strads::__private::resume::Held::Read(&*ratings),
            ::strads::__private::resume::Held::Written(&mut *w),
            ::strads::__private::resume::Held::Written(&mut *h),
        ],
        |__log| {
            let _ = &__log;
        },
    );
}

#[strads::main]
fn main() -> std::process::ExitCode {
    // A bad STRADS_* setting, reported like any error (exit status 2) before the loop
    // would meet it.
    if let Err(e) = strads::config::check() {
        eprintln!("error: {e}");
        return std::process::ExitCode::from(2);
    }
    let ratings = strads::generate::low_rank_ratings(&Default::default());
    let [users, items] = ratings.shape();
    let (mut w, mut h) = (DistArray::random([users, 8], 1), DistArray::random([items, 8], 2));
    for _ in 0..3 {
        sgd_epoch(&ratings, &mut w, &mut h, 0.01);
    }
    println!("{}", SgdEpochLoop::SPEC.name);
    std::process::ExitCode::SUCCESS
}
