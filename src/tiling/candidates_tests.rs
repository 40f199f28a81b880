//! Unit tests of the candidate lists and the default choice (no device).

use super::*;
use crate::config::ComponentType::*;
use crate::error::Result;
use crate::tiling::preferred::*;
use crate::tiling::test_support::{cfg, h200_limits, h200_with_cm2, lavapipe_limits, push_int8_entry};

#[test]
fn every_known_config_has_a_scheme() {
    for c in [
        cfg(8, 8, 8, F16, F16),
        cfg(8, 8, 8, F16, F32),
        cfg(8, 8, 8, U8, U32),
        cfg(8, 8, 8, I8, I32),
    ] {
        let v = candidate_schemes(&c, &lavapipe_limits(), 8, true);
        assert!(!v.is_empty(), "{c}");
        let g = v[0].geometry(&c);
        assert_eq!((g.bm, g.bn), (32, 32), "{c}");
    }
    for c in [
        cfg(16, 16, 16, F16, F32),
        cfg(16, 8, 16, F16, F16),
        cfg(16, 8, 8, F16, F32),
        cfg(16, 16, 32, I8, I32),
        cfg(16, 8, 32, U8, U32),
        cfg(16, 16, 16, Bf16, F32),
    ] {
        assert!(!candidate_schemes(&c, &h200_limits(), 32, false).is_empty(), "{c}");
    }
}

#[test]
fn tuning_candidates_are_valid_and_varied() {
    let c = cfg(16, 16, 16, F16, F32);
    let l = h200_limits();
    let v = tuning_candidates(&c, &l, 32, false);
    assert!(v.len() > 20, "{}", v.len());
    assert!(v.iter().all(|s| s.check(&c, &l).is_ok()));
    assert!(v.iter().any(|s| s.stages() == 2));
    assert_eq!(
        tuning_candidates(&c, &lavapipe_limits(), 8, true),
        candidate_schemes(&c, &lavapipe_limits(), 8, true)
    );
}

#[test]
fn default_scheme_fills_the_gpu_or_takes_the_small_tile() {
    let c = cfg(16, 16, 16, F16, F32);
    let info = h200_with_cm2();
    let sg = candidate_schemes(&c, &info.limits, 32, false);
    let mut all = preferred_workgroup_schemes(&c, &info, 32);
    all.extend(sg.iter().copied());
    let small = small_problem_scheme(&sg);
    let pick = |m, n| pick_scheme(&all, small, &c, (m, n), 1, false).unwrap().name();
    // The sizes measured on the H200 (docs/perf/JOURNAL.md, "Small problems").
    assert_eq!(pick(64, 64), "sg1x2_fr2x2_k32_s32");
    assert_eq!(pick(512, 512), "sg1x2_fr2x2_k32_s32");
    assert_eq!(pick(16, 4096), "sg1x2_fr2x2_k32_s32");
    assert_eq!(pick(1024, 1024), "wg_t128_fr4x4_k64_u2_ct");
    assert_eq!(pick(2048, 2048), "wg_t128_fr8x8_k32_u8_a0_g8_ct");
    assert_eq!(pick(4096, 11008), "wg_t128_fr8x8_k32_u8_a0_g8_ct");
    // Both operands K-contiguous: ggml's 128x256 accumulator (of C^T) where its grid fills
    // the GPU.
    let leads = preferred_k_contiguous_schemes(&c, &info, 32);
    let mut k_contiguous = leads[0].clone();
    k_contiguous.extend(all.iter().copied());
    let pick_nt = |m, n| pick_scheme(&k_contiguous, small, &c, (m, n), 1, false).unwrap().name();
    assert_eq!(pick_nt(4096, 4096), "wg_t256_fr16x8_k64_u16_a0_rf_ct");
    assert_eq!(pick_nt(2048, 2048), "wg_t256_fr16x8_k64_u16_a0_rf_ct");
    assert_eq!(pick_nt(1024, 1024), "wg_t128_fr4x4_k64_u2_ct");
    // ...where K is four or more of its iterations (1024 deep for sixteen steps, 512 for
    // eight), and whole ones or eight or more, and the problem covers the 256x128 tile.
    let (deep, lead) = (&leads[0], &leads[1]);
    assert!(k_suits(lead, &c, 2048) && k_suits(lead, &c, 4096));
    assert!(!k_suits(lead, &c, 256) && !k_suits(lead, &c, 1536) && !k_suits(lead, &c, 4000));
    assert!(k_suits(lead, &c, 5000) && k_suits(lead, &c, 11008) && !k_suits(lead, &c, 4095));
    assert!(lead_suits(lead, &c, (256, 128, 2048)) && !lead_suits(lead, &c, (128, 4096, 4096)));
    assert!(!lead_suits(&[], &c, (4096, 4096, 4096)));
    assert!(k_suits(deep, &c, 4096) && k_suits(deep, &c, 8200) && !k_suits(deep, &c, 2048) && !k_suits(deep, &c, 5000));
    // The deepest lead is also taken on a whole number of at least two iterations.
    assert!(k_whole(deep, &c, 2048, 2) && k_whole(deep, &c, 3072, 2));
    assert!(!k_whole(deep, &c, 1024, 2) && !k_whole(deep, &c, 2560, 2));
    // f16 results: the 256x256 tile leads only where K is long and M and N cover it.
    let h = cfg(16, 16, 16, F16, F16);
    let long = preferred_long_k_schemes(&h, &info, 32);
    assert!(lead_suits(&long, &h, (4096, 4096, 4096)) && lead_suits(&long, &h, (256, 256, 1024)));
    assert!(!lead_suits(&long, &h, (32768, 1024, 128)) && !lead_suits(&long, &h, (65536, 128, 2048)));
    assert!(preferred_long_k_schemes(&c, &info, 32).is_empty());
    // Without the extension: the largest subgroup-scope tile whose grid fills the GPU.
    let plain = crate::device::test_device(h200_limits(), None);
    assert!(preferred_workgroup_schemes(&c, &plain, 32).is_empty());
    let pick = |m, n| pick_scheme(&sg, small, &c, (m, n), 1, false).unwrap();
    assert_eq!(pick(4096, 4096).name(), "sg2x2_fr4x4_k32_s32");
    let g = pick(1024, 1024).geometry(&c);
    assert_eq!((g.bm, g.bn, g.threads), (64, 128, 256));
    // A tile is never more than twice the problem; one that is, is the last resort only.
    let tiny = cfg(16, 16, 16, F16, F32);
    let only_big = [sg[0]];
    assert_eq!(pick_scheme(&only_big, None, &tiny, (8, 8), 1, false), Some(sg[0]));
    // CPU drivers: the first candidate that fits, whatever its grid.
    let lp = candidate_schemes(&cfg(8, 8, 8, F16, F32), &lavapipe_limits(), 8, true);
    let lp_small = small_problem_scheme(&lp);
    let p = pick_scheme(&lp, lp_small, &cfg(8, 8, 8, F16, F32), (64, 64), 1, true).unwrap();
    assert_eq!(p, lp[0]);
}

#[test]
fn measured_workgroup_schemes_lead_on_nvidia_only() {
    let c = cfg(16, 16, 16, F16, F32);
    let mut info = h200_with_cm2();
    let names: Vec<String> = preferred_workgroup_schemes(&c, &info, 32)
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(names, ["wg_t128_fr8x8_k32_u8_a0_g8_ct", "wg_t128_fr4x4_k64_u2_ct"]);
    let names: Vec<Vec<String>> = preferred_k_contiguous_schemes(&c, &info, 32)
        .iter()
        .map(|lead| lead.iter().map(|s| s.name()).collect())
        .collect();
    assert_eq!(
        names,
        [["wg_t256_fr16x8_k64_u16_a0_rf_ct"], ["wg_t256_fr16x8_k64_u8_a0_rf_ct"]]
    );
    let names: Vec<String> = preferred_deep_schemes(&c, &info, 32).iter().map(|s| s.name()).collect();
    assert_eq!(names, ["wg_t128_fr8x8_k32_u16_a0_g8_rf_ct"]);
    assert!(preferred_deep_schemes(&cfg(16, 16, 16, F16, F16), &info, 32).is_empty());

    assert!(preferred_k_contiguous_schemes(&cfg(16, 16, 16, F16, F16), &info, 32).is_empty());
    let names: Vec<String> = preferred_workgroup_schemes(&cfg(16, 16, 16, F16, F16), &info, 32)
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(names, ["wg_t128_fr8x8_k32_u8_a0_g8_ct", "wg_t128_fr4x4_k64_u2_ct"]);
    let names: Vec<String> = preferred_long_k_schemes(&cfg(16, 16, 16, F16, F16), &info, 32)
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(names, ["wg_t256_fr16x16_k32_u8_a0_ct"]);
    // A 16-bit C at short K: the 64x64 tile, whichever the accumulator.
    for config in [c, cfg(16, 16, 16, F16, F16)] {
        let names: Vec<String> = preferred_short_k_schemes(&config, &info, 32)
            .iter()
            .map(|s| s.name())
            .collect();
        assert_eq!(names, ["wg_t128_fr4x4_k32_u2_ct"]);
    }
    // Integer configs keep the subgroup-scope default (a tie on the H200).
    assert!(preferred_workgroup_schemes(&cfg(16, 16, 32, I8, I32), &info, 32).is_empty());
    info.vendor_id = 0x1002;
    assert!(preferred_workgroup_schemes(&c, &info, 32).is_empty());
    assert!(preferred_k_contiguous_schemes(&c, &info, 32).is_empty());
    assert!(preferred_long_k_schemes(&cfg(16, 16, 16, F16, F16), &info, 32).is_empty());
    assert!(preferred_short_k_schemes(&c, &info, 32).is_empty());
}

#[test]
fn workgroup_schemes_follow_the_device() {
    let c = cfg(16, 16, 16, F16, F32);
    let info = h200_with_cm2();
    let v = workgroup_candidates(&c, &info, 32);
    assert!(v
        .iter()
        .all(|s| s.scope() == KernelScope::Workgroup && s.check_device(&c, &info).is_ok()));
    let g = v[0].geometry(&c);
    assert_eq!((g.bm, g.bn, g.bk, g.threads, g.shared_bytes), (128, 256, 32, 256, 0));
    assert_eq!(v[0].name(), "wg_t256_fr8x16_k32_u4");
    // Largest workgroups first; no more than 512 bytes of accumulator per invocation (one
    // 32-invocation workgroup may take 64x64, not 128x256).
    let threads: Vec<u32> = v.iter().map(|s| s.geometry(&c).threads).collect();
    assert!(threads.windows(2).all(|w| w[0] >= w[1]), "{threads:?}");
    // Six tiles of 256 invocations: five K loops each as it is and computed transposed, the two
    // eight-step loops also transposed with each step's right operand first, the two
    // sixteen-step loops only so; the 128x128 tile's looped forms also on its grouped raster.
    assert_eq!(
        threads.iter().filter(|&&t| t == 256).count(),
        6 * 5 * 2 + 6 * 2 + 6 * 2 + (2 * 3 + 2)
    );
    assert!(v.iter().all(|s| s.c_transposed() == s.name().ends_with("_ct")));
    assert!(v.iter().all(|s| s.right_first() == s.name().contains("_rf")));
    assert!(v
        .iter()
        .all(|s| !s.right_first() || (s.c_transposed() && s.stages() >= 8)));
    assert!(v.iter().all(|s| s.stages() <= 8 || s.right_first()));
    let plain = v.iter().filter(|s| !s.c_transposed()).count();
    assert_eq!(v.iter().filter(|s| s.c_transposed() && !s.right_first()).count(), plain);
    let grouped: Vec<String> = v.iter().filter(|s| s.raster_group() > 0).map(|s| s.name()).collect();
    assert!(grouped.iter().all(|n| n.starts_with("wg_t")
        && n.contains("_fr8x8_")
        && (n.contains("_u8_a0_g8") || n.contains("_u16_a0_g8_rf"))));
    assert!(
        grouped.iter().any(|n| n == "wg_t128_fr8x8_k32_u8_a0_g8_ct"),
        "{grouped:?}"
    );
    assert!(v.iter().any(|s| s.name() == "wg_t256_fr8x16_k64_u8_a0"));
    assert!(v.iter().any(|s| s.name() == "wg_t256_fr16x8_k64_u8_a0_ct"));
    assert!(v.iter().any(|s| s.name() == "wg_t128_fr8x8_k32_u8_a0"));
    assert!(v.iter().all(|s| {
        let g = s.geometry(&c);
        g.bm * g.bn * 4 <= 512 * g.threads
    }));
    let last = v.last().unwrap().geometry(&c);
    assert_eq!((last.bm, last.bn, last.threads), (64, 64, 32));

    let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
    // No extension, or an extension without workgroup scope: the error says what is missing.
    let plain = crate::device::test_device(h200_limits(), None);
    assert!(workgroup_candidates(&c, &plain, 32).is_empty());
    let msg = e(TileScheme::workgroup(&c, &plain, 32, (1, 8), (8, 2), (32, 1)));
    assert!(
        msg.contains("VK_NV_cooperative_matrix2") && msg.contains("does not offer"),
        "{msg}"
    );
    // 8- and 16-bit operands need 8- and 16-bit storage, whatever the device lists.
    let i8c = cfg(16, 16, 32, I8, I32);
    let mut no8 = info.clone();
    no8.features.storage_buffer_8bit_access = false;
    let msg = e(TileScheme::workgroup(&i8c, &no8, 32, (1, 8), (8, 2), (64, 1)));
    assert!(msg.contains("storageBuffer8BitAccess"), "{msg}");
    let mut no16 = info.clone();
    no16.features.storage_buffer_16bit_access = false;
    let msg = e(TileScheme::workgroup(&c, &no16, 32, (1, 8), (8, 2), (32, 1)));
    assert!(msg.contains("storageBuffer16BitAccess"), "{msg}");
    // Types the device lists no workgroup-scope entry for.
    assert!(workgroup_candidates(&i8c, &info, 32).is_empty());
    let msg = e(TileScheme::workgroup(&i8c, &info, 32, (1, 8), (8, 2), (64, 1)));
    assert!(msg.contains("not offered") && msg.contains("none"), "{msg}");
    // A workgroup size with no entry, a tile off the granularity, a dimension too large.
    let msg = e(TileScheme::workgroup(&c, &info, 32, (1, 3), (8, 2), (32, 1)));
    assert!(
        msg.contains("96 invocations") && msg.contains("256 invocations"),
        "{msg}"
    );
    let cn8 = cfg(16, 8, 16, F16, F32);
    assert!(e(TileScheme::workgroup(&cn8, &info, 32, (8, 1), (1, 1), (32, 1))).contains("not offered"));
    assert!(e(TileScheme::workgroup(&c, &info, 32, (1, 8), (32, 2), (32, 1))).contains("exceeds"));
}

/// i8 -> i32 and u8 -> u32 with both operands K-contiguous: the 256x128 tile computed
/// transposed leads where the device offers their workgroup-scope matrices; other layouts keep
/// the subgroup-scope default.
#[test]
fn int8_k_contiguous_lead_follows_the_device() {
    let i8c = cfg(16, 16, 32, I8, I32);
    let mut info = h200_with_cm2();
    assert!(preferred_k_contiguous_schemes(&i8c, &info, 32).is_empty());
    push_int8_entry(&mut info, (I8, I32), 256);
    let names = |v: Vec<TileScheme>| v.iter().map(|s| s.name()).collect::<Vec<_>>();
    assert_eq!(
        names(preferred_k_contiguous_schemes(&i8c, &info, 32).concat()),
        ["wg_t256_fr16x8_k128_u16_a0_rf_ct", "wg_t256_fr16x8_k128_u8_a0_ct"]
    );
    assert!(preferred_workgroup_schemes(&i8c, &info, 32).is_empty());
    let u8c = cfg(16, 16, 32, U8, U32);
    assert!(preferred_k_contiguous_schemes(&u8c, &info, 32).is_empty());
    push_int8_entry(&mut info, (U8, U32), 256);
    assert_eq!(
        names(preferred_k_contiguous_schemes(&u8c, &info, 32).concat()),
        ["wg_t256_fr16x8_k128_u16_a0_rf_ct", "wg_t256_fr16x8_k128_u8_a0_ct"]
    );
    assert!(preferred_k_contiguous_schemes(&cfg(16, 8, 32, I8, I32), &info, 32).is_empty());
    let lead = preferred_k_contiguous_schemes(&i8c, &info, 32).remove(1);
    assert!(lead_suits(&lead, &i8c, (4096, 4096, 4096)) && !lead_suits(&lead, &i8c, (4096, 4096, 2048)));
    // int8 needs no whole number of iterations (16-bit operands do under eight: see the f32
    // lead's test).
    assert!(lead_suits(&lead, &i8c, (4096, 4096, 11008)) && !lead_suits(&lead, &i8c, (4096, 4096, 4000)));
    assert!(lead_suits(&lead, &i8c, (4096, 4096, 5000)));
    assert!(
        preferred_k_contiguous_short_schemes(&i8c, &info, 32).is_empty(),
        "no 128-invocation entry yet"
    );
    assert!(preferred_k_contiguous_short_schemes(&cfg(16, 16, 16, F16, F32), &info, 32).is_empty());

    // With 128-invocation int8 matrices: 64x64 tiles after the 256x128 ones for small grids,
    // and for K too short for those, 128x128 then 64x64.
    for types in [(I8, I32), (U8, U32)] {
        push_int8_entry(&mut info, types, 128);
    }
    for c in [i8c, u8c] {
        let mut leads = preferred_k_contiguous_schemes(&c, &info, 32);
        assert_eq!(
            names(leads[0].clone()),
            ["wg_t256_fr16x8_k128_u16_a0_rf_ct", "wg_t128_fr4x4_k128_u2_ct"]
        );
        let lead = leads.remove(1);
        assert_eq!(
            names(lead.clone()),
            ["wg_t256_fr16x8_k128_u8_a0_ct", "wg_t128_fr4x4_k128_u2_ct"]
        );
        let short = preferred_k_contiguous_short_schemes(&c, &info, 32);
        let short_names: Vec<Vec<String>> = short.iter().map(|l| names(l.clone())).collect();
        assert_eq!(
            short_names,
            [
                ["wg_t128_fr8x8_k64_u8_a0_ct", "wg_t128_fr4x4_k128_u2_ct"],
                ["wg_t128_fr8x8_k64_u4_ct", "wg_t128_fr4x4_k128_u2_ct"],
                ["wg_t128_fr8x8_k64_u2_ct", "wg_t128_fr4x4_k64_u2_ct"],
            ]
        );
        assert!(lead_suits(&lead, &c, (1024, 1024, 4096)) && !lead_suits(&lead, &c, (128, 4096, 4096)));
        // Each list from four of its iterations: 512-, 256- and 128-deep.
        for (list, from) in short.iter().zip([2048, 1024, 512]) {
            assert!(lead_suits(list, &c, (4096, 4096, from)) && lead_suits(list, &c, (4096, 4096, from + 100)));
            assert!(!lead_suits(list, &c, (4096, 4096, from - 1)));
        }
    }
}

#[test]
fn tuning_lists_deep_forms_grouped() {
    let info = h200_with_cm2();
    let c = cfg(16, 16, 16, F16, F32);
    let names: Vec<String> = workgroup_tuning_candidates(&c, &info, 32)
        .iter()
        .map(|s| s.name())
        .collect();
    for want in [
        "wg_t256_fr16x8_k64_u16_a0_rf_ct",
        "wg_t256_fr16x8_k64_u16_a0_g8_rf_ct",
        "wg_t128_fr8x8_k32_u16_a0_g8_rf_ct",
        "wg_t256_fr16x8_k64_u32_a0_g8_ct",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
}
