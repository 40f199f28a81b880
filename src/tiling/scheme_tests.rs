//! Unit tests of [`super::TileScheme`]: construction, rejections, bounds, deserialisation.

use super::bounds::*;
use super::*;
use crate::config::ComponentType::*;
use crate::error::Error;
use crate::tiling::candidate_schemes;
use crate::tiling::test_support::{cfg, h200_limits};

#[test]
fn h200_large_scheme() {
    let c = cfg(16, 16, 16, F16, F32);
    let s = TileScheme::new(&c, &h200_limits(), 32, (2, 2), (4, 4), 32).unwrap();
    let g = s.geometry(&c);
    assert_eq!((g.bm, g.bn, g.bk, g.threads), (128, 128, 32, 128));
    assert!(g.shared_bytes <= 49152, "{}", g.shared_bytes);
    assert_eq!(candidate_schemes(&c, &h200_limits(), 32, false)[0], s);
}

#[test]
fn rejections_say_why() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
    assert!(e(TileScheme::new(&c, &l, 32, (2, 4), (4, 2), 24)).contains("multiple of the config's k"));
    assert!(e(TileScheme::new(&c, &l, 16, (2, 4), (4, 2), 32)).contains("outside the device's range"));
    assert!(e(TileScheme::new(&c, &l, 32, (4, 4), (4, 4), 64)).contains("shared memory"));
    assert!(e(TileScheme::new(&c, &l, 32, (8, 8), (1, 1), 16)).contains("invocations"));
    assert!(e(TileScheme::new(&c, &l, 32, (4, 4), (1, 1), 16)).contains("does not divide"));
    let i8c = cfg(16, 16, 32, I8, I8);
    assert!(e(TileScheme::new(&i8c, &l, 32, (2, 2), (2, 2), 64)).contains("16 or 32 bits"));
}

/// The schemes a new user tried (issue 14): each panicked, allocated gigabytes or returned a
/// wrong result; each is now a typed error, with or without device limits to check against.
#[test]
fn out_of_range_schemes_are_typed_errors() {
    let c = cfg(16, 16, 16, F16, F32);
    for l in [h200_limits(), DeviceLimits::default()] {
        let refused = |r: Result<TileScheme>| matches!(r, Err(Error::InvalidTileScheme(_)));
        assert!(refused(TileScheme::new(&c, &l, 32, (8192, 16384), (1, 1), 16)));
        assert!(refused(TileScheme::new(&c, &l, 32, (1, 1), (1 << 30, 1 << 30), 16)));
        assert!(refused(TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 1 << 31)));
        assert!(refused(TileScheme::new(&c, &l, 1 << 31, (1, 2), (2, 2), 32)));
        assert!(refused(TileScheme::new(&c, &l, 32, (1, 1), (257, 1), 16)));
        let ok = TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 32).unwrap();
        assert!(refused(ok.with_raster_group(MAX_RASTER_GROUP + 1)));
        assert!(refused(ok.with_stages(3, &c, &l)));
        assert_eq!(ok.with_raster_group(4).unwrap().raster_group(), 4);
    }
    // A config no device lists cannot smuggle an overflow through either.
    let huge = cfg(1 << 20, 16, 16, F16, F32);
    assert!(TileScheme::new(&huge, &DeviceLimits::default(), 32, (1, 2), (2, 2), 32).is_err());
    let ok = TileScheme::new(&c, &h200_limits(), 32, (1, 2), (2, 2), 32).unwrap();
    assert!(ok.check(&huge, &DeviceLimits::default()).is_err());
}

/// Fields read from a file (the autotune cache) go through the same bounds: a pad of 2^31
/// bytes wrapped the shared-memory size and ran a kernel with wrong results before.
#[test]
fn deserialised_schemes_are_checked() {
    let json = |pad: u64, raster: u64| {
        format!(
            r#"{{"subgroup_size":32,"sg_m":1,"sg_n":2,"fr_m":2,"fr_n":2,"k_step":32,"pad_bytes":{pad},"stages":1,"raster_group":{raster}}}"#
        )
    };
    let s: TileScheme = serde_json::from_str(&json(16, 0)).unwrap();
    assert_eq!((s.sg_n(), s.pad_bytes(), s.scope()), (2, 16, KernelScope::Subgroup));
    assert_eq!(
        serde_json::from_str::<TileScheme>(&serde_json::to_string(&s).unwrap()).unwrap(),
        s
    );
    for (pad, raster, what) in [(1 << 31, 0, "pad_bytes"), (8, 0, "pad_bytes"), (16, 1 << 20, "raster")] {
        let e = serde_json::from_str::<TileScheme>(&json(pad, raster))
            .unwrap_err()
            .to_string();
        assert!(e.contains(what), "{e}");
    }
}

/// Load lookahead: the default issues every load first (and keeps the old names); other values
/// are named, round-trip through files, and are refused where they mean nothing.
#[test]
fn workgroup_lookahead_is_named_checked_and_stored() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let s = TileScheme::workgroup_for_limits(&c, &l, 32, (1, 8), (8, 2), (64, 8)).unwrap();
    assert_eq!((s.stages(), s.lookahead()), (8, 7));
    assert_eq!(s.name(), "wg_t256_fr8x16_k64_u8");
    let a1 = s.with_lookahead(1).unwrap();
    assert_eq!(a1.name(), "wg_t256_fr8x16_k64_u8_a1");
    let json = serde_json::to_string(&a1).unwrap();
    assert_eq!(serde_json::from_str::<TileScheme>(&json).unwrap(), a1);
    // A file from before the field existed: every load first.
    let old = json.replace(",\"lookahead\":1", "");
    assert_ne!(old, json);
    assert_eq!(serde_json::from_str::<TileScheme>(&old).unwrap(), s);
    let refused = |r: Result<TileScheme>| matches!(r, Err(Error::InvalidTileScheme(_)));
    assert!(refused(s.with_lookahead(8)));
    let e = serde_json::from_str::<TileScheme>(&json.replace("\"lookahead\":1", "\"lookahead\":9")).unwrap_err();
    assert!(e.to_string().contains("lookahead"), "{e}");
    let sg = TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 32).unwrap();
    assert_eq!(sg.lookahead(), 0);
    assert!(refused(sg.with_lookahead(1)));
    // Changing the steps per iteration resets the lookahead to its default.
    assert_eq!(a1.with_stages(4, &c, &l).unwrap().lookahead(), 3);
}

/// N parts: named, stored, and refused where the tile does not split or the scope has none.
#[test]
fn workgroup_n_parts_are_named_checked_and_stored() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let s = TileScheme::workgroup_for_limits(&c, &l, 32, (1, 8), (8, 2), (32, 4)).unwrap();
    assert_eq!(s.n_parts(), 1);
    let p2 = s.with_n_parts(2, &c, &l).unwrap();
    assert_eq!(p2.name(), "wg_t256_fr8x16_k32_u4_p2");
    let json = serde_json::to_string(&p2).unwrap();
    assert_eq!(serde_json::from_str::<TileScheme>(&json).unwrap(), p2);
    assert_eq!(
        serde_json::from_str::<TileScheme>(&json.replace(",\"n_parts\":2", "")).unwrap(),
        s
    );
    let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
    assert!(e(s.with_n_parts(3, &c, &l)).contains("1, 2 or 4"));
    // A 16-column tile cannot split into two parts of whole 16-column fragments.
    let narrow = TileScheme::workgroup_for_limits(&c, &l, 32, (1, 1), (2, 1), (32, 1)).unwrap();
    assert!(e(narrow.with_n_parts(2, &c, &l)).contains("does not split"));
    let sg = TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 32).unwrap();
    assert!(e(sg.with_n_parts(2, &c, &l)).contains("no N parts"));
}

/// Tiles computed transposed: named, stored (older files read as not transposed), checked
/// against the device's workgroup-scope shapes as the accumulator they make, and refused with N
/// parts or at subgroup scope.
#[test]
fn workgroup_c_transposed_is_named_checked_and_stored() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let s = TileScheme::workgroup_for_limits(&c, &l, 32, (8, 1), (2, 8), (64, 8))
        .and_then(|s| s.with_lookahead(0))
        .unwrap();
    assert!(!s.c_transposed());
    assert_eq!(s.accumulator_shape(&c), (256, 128));
    let t = s.with_c_transposed(true, &c, &l).unwrap();
    assert_eq!(t.name(), "wg_t256_fr16x8_k64_u8_a0_ct");
    assert_eq!(t.accumulator_shape(&c), (128, 256));
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<TileScheme>(&json).unwrap(), t);
    assert_eq!(
        serde_json::from_str::<TileScheme>(&json.replace(",\"c_transposed\":true", "")).unwrap(),
        s
    );
    let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
    let halves = TileScheme::workgroup_for_limits(&c, &l, 32, (1, 8), (8, 2), (32, 4))
        .and_then(|h| h.with_n_parts(2, &c, &l))
        .unwrap();
    assert!(e(halves.with_c_transposed(true, &c, &l)).contains("not N parts"));
    let sg = TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 32).unwrap();
    assert!(e(sg.with_c_transposed(true, &c, &l)).contains("not transposed"));
    // The device's list is checked against the transposed accumulator: 128x256 is offered with
    // 256 invocations on the H200 model.
    let info = crate::tiling::test_support::h200_with_cm2();
    assert!(t.check_device(&c, &info).is_ok());
}

/// Deeper loops and the load order: sixteen or 32 steps per iteration at workgroup scope, each
/// step's right operand loaded first, named (`_u16`, `_rf`), stored (older files read as left
/// first), and refused past 32 steps or at subgroup scope.
#[test]
fn workgroup_deep_loops_and_right_first_are_named_checked_and_stored() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let deep = |stages| TileScheme::workgroup_for_limits(&c, &l, 32, (8, 1), (2, 8), (64, stages));
    let s = deep(16)
        .and_then(|s| s.with_lookahead(0))
        .and_then(|s| s.with_c_transposed(true, &c, &l))
        .unwrap();
    assert!(deep(32).is_ok());
    assert!(deep(33).unwrap_err().to_string().contains("stages must be 1 to 32"));
    assert!(!s.right_first());
    let r = s.with_right_first(true).unwrap();
    assert!(r.right_first());
    assert_eq!(r.name(), "wg_t256_fr16x8_k64_u16_a0_rf_ct");
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<TileScheme>(&json).unwrap(), r);
    assert_eq!(
        serde_json::from_str::<TileScheme>(&json.replace(",\"right_first\":true", "")).unwrap(),
        s
    );
    let sg = TileScheme::new(&c, &l, 32, (1, 2), (2, 2), 32).unwrap();
    assert!(sg
        .with_right_first(true)
        .unwrap_err()
        .to_string()
        .contains("no load order"));
}
