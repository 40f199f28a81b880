//! Unit tests of the pass planner.
use super::*;
use crate::tiling::test_support::lavapipe_limits;

fn problem(m: usize, n: usize, k: usize, a: Layout, b: Layout) -> Problem {
    let ld = |outer_inner: (usize, usize)| outer_inner.1.next_multiple_of(8);
    Problem {
        m,
        n,
        k,
        a_layout: a,
        b_layout: b,
        lda: ld(a.outer_inner(m, k)),
        ldb: ld(b.outer_inner(k, n)),
        ldc: n.next_multiple_of(4),
        a_bytes: 2,
        b_bytes: 2,
        c_bytes: 4,
        offsets: [0; 3],
        batch: Batch::ONE,
    }
}

fn geom() -> TileGeometry {
    TileGeometry {
        bm: 32,
        bn: 32,
        bk: 16,
        threads: 32,
        shared_bytes: 0,
    }
}

/// Every output element is covered exactly once per K range, and K is covered exactly once.
fn assert_covers(p: &Problem, passes: &[Pass], limits: &DispatchLimits) {
    let mut hits = vec![0usize; p.m * p.n];
    for pass in passes {
        assert!(pass.groups[0] <= limits.max_groups[0] && pass.groups[1] <= limits.max_groups[1]);
        for w in [pass.a, pass.b, pass.c] {
            assert!(w.bind_range <= limits.max_range, "{w:?}");
            assert_eq!(w.bind_offset % limits.offset_alignment, 0);
            assert_eq!(w.start % 16, 0, "operand start must stay 16-byte aligned");
        }
        for r in pass.m0..pass.m0 + pass.m {
            for c in pass.n0..pass.n0 + pass.n {
                hits[r * p.n + c] += pass.k;
            }
        }
        assert_eq!(pass.accumulate, pass.k0 > 0);
    }
    assert!(hits.iter().all(|&h| h == p.k), "every output must see all of K once");
}

#[test]
fn one_pass_when_it_fits() {
    let p = problem(257, 129, 65, Layout::RowMajor, Layout::ColMajor);
    let l = DispatchLimits::from_device(&lavapipe_limits());
    let passes = plan(&p, &geom(), &l).unwrap();
    assert_eq!(passes.len(), 1);
    assert_eq!(passes[0].groups, [5, 9, 1]);
    assert_covers(&p, &passes, &l);
}

#[test]
fn operand_offsets_shift_every_window() {
    let mut p = problem(100, 70, 50, Layout::ColMajor, Layout::RowMajor);
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 1 << 30,
        offset_alignment: 256,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let at0 = plan(&p, &geom(), &l).unwrap();
    p.offsets = [48, 4096 + 32, 16];
    let moved = plan(&p, &geom(), &l).unwrap();
    for (x, y) in at0.iter().zip(&moved) {
        for (i, (w0, w)) in [(x.a, y.a), (x.b, y.b), (x.c, y.c)].into_iter().enumerate() {
            assert_eq!(w.bind_offset + w.start, w0.bind_offset + w0.start + p.offsets[i]);
            assert_eq!(w.bind_offset % 256, 0);
            assert_eq!(w.start % 16, 0);
            assert_eq!(w.bind_range - w.start, w0.bind_range - w0.start);
        }
    }
}

#[test]
fn splits_for_workgroup_count() {
    let p = problem(300, 700, 5, Layout::RowMajor, Layout::RowMajor);
    let l = DispatchLimits {
        max_groups: [4, 3, 65535],
        max_range: u64::MAX,
        offset_alignment: 64,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let passes = plan(&p, &geom(), &l).unwrap();
    assert!(passes.len() > 1);
    assert_covers(&p, &passes, &l);
}

/// A problem over the binding range is cut along the dimension that shrinks the window that does
/// not fit: 16384^3 f16 -> f32 on lavapipe's 128 MiB range, C needing 16 bands of rows and B
/// (row-major, 32 KiB rows) 8 of K, is 128 passes in `nn` (it was a million, every band cut
/// down to one tile); in `tt` A's and B's windows cut K and N as well (16 x 4 x 4).
#[test]
fn large_problems_cut_along_what_does_not_fit() {
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 128 << 20,
        offset_alignment: 16,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let n = 16384;
    for (a, b, want) in [
        (Layout::RowMajor, Layout::RowMajor, 128),
        (Layout::RowMajor, Layout::ColMajor, 64),
        (Layout::ColMajor, Layout::RowMajor, 128),
        (Layout::ColMajor, Layout::ColMajor, 256),
    ] {
        let p = problem(n, n, n, a, b);
        let passes = plan(&p, &geom(), &l).unwrap();
        assert_eq!(passes.len(), want, "{a:?} {b:?}");
        for pass in &passes {
            for w in [pass.a, pass.b, pass.c] {
                assert!(w.bind_range <= l.max_range, "{w:?}");
            }
        }
        let mut k_per_cell = std::collections::HashMap::new();
        for pass in &passes {
            *k_per_cell.entry((pass.m0, pass.n0)).or_insert(0) += pass.k;
            assert_eq!(pass.accumulate, pass.k0 > 0);
        }
        let area: usize = passes.iter().filter(|q| q.k0 == 0).map(|q| q.m * q.n).sum();
        assert_eq!(area, n * n, "{a:?} {b:?}: every element of C once");
        assert!(k_per_cell.values().all(|&k| k == n), "{a:?} {b:?}: all of K once");
    }
}

#[test]
fn splits_for_buffer_range_in_every_layout() {
    for a in [Layout::RowMajor, Layout::ColMajor] {
        for b in [Layout::RowMajor, Layout::ColMajor] {
            let p = problem(200, 150, 333, a, b);
            let l = DispatchLimits {
                max_groups: [65535; 3],
                max_range: 24 << 10,
                offset_alignment: 256,
                max_allocation: u64::MAX,
                max_shared: u32::MAX,
            };
            let passes = plan(&p, &geom(), &l).unwrap();
            assert!(passes.len() > 1, "{a:?}{b:?}");
            assert_covers(&p, &passes, &l);
        }
    }
}

#[test]
fn k_splits_accumulate() {
    // Column-major A with a long K: only K chunks can shrink A's window.
    let p = problem(32, 32, 4000, Layout::ColMajor, Layout::RowMajor);
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 32 << 10,
        offset_alignment: 16,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let passes = plan(&p, &geom(), &l).unwrap();
    assert!(passes.iter().filter(|p| p.accumulate).count() >= 1);
    assert_covers(&p, &passes, &l);
}

#[test]
fn split_k_heuristic_and_plan() {
    // 16x4096x4096 with 32x32 tiles of one subgroup: 128 subgroups, so 8 slices of 512.
    assert_eq!(choose_split_k(128, 1, 4096, false), 8);
    assert_eq!(choose_split_k(1024, 4, 4096, false), 1, "a full GPU needs no split");
    assert_eq!(choose_split_k(1, 1, 700, false), 2, "slices stay at least 256 deep");
    assert_eq!(choose_split_k(1, 1, 100_000, true), 1, "never on CPU drivers");
    let p = problem(16, 4096, 4096, Layout::RowMajor, Layout::ColMajor);
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: u64::MAX,
        offset_alignment: 256,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let slice = (p.m * p.ldc * p.c_bytes) as u64;
    let passes = plan_split_k(&p, &geom(), &l, 8, slice).unwrap();
    assert_eq!(passes.len(), 8);
    assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 4096);
    assert!(passes
        .iter()
        .all(|x| x.k0 % 16 == 0 && !x.accumulate && x.c.start % 16 == 0));
    assert_eq!(passes[3].c.bind_offset + passes[3].c.start, 3 * slice);
    // Uneven K: the last slice is shorter and K is still covered once.
    let p = problem(16, 64, 1000, Layout::ColMajor, Layout::RowMajor);
    let passes = plan_split_k(&p, &geom(), &l, 3, 1 << 20).unwrap();
    assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 1000);
}

#[test]
fn impossible_window_is_an_error() {
    let mut p = problem(64, 64, 64, Layout::RowMajor, Layout::RowMajor);
    p.lda = 1 << 20;
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 1 << 20,
        offset_alignment: 16,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    assert!(matches!(plan(&p, &geom(), &l), Err(Error::TooLarge(_))));
}

/// A stacked batch of `count` entries of `p` (each entry after the whole of the one before;
/// B shared where `share_b`).
fn batched(mut p: Problem, count: usize, share_b: bool) -> Problem {
    let entry = |rows: usize, ld: usize| rows * ld;
    let (a_outer, _) = p.a_layout.outer_inner(p.m, p.k);
    let (b_outer, _) = p.b_layout.outer_inner(p.k, p.n);
    p.batch = Batch {
        count,
        strides: [
            entry(a_outer, p.lda),
            if share_b { 0 } else { entry(b_outer, p.ldb) },
            entry(p.m, p.ldc),
        ],
    };
    p
}

/// Every entry of the batch is covered by passes whose windows start at that entry's operands.
fn assert_batch_covers(p: &Problem, passes: &[Pass], limits: &DispatchLimits) {
    let mut seen = vec![0usize; p.batch.count];
    for pass in passes {
        assert_eq!(pass.groups[2] as usize, pass.batch);
        assert!(pass.groups[2] <= limits.max_groups[2]);
        for (j, w) in [pass.a, pass.b, pass.c].into_iter().enumerate() {
            assert!(w.bind_range <= limits.max_range, "{w:?}");
            assert_eq!(w.bind_offset % limits.offset_alignment, 0);
            // The window reaches the last entry's operand: one entry's span plus the strides.
            let stride = p.batch.stride_bytes(p, j);
            assert!(w.bind_offset + w.start >= pass.batch0 as u64 * stride);
        }
        for entry in &mut seen[pass.batch0..pass.batch0 + pass.batch] {
            *entry += pass.m * pass.n * pass.k;
        }
    }
    assert!(seen.iter().all(|&s| s == p.m * p.n * p.k), "{seen:?}");
}

#[test]
fn a_batch_is_one_pass_with_the_entries_in_z() {
    let p = batched(problem(33, 17, 9, Layout::RowMajor, Layout::ColMajor), 7, false);
    let l = DispatchLimits::from_device(&lavapipe_limits());
    let passes = plan(&p, &geom(), &l).unwrap();
    assert_eq!(passes.len(), 1);
    assert_eq!(passes[0].groups, [1, 2, 7]);
    assert_batch_covers(&p, &passes, &l);
    // The windows span all seven entries.
    let (_, one_c) = span(0, 0, p.m, p.n, p.ldc, p.c_bytes, false);
    assert_eq!(passes[0].c.bind_range, one_c + 6 * p.batch.stride_bytes(&p, 2));
}

#[test]
fn batches_beyond_the_grids_z_or_the_windows_run_in_chunks() {
    let p = batched(problem(40, 24, 16, Layout::ColMajor, Layout::RowMajor), 8, true);
    let l = DispatchLimits {
        max_groups: [65535, 65535, 3],
        max_range: u64::MAX,
        offset_alignment: 64,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let passes = plan(&p, &geom(), &l).unwrap();
    assert_eq!(
        passes.iter().map(|x| (x.batch0, x.batch)).collect::<Vec<_>>(),
        [(0, 3), (3, 3), (6, 2)]
    );
    assert_batch_covers(&p, &passes, &l);
    // A shared B: every pass binds the same B window.
    assert!(passes.iter().all(|x| x.b == passes[0].b));
    // Windows of about two entries: the batch is cut before M, N or K.
    let c_entry = p.batch.stride_bytes(&p, 2);
    let l = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 2 * c_entry + 256,
        offset_alignment: 64,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let passes = plan(&p, &geom(), &l).unwrap();
    assert!(passes
        .iter()
        .all(|x| x.m == p.m && x.n == p.n && x.k == p.k && x.batch <= 2));
    assert_batch_covers(&p, &passes, &l);
}

#[test]
fn batch_checks_name_what_is_wrong() {
    let p = problem(10, 12, 8, Layout::RowMajor, Layout::RowMajor);
    let check = |count, strides| Batch { count, strides }.check(&p);
    let entry_c = 9 * p.ldc + 12;
    assert!(check(1, [0; 3]).is_ok());
    let ok = check(3, [80, 0, entry_c.next_multiple_of(4)]);
    assert!(ok.is_ok(), "{ok:?}");
    let err = |r: Result<()>| match r {
        Err(Error::InvalidOperand(msg)) => msg,
        other => panic!("{other:?}"),
    };
    assert!(err(check(0, [0; 3])).contains("at least 1"));
    assert!(err(check(2, [81, 0, 4096])).contains("16-byte"));
    assert!(err(check(2, [80, 0, 0])).contains("overlap"), "a shared C would race");
    assert!(err(check(2, [80, 0, 12])).contains("overlap"));
    assert!(err(check(5, [(usize::MAX / 4) & !7, 0, 4096])).contains("overflow"));
    // Side by side within a row: 3 entries of 12 columns in rows of ldc >= 3 * 12.
    let mut wide = p;
    wide.ldc = 36;
    assert!(Batch {
        count: 3,
        strides: [0, 0, 12]
    }
    .check(&wide)
    .is_ok());
    assert!(Batch {
        count: 4,
        strides: [0, 0, 12]
    }
    .check(&wide)
    .is_err());
}
