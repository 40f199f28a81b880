//! The default scheme's choice on the H200's facts (no device).

use super::SchemeLists;
use crate::config::ComponentType::{F16, F32};
use crate::tiling::test_support::{cfg, h200_with_cm2, push_int8_entry};
use crate::tiling::Layout::{ColMajor as T, RowMajor as N};

/// The scheme chosen for a single f16 -> f32 GEMM of `shape` with A and B stored `layouts`.
fn chosen(layouts: (crate::tiling::Layout, crate::tiling::Layout), shape: (usize, usize, usize)) -> String {
    let c = cfg(16, 16, 16, F16, F32);
    let lists = SchemeLists::new(&c, &h200_with_cm2(), 32, false);
    lists.choose(&c, shape, layouts, (1, false), false).unwrap().name()
}

#[test]
fn k_contiguous_leads_walk_large_grids_in_groups() {
    // Over 3072^2 of C the `nt` lead walks its grid in groups of tile rows; up to it, in rows.
    for shape in [
        (4096, 4096, 4096),
        (4096, 11008, 4096),
        (8192, 8192, 8192),
        (4096, 3072, 2048),
    ] {
        assert_eq!(chosen((N, T), shape), "wg_t256_fr16x8_k64_u16_a0_g8_rf_ct", "{shape:?}");
    }
    for shape in [
        (2048, 2048, 2048),
        (2048, 2048, 8192),
        (3072, 3072, 3072),
        (4096, 2048, 4096),
    ] {
        assert_eq!(chosen((N, T), shape), "wg_t256_fr16x8_k64_u16_a0_rf_ct", "{shape:?}");
    }
    // Eight steps where K is no whole number of sixteen-step iterations, grouped alike.
    assert_eq!(chosen((N, T), (4096, 4096, 4608)), "wg_t256_fr16x8_k64_u8_a0_g8_rf_ct");
    assert_eq!(chosen((N, T), (2048, 2048, 4608)), "wg_t256_fr16x8_k64_u8_a0_rf_ct");
}

#[test]
fn int8_k_contiguous_lead_keeps_its_rows() {
    use crate::config::ComponentType::{I32, I8};
    let i8c = cfg(16, 16, 32, I8, I32);
    let mut info = h200_with_cm2();
    push_int8_entry(&mut info, (I8, I32), 256);
    let lists = SchemeLists::new(&i8c, &info, 32, false);
    for shape in [(4096, 4096, 4096), (8192, 8192, 8192)] {
        let name = lists.choose(&i8c, shape, (N, T), (1, false), false).unwrap().name();
        assert_eq!(name, "wg_t256_fr16x8_k128_u16_a0_rf_ct", "{shape:?}");
    }
}

#[test]
fn other_layouts_keep_their_leads() {
    // `tt` takes the `nt` leads at every size, as `nt` does; `nn` in place up to 2048^2
    // (grouped), up to 4096^2 the 128x256 tile in place, larger grids the deep 128x128 lead
    // (after its copy, which the router adds), as `tn` does.
    assert_eq!(chosen((N, N), (2048, 2048, 2048)), "wg_t256_fr16x8_k64_u16_a0_g8_rf_ct");
    assert_eq!(chosen((T, T), (2048, 2048, 2048)), "wg_t256_fr16x8_k64_u16_a0_rf_ct");
    assert_eq!(chosen((T, N), (2048, 2048, 2048)), "wg_t128_fr8x8_k32_u16_a0_g8_rf_ct");
    let nn_in_place = "wg_t256_fr8x16_k64_u16_a0_g8_rf_ct";
    for shape in [
        (4096, 4096, 4096),
        (4096, 4096, 2048),
        (2048, 8192, 8192),
        (4000, 4000, 12000),
    ] {
        assert_eq!(chosen((N, N), shape), nn_in_place, "{shape:?}");
    }
    for shape in [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096)] {
        assert_eq!(chosen((T, T), shape), "wg_t256_fr16x8_k64_u16_a0_g8_rf_ct", "{shape:?}");
    }
    assert_eq!(chosen((T, N), (4096, 4096, 4096)), "wg_t128_fr8x8_k32_u16_a0_g8_rf_ct");
    for shape in [(8192, 8192, 8192), (4096, 4097, 4096), (4096, 4096, 3000)] {
        assert_ne!(chosen((N, N), shape), nn_in_place, "{shape:?}");
    }
    for shape in [(8192, 8192, 8192), (16384, 8192, 4096), (8192, 8192, 2048)] {
        assert_eq!(chosen((N, N), shape), "wg_t256_fr8x16_k64_u16_a0_g8", "{shape:?}");
    }
    // Short K: neither lead suits.
    assert_eq!(chosen((N, T), (4096, 4096, 256)), "wg_t128_fr8x8_k32_u8_a0_g8_ct");
}

#[test]
fn nn_keeps_a_in_place_where_its_lead_suits() {
    let c = cfg(16, 16, 16, F16, F32);
    let lists = SchemeLists::new(&c, &h200_with_cm2(), 32, false);
    let keeps = |layouts, shape| lists.keeps_in_place(&c, shape, layouts);
    assert!(keeps((N, N), (4096, 4096, 4096)) && keeps((N, N), (4096, 4096, 2048)));
    assert!(!keeps((N, N), (4096, 11008, 4096)) && !keeps((N, N), (8192, 4096, 4096)));
    // From 8192^2 of C, on the 128x256 tile not computed transposed.
    assert!(keeps((N, N), (8192, 8192, 8192)) && keeps((N, N), (16384, 8192, 2048)));
    assert!(!keeps((N, N), (8192, 8192, 3000)));
    assert!(!keeps((N, N), (4096, 4096, 3000)) && !keeps((N, N), (2048, 2048, 2048)));
    assert!(!keeps((N, T), (4096, 4096, 4096)) && !keeps((T, N), (4096, 4096, 4096)));
    // `tt` where the `nt` leads suit; where K is too short for them, B is copied.
    assert!(keeps((T, T), (4096, 4096, 4096)) && keeps((T, T), (8192, 8192, 8192)));
    assert!(!keeps((T, T), (4096, 4096, 256)) && !keeps((T, T), (4096, 4096, 3000)));
    // Not for f16 results, whose leads differ.
    let h = cfg(16, 16, 16, F16, F16);
    let lists = SchemeLists::new(&h, &h200_with_cm2(), 32, false);
    assert!(!lists.keeps_in_place(&h, (4096, 4096, 4096), (N, N)));
}

#[test]
fn mid_grid_schemes_are_found_once_per_config() {
    let info = h200_with_cm2();
    let names = |c, cpu| -> Vec<String> {
        let lists = SchemeLists::new(&c, &info, 32, cpu);
        lists.mid_grid.iter().map(|s| s.name()).collect()
    };
    let c = cfg(16, 16, 16, F16, F32);
    assert_eq!(
        names(c, false),
        crate::tiling::MID_GRID_SCHEMES,
        "all four, in the table's order"
    );
    assert!(names(c, true).is_empty(), "a CPU driver");
    // An f16 C takes the same table (h200-48-6).
    let f16_c = cfg(16, 16, 16, F16, F16);
    assert_eq!(names(f16_c, false), crate::tiling::MID_GRID_SCHEMES, "an f16 C");
}

#[test]
fn the_default_order_leaves_the_leads_out() {
    // A grouped MoE layer's rows as one GEMM (3996 x 14336 x 4096): `nt` and `tt` take the
    // K-contiguous lead's 256-row tile, the default order the 128x128 one.
    let c = cfg(16, 16, 16, F16, F32);
    let lists = SchemeLists::new(&c, &h200_with_cm2(), 32, false);
    let shape = (3996, 14336, 4096);
    for layouts in [(N, T), (T, T)] {
        let lead = lists.choose(&c, shape, layouts, (1, false), false).unwrap();
        assert_eq!(lead.geometry(&c).bm, 256, "{layouts:?}: {}", lead.name());
    }
    let default = lists.choose_default(&c, (shape.0, shape.1), 1, false).unwrap();
    assert_eq!(default.name(), "wg_t128_fr8x8_k32_u8_a0_g8_ct");
    assert_eq!(default.geometry(&c).bm, 128);
}
