//! Unit tests of [`super::TileScheme`]: construction, rejections, bounds, deserialisation.

use super::*;
use crate::config::ComponentType::*;
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
