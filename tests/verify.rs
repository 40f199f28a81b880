//! The checking helpers themselves (support/verify, included by the tests, benches and CLI):
//! the reference, the comparison and the random inputs, on hand-computed cases.

#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use verify::{compare, random_vec, reference, Rng};
use vk_sgmat::MatRef;

#[test]
fn reference_matches_hand_computation() {
    let a = [1.0f32, 2.0, 3.0, 4.0]; // [[1,2],[3,4]]
    let b = [5.0f32, 6.0, 7.0, 8.0]; // col-major [[5,7],[6,8]]
    let am = MatRef::new(&a, 2, 2);
    let bm = MatRef::col_major(&b, 2, 2);
    let c = [1.0f32, 1.0, 1.0, 1.0];
    let (v, m) = reference(&am, &bm, Some((&c[..], 2)), 2.0, -1.0, &[0, 1]);
    assert_eq!(
        v,
        vec![2.0 * 17.0 - 1.0, 2.0 * 23.0 - 1.0, 2.0 * 39.0 - 1.0, 2.0 * 53.0 - 1.0]
    );
    assert_eq!(m[0], 2.0 * 17.0 + 1.0);
}

#[test]
fn compare_catches_nan_and_integer_mismatch() {
    let exp = [1.0, 2.0];
    let mag = [1.0, 2.0];
    let good = compare(&[1.0f32, 2.0], 2, 2, &[0], &exp, &mag, 8);
    assert!(good.passed);
    let nan = compare(&[1.0f32, f32::NAN], 2, 2, &[0], &exp, &mag, 8);
    assert!(!nan.passed && nan.first_bad.unwrap().1 == 1);
    let ints = compare(&[1i32, 3], 2, 2, &[0], &exp, &mag, 8);
    assert_eq!(ints.mismatches, 1);
    let off = compare(&[1.0f32, 2.1], 2, 2, &[0], &exp, &mag, 8);
    assert!(!off.passed, "{off:?}");
}

#[test]
fn rng_spans_integer_extremes() {
    let mut r = Rng::new(1);
    let v: Vec<i8> = random_vec(&mut r, 20000);
    assert!(v.contains(&-128) && v.contains(&127));
}
