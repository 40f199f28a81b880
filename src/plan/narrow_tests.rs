//! Unit tests of where copies pay (no device).

use super::{conversion_pays, fast_order, relayout_pays, relayout_without_workgroup, INT8_RELAYOUT, NT_RELAYOUT};
use crate::config::ComponentType::{Bf16, F16, F32, I32, I8, U32, U8};
use crate::tiling::Layout::{ColMajor as T, RowMajor as N};

#[test]
fn relayout_pays_where_it_measured_faster() {
    for f in [F16, Bf16] {
        assert_eq!(fast_order(f), (T, N));
        let pays = |l, shape| relayout_pays((f, F32), l, shape);
        assert_eq!(pays((N, N), (4096, 4096, 4096)), [true, false]);
        assert_eq!(pays((T, T), (8192, 8192, 8192)), [false, true]);
        // `nt` stays in place: its grouped leads beat two copies.
        for shape in [
            (8192, 8192, 8192),
            (4096, 4096, 4096),
            (4096, 11008, 4096),
            (11008, 4096, 4096),
        ] {
            assert_eq!(pays((N, T), shape), [false, false], "{shape:?}");
        }
        // ... but copied both where K is too short for its leads and the grid is large.
        let r = NT_RELAYOUT;
        for shape in [
            (4096, 4096, 256),
            (4096, 4096, 1024),
            (4096, 4096, 3000),
            (8192, 8192, 256),
            (11008, 4096, 512),
            (3072, 3072, 256),
            (4096, 3072, 1024),
            (4096, 4096, r.whole_from - 1),
            (4096, 4096, r.whole_from + r.whole + 1),
            (4096, 4096, r.k.end - 1),
        ] {
            assert_eq!(pays((N, T), shape), [true, true], "{shape:?}");
        }
        for shape in [
            (4096, 4096, r.k.start - 1),
            (4096, 4096, r.whole_from),
            (4096, 4096, r.whole_from + r.whole),
            (4096, 4096, r.k.end),
            (2048, 4096, 256),
            (4096, 2048, 512),
            (r.side - 1, 8192, 1024),
            (16, 4096, 256),
        ] {
            assert_eq!(pays((N, T), shape), [false, false], "{shape:?}");
        }
        // f16 results keep `nt` in place (their own lead); the other layouts copy alike.
        assert_eq!(relayout_pays((f, F16), (N, T), (4096, 4096, 256)), [false, false]);
        assert_eq!(relayout_pays((f, F16), (N, N), (4096, 4096, 4096)), [true, false]);
        assert_eq!(pays((N, N), (4096, 4096, 2048)), [true, false]);
        assert_eq!(pays((T, T), (4096, 11008, 2048)), [false, true]);
        assert_eq!(pays((N, N), (4096, 4096, 1024)), [true, false]);
        assert_eq!(pays((N, N), (4096, 4096, 512)), [false, false]);
        assert_eq!(pays((N, N), (2048, 4096, 4096)), [false, false]);
        assert_eq!(pays((T, N), (8192, 8192, 8192)), [false, false]);
        for shape in [(2048, 2048, 2048), (4096, 4096, 256), (16, 4096, 4096)] {
            assert_eq!(pays((N, N), shape), [false, false], "{shape:?}");
            assert_eq!(pays((T, T), shape), [false, false], "{shape:?}");
        }
    }
}

#[test]
fn int8_operands_are_copied_toward_k_contiguous_each_where_it_measured_faster() {
    let r = INT8_RELAYOUT;
    for i in [I8, U8] {
        assert_eq!(fast_order(i), (N, T));
        let sums = if i == I8 { I32 } else { U32 };
        let pays = |l, shape| relayout_pays((i, sums), l, shape);
        assert_eq!(pays((N, T), (8192, 8192, 8192)), [false, false]);
        assert_eq!(pays((N, N), (4096, 4096, 4096)), [false, true]);
        assert_eq!(pays((T, T), (4096, 4096, 4096)), [true, false]);
        assert_eq!(pays((T, N), (4096, 4096, 4096)), [true, true]);
        assert_eq!(pays((N, N), (1024, 4096, 4096)), [false, true]);
        assert_eq!(pays((N, N), (512, 4096, 4096)), [false, false]);
        assert_eq!(pays((T, T), (4096, 512, 4096)), [true, false]);
        assert_eq!(pays((T, T), (4096, 256, 4096)), [false, false]);
        assert_eq!(pays((T, T), (4096, 4096, 4000)), [true, false]);
        assert_eq!(pays((T, N), (512, 512, 4096)), [true, false]);
        // A's copy costs against N, B's against M; K is bounded where it was measured.
        assert_eq!(pays((T, N), (r.b_from, r.a_from - 1, r.k)), [false, true]);
        assert_eq!(pays((T, N), (r.b_from - 1, r.a_from, r.k)), [true, false]);
        assert_eq!(pays((T, N), (8192, 8192, r.k - 1)), [false, false]);
        assert_eq!(pays((T, N), (16, 16, 8192)), [false, false]);
        // Without the workgroup-scope kernel only A's copy stays.
        assert_eq!(relayout_without_workgroup(i, [true, true]), [true, false]);
        assert_eq!(relayout_without_workgroup(i, [false, true]), [false, false]);
    }
    for f in [F16, Bf16] {
        assert_eq!(relayout_without_workgroup(f, [true, true]), [false, false]);
        assert_eq!(relayout_without_workgroup(f, [true, false]), [false, false]);
    }
}

#[test]
fn conversion_pays_where_it_measured_faster() {
    for (m, n) in [(1024, 1024), (4096, 4096), (512, 4096), (4096, 512), (8192, 700)] {
        assert!(conversion_pays(m, n), "{m}x{n}");
    }
    for (m, n) in [(768, 768), (512, 512), (128, 4096), (16, 4096), (1, usize::MAX >> 33)] {
        assert!(!conversion_pays(m, n), "{m}x{n}");
    }
}
