//! SGD-MF on MovieLens 100k (`ua.base` / `ua.test`), when `../shared/data` exists: the
//! 2-thread run reaches the accuracy of the serial loop, and equals the serial replay of its
//! recorded order. On machines without the data the tests are ignored (`build.rs` sets
//! `strads_shared_data` when it is there), so they show as skipped, not as passed.

use std::path::PathBuf;

use crate::common::{model, rmse, sgd_epoch};
use strads::testing::bits;
use strads::testing::{record, replay, serial};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/movielens-100k")
}

#[test]
#[cfg_attr(
    not(strads_shared_data),
    ignore = "needs ../shared/data/movielens-100k (not found when this test was built)"
)]
fn two_threads_match_serial_accuracy_on_ml100k() {
    let dir = data_dir();
    let (train, test) =
        strads::load::ratings_pair(dir.join("ua.base"), dir.join("ua.test")).unwrap();
    let [users, items] = train.shape();
    let run = |parallel: bool| {
        let (mut w, mut h) = model(users, items, 32);
        for _ in 0..20 {
            if parallel {
                strads::with_threads(2, || sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05));
            } else {
                serial(|| sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05));
            }
        }
        rmse(&test, &w, &h)
    };
    let (par, ser) = (run(true), run(false));
    eprintln!("test RMSE after 20 epochs: 2 threads {par:.6}, serial {ser:.6}");
    assert!(par <= 0.96, "2-thread test RMSE {par} above 0.96");
    assert!(
        (par - ser).abs() / ser <= 0.01,
        "2 threads {par} vs serial {ser}: more than 1% apart"
    );
}

#[test]
#[cfg_attr(
    not(strads_shared_data),
    ignore = "needs ../shared/data/movielens-100k (not found when this test was built)"
)]
fn ml100k_epoch_equals_replay_of_its_order() {
    let dir = data_dir();
    let train = strads::load::ratings(dir.join("u.data")).unwrap();
    let [users, items] = train.shape();
    for threads in [2, 3] {
        let (mut w, mut h) = model(users, items, 32);
        let ((), trace) = strads::with_threads(threads, || {
            record(|| {
                sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05);
                sgd_epoch(&train, &mut w, &mut h, 0.01, 0.05);
            })
        });
        let (mut w2, mut h2) = model(users, items, 32);
        replay(&trace, || {
            sgd_epoch(&train, &mut w2, &mut h2, 0.01, 0.05);
            sgd_epoch(&train, &mut w2, &mut h2, 0.01, 0.05);
        });
        assert_eq!(bits(&w), bits(&w2));
        assert_eq!(bits(&h), bits(&h2));
        assert_eq!(
            trace.runs[0].plan,
            format!(
                "2d space=i time=u workers={threads} blocks={threads}x{} local=h rotated=w",
                2 * threads
            )
        );
    }
}
