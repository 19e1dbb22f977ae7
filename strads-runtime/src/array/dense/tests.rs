use super::*;

#[test]
fn shapes_too_large_are_errors_not_aborts() {
    let e = DistArray::<f32, 2>::try_zeros([usize::MAX, 2]).unwrap_err();
    assert_eq!(
        e,
        format!(
            "an array of shape [{}, 2] has too many elements",
            usize::MAX
        )
    );
    let e = DistArray::<f32, 1>::try_zeros([usize::MAX / 2]).unwrap_err();
    assert!(e.ends_with("elements) does not fit in memory"), "{e}");
    assert_eq!(
        DistArray::<f32, 2>::try_zeros([2, 3]).unwrap().as_slice(),
        &[0.0; 6]
    );
}

#[test]
fn from_fn_is_row_major() {
    let a = DistArray::from_fn([2, 3], |[i, j]| i * 10 + j);
    assert_eq!(a.as_slice(), &[0, 1, 2, 10, 11, 12]);
    assert_eq!(a[[1, 2]], 12);
    assert_eq!(a.row(1), &[10, 11, 12]);
    let idx: Vec<_> = a.iter().map(|(k, _)| k).collect();
    assert_eq!(idx, vec![[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
}

#[test]
fn random_is_reproducible_and_in_range() {
    let a = DistArray::<f32, 2>::random([10, 8], 7);
    let b = DistArray::<f32, 2>::random([10, 8], 7);
    let c = DistArray::<f32, 2>::random([10, 8], 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.as_slice().iter().all(|&x| (0.0..1.0).contains(&x)));
    // Row by row, each from its own stream: a row made alone is the same row.
    for r in [0, 3, 9] {
        let mut rng = crate::array::rng::IterRng::new(7, &[r as u64]);
        let row: Vec<f32> = (0..8).map(|_| f32::draw(rng.xoshiro())).collect();
        assert_eq!(a.row(r), &row[..]);
    }
    let one = DistArray::<f64, 1>::random([5], 7);
    let mut rng = crate::array::rng::IterRng::new(7, &[4]);
    assert_eq!(one[[4]], f64::draw(rng.xoshiro()));
    assert_eq!(DistArray::<f64, 2>::random([0, 3], 1).len(), 0);
    assert_eq!(DistArray::<f64, 2>::random([3, 0], 1).len(), 0);
}

#[test]
fn one_d_index() {
    let mut a = DistArray::<i32, 1>::zeros([4]);
    a[2] = 7;
    assert_eq!(a[[2]], 7);
    assert_eq!(a.get([4]), None);
}

#[test]
#[should_panic(expected = "index [0, 5] is outside the array's shape [2, 3]")]
fn index_out_of_bounds_panics_with_shape() {
    let a = DistArray::<f32, 2>::zeros([2, 3]);
    let _ = a[[0, 5]];
}
