//! ndarray interop (feature `ndarray`; CI runs `cargo test --features ndarray --test arrays`):
//! standard, Fortran, sliced and strided views give the same exact results as the plain slices.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use common::{assert_no_validation_messages, context};
use ndarray::{s, Array2, ShapeBuilder};
use vk_sgmat::Matmul;
use vk_sgmat::{GemmOptions, Layout};

fn ints(rows: usize, cols: usize, seed: usize) -> Array2<i8> {
    Array2::from_shape_fn((rows, cols), |(r, c)| (((r * 7 + c * 3 + seed) % 9) as i8) - 4)
}

fn product(a: &Array2<i8>, b: &Array2<i8>) -> Array2<i32> {
    a.mapv(i32::from).dot(&b.mapv(i32::from))
}

#[test]
fn every_layout_of_view_gives_exact_results() {
    let ctx = context();
    let (m, k, n) = (37, 29, 23);
    let a = ints(m, k, 1);
    let b = ints(k, n, 2);
    let want = product(&a, &b);
    // Fortran-layout copies, a sliced view (gaps between rows), a view with inner stride 2.
    let a_f = {
        let mut f = Array2::zeros((m, k).f());
        f.assign(&a);
        f
    };
    let wide = ints(k, 2 * n, 3);
    let mut b_wide = wide.clone();
    b_wide.slice_mut(s![.., ..;2]).assign(&b);
    let big = ints(m + 5, k + 9, 4);
    let mut a_big = big.clone();
    a_big.slice_mut(s![2..2 + m, 3..3 + k]).assign(&a);
    let a_views = [a.view(), a_f.view(), a_big.slice(s![2..2 + m, 3..3 + k])];
    let b_views = [b.view(), b_wide.slice(s![.., ..;2])];
    for (i, av) in a_views.iter().enumerate() {
        for (j, bv) in b_views.iter().enumerate() {
            let mut c = Array2::<i32>::from_elem((m, n), 7);
            ctx.run(
                &Matmul::with_options(&GemmOptions::default()),
                av.view(),
                bv.view(),
                c.view_mut(),
            )
            .unwrap();
            assert_eq!(c, want, "A view {i}, B view {j}");
            // A Fortran-layout C is written in place (column-major C), a sliced C through a
            // row-major copy; beta reads the old values either way.
            let mut c_f = Array2::<i32>::from_elem((m, n).f(), 1);
            let options = GemmOptions {
                beta: 2.0,
                ..Default::default()
            };
            ctx.run(&Matmul::with_options(&options), av.view(), bv.view(), c_f.view_mut())
                .unwrap();
            assert_eq!(c_f, &want + 2, "Fortran C, A view {i}, B view {j}");
            let mut c_big = Array2::<i32>::zeros((m + 3, n + 4));
            ctx.run(
                &Matmul::with_options(&GemmOptions::default()),
                av.view(),
                bv.view(),
                c_big.slice_mut(s![1..1 + m, 2..2 + n]),
            )
            .unwrap();
            assert_eq!(c_big.slice(s![1..1 + m, 2..2 + n]), want, "sliced C");
            assert_eq!(c_big.row(0).sum(), 0, "outside the slice untouched");
        }
    }
    // Upload keeps the storage order; download returns the same array.
    let dm = ctx.upload_array(a_f.view()).unwrap();
    assert_eq!(dm.layout(), Layout::ColMajor);
    assert_eq!(ctx.download_array(&dm).unwrap(), a);
    let dm = ctx.upload_array(a_big.slice(s![2..2 + m, 3..3 + k])).unwrap();
    assert_eq!(dm.layout(), Layout::RowMajor);
    assert_eq!(ctx.download_array(&dm).unwrap(), a);
    assert_no_validation_messages(ctx);
}
