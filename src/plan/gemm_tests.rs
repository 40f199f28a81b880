//! Unit tests of [`super::GemmPlan`].
use super::*;
use crate::config::ComponentType::*;
use crate::tiling::test_support::{cfg, h200_limits};

pub(in crate::plan) fn request(m: usize, n: usize, k: usize, alpha: f64, beta: f64, split_k: SplitK) -> PlanRequest {
    let config = cfg(16, 16, 16, F16, F32);
    let scheme = TileScheme::new(&config, &h200_limits(), 32, (1, 2), (2, 2), 32).unwrap();
    PlanRequest {
        specialize: false,
        problem: device_problem((m, n, k), (Layout::RowMajor, Layout::ColMajor), (2, 2, 4)),
        config,
        scheme,
        loads: [Load::Native; 2],
        alpha,
        beta,
        split_k,
        epilogue: Default::default(),
        convert_first: false,
        relayout: [false; 2],
    }
}

pub(in crate::plan) fn unlimited() -> DispatchLimits {
    DispatchLimits::from_device(&h200_limits())
}

#[test]
fn one_pass_binds_a_b_c_with_the_callers_scalars() {
    let p = GemmPlan::new(&request(100, 70, 50, 2.0, 0.5, SplitK::Slices(1)), &unlimited()).unwrap();
    assert_eq!(p.dispatches.len(), 1);
    assert_eq!(p.scratch_bytes, 0);
    assert!(p.reads_c);
    let d = &p.dispatches[0];
    let Kernel::Gemm(key) = d.kernel else {
        panic!("{:?}", d.kernel)
    };
    assert_eq!(
        key.epilogue,
        Epilogue {
            alpha: true,
            beta: true,
            ..Default::default()
        }
    );
    assert_eq!(d.bindings.map(|b| b.0), [Operand::A, Operand::B, Operand::C]);
    assert_eq!((d.push.m, d.push.n, d.push.k), (100, 70, 50));
    assert_eq!(
        (d.push.alpha_bits, d.push.beta_bits),
        (2.0f32.to_bits(), 0.5f32.to_bits())
    );
    // 32x64 tiles: 2 columns of tiles, 4 rows.
    assert_eq!(d.groups, [2, 4, 1]);
    assert!(!d.after_previous);
    // lda of row-major A (K=50 f16) padded to 56; ldb of column-major B (K contiguous) too.
    assert_eq!((d.push.lda_vec, d.push.ldb_vec, d.push.ldc), (7, 7, 72));
    // beta = 0 leaves C unread and the beta term out of the kernel.
    let p = GemmPlan::new(&request(100, 70, 50, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
    assert!(!p.reads_c);
    assert_eq!(p.main_kernel().epilogue, Epilogue::default());
}

#[test]
fn k_chunks_accumulate_after_a_barrier() {
    // Column-major A and row-major B (K outermost in both) in windows of 4 KiB: only K chunks
    // shrink them.
    let limits = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 4 << 10,
        offset_alignment: 16,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let mut req = request(16, 32, 1000, 1.0, 3.0, SplitK::Slices(1));
    req.problem = device_problem((16, 32, 1000), (Layout::ColMajor, Layout::RowMajor), (2, 2, 4));
    let p = GemmPlan::new(&req, &limits).unwrap();
    assert!(p.dispatches.len() > 1);
    assert_eq!(p.dispatches.iter().map(|d| d.push.k as usize).sum::<usize>(), 1000);
    let first = &p.dispatches[0];
    assert!(!first.after_previous);
    assert_eq!(first.push.beta_bits, 3.0f32.to_bits());
    for d in &p.dispatches[1..] {
        assert!(d.after_previous, "an accumulating pass waits for the one before");
        assert_eq!(d.push.beta_bits, 1.0f32.to_bits());
        let Kernel::Gemm(key) = d.kernel else { panic!() };
        assert!(key.epilogue.beta);
    }
    // With beta != 0 every pass runs the same kernel; with beta = 0 the first one skips C.
    assert_eq!(p.kernels().len(), 1, "{:?}", p.kernels());
    req.beta = 0.0;
    assert_eq!(GemmPlan::new(&req, &limits).unwrap().kernels().len(), 2);
}

#[test]
fn split_k_writes_scratch_then_reduces() {
    let p = GemmPlan::new(&request(16, 64, 4096, 0.5, -1.0, SplitK::Slices(4)), &unlimited()).unwrap();
    assert!(p.is_split_k());
    let (slices, reduce) = p.dispatches.split_at(4);
    assert!(slices
        .iter()
        .all(|d| d.bindings[2].0 == Operand::Scratch && !d.after_previous));
    assert!(slices.iter().all(|d| d.push.alpha_bits == 0 && d.push.beta_bits == 0));
    assert_eq!(slices.iter().map(|d| d.push.k).sum::<u32>(), 4096);
    let [r] = reduce else { panic!("{reduce:?}") };
    assert!(r.after_previous);
    assert_eq!(
        r.bindings.map(|b| b.0),
        [Operand::Scratch, Operand::Scratch, Operand::C]
    );
    assert_eq!(r.push.k, 4, "the reduction sums 4 slices");
    assert_eq!(
        (r.push.alpha_bits, r.push.beta_bits),
        (0.5f32.to_bits(), (-1.0f32).to_bits())
    );
    let slice = (16 * 64 * 4) as u64;
    assert_eq!(p.scratch_bytes, 4 * slice);
    assert!(matches!(p.kernels()[1], Kernel::Reduce { result_type: F32, .. }));
    // The automatic rule splits this skinny problem on a GPU, never on a CPU driver.
    let auto = |cpu_device| {
        GemmPlan::new(
            &request(16, 64, 4096, 1.0, 0.0, SplitK::Auto { cpu_device }),
            &unlimited(),
        )
        .unwrap()
        .is_split_k()
    };
    assert!(auto(false));
    assert!(!auto(true));
}

#[test]
fn bad_scalars_and_shapes_are_typed_errors() {
    let e = GemmPlan::new(&request(8, 8, 8, f64::NAN, 0.0, SplitK::Slices(1)), &unlimited()).unwrap_err();
    assert!(matches!(e, Error::InvalidScalar { name: "alpha", .. }), "{e}");
    assert!(scalar_bits("beta", 0.5, I32).is_err());
    assert!(scalar_bits("beta", 1e6, F16).is_err());
    assert_eq!(scalar_bits("beta", -2.0, I32).unwrap(), (-2i32) as u32);
    assert!(matches!(
        check_shapes((3, 4), (5, 6), (3, 6)),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        check_shapes((3, 4), (4, 6), (6, 3)),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        check_shapes((0, 4), (4, 6), (0, 6)),
        Err(Error::ZeroSize { .. })
    ));
    assert!(matches!(
        check_shapes((MAX_DIM + 1, 1), (1, 1), (MAX_DIM + 1, 1)),
        Err(Error::TooLarge(_))
    ));
    assert_eq!(check_shapes((3, 4), (4, 6), (3, 6)).unwrap(), (3, 6, 4));
}

#[test]
fn accurate_split_finds_magnitudes_then_multiplies_in_one_pass() {
    let mut req = request(100, 70, 4096, 1.0, 0.0, SplitK::Slices(4));
    req.problem = device_problem((100, 70, 4096), (Layout::RowMajor, Layout::ColMajor), (4, 4, 4));
    req.loads = [Load::Split; 2];
    let p = GemmPlan::new(&req, &unlimited()).unwrap();
    let kinds: Vec<_> = p.dispatches.iter().map(|d| d.kernel).collect();
    assert!(
        matches!(kinds[..], [Kernel::AbsMax, Kernel::AbsMax, Kernel::Gemm(_)]),
        "{kinds:?}"
    );
    let [a, b, gemm] = &p.dispatches[..] else {
        unreachable!()
    };
    // A's rows of 4096 f32 (1024 vectors), B (column-major, K contiguous) likewise, into words 0 and 1.
    assert_eq!((a.push.m, a.push.n, a.push.c_off), (100, 1024, 0));
    assert_eq!((b.push.m, b.push.n, b.push.c_off), (70, 1024, 1));
    assert!(!a.after_previous && !b.after_previous && gemm.after_previous);
    assert_eq!(gemm.aux.map(|x| x.0), Some(Operand::Scratch));
    assert_eq!(p.zeroed_scratch_bytes, 16);
    assert!(!p.is_split_k(), "split-K is not used");
    assert_eq!(p.scratch_bytes, 16);
    assert_eq!(p.main_kernel().loads, [Load::Split; 2]);
    // Beyond one pass of the limits: an error that names the way out.
    let tight = DispatchLimits {
        max_groups: [65535; 3],
        max_range: 1 << 20,
        offset_alignment: 16,
        max_allocation: u64::MAX,
        max_shared: u32::MAX,
    };
    let e = GemmPlan::new(&req, &tight).unwrap_err();
    assert!(matches!(e, Error::TooLarge(ref m) if m.contains("Exact")), "{e}");
    // Element sizes must match the loads.
    req.problem = device_problem((100, 70, 4096), (Layout::RowMajor, Layout::ColMajor), (2, 2, 4));
    assert!(matches!(
        GemmPlan::new(&req, &unlimited()),
        Err(Error::InvalidOperand(_))
    ));
}

#[test]
fn probes_replace_every_gemm_kernel() {
    let p = GemmPlan::new(&request(16, 64, 4096, 1.0, 0.0, SplitK::Slices(3)), &unlimited()).unwrap();
    let probed = p.with_probe(Probe::NoMma);
    assert!(probed
        .gemm_dispatches()
        .all(|d| matches!(d.kernel, Kernel::Gemm(k) if k.probe == Probe::NoMma)));
    assert!(matches!(
        probed.dispatches.last().unwrap().kernel,
        Kernel::Reduce { .. }
    ));
}

#[test]
fn a_batch_passes_its_strides_and_never_splits_k() {
    let mut req = request(16, 64, 4096, 1.0, 0.0, SplitK::Slices(8));
    let p = req.problem;
    req.problem.batch = Batch {
        count: 12,
        strides: [p.m * p.lda, 0, p.m * p.ldc + 4],
    };
    let plan = GemmPlan::new(&req, &unlimited()).unwrap();
    assert!(!plan.is_split_k(), "a batch fills the GPU with its entries");
    let [d] = plan.dispatches.as_slice() else {
        panic!("{:?}", plan.dispatches)
    };
    assert_eq!(d.groups[2], 12);
    // A in 16-byte vectors (8 f16 each), B shared, C in elements.
    assert_eq!(
        (d.push.a_batch_vec, d.push.b_batch_vec, d.push.c_batch),
        ((p.m * p.lda / 8) as u32, 0, (p.m * p.ldc + 4) as u32)
    );
    // One GEMM: no strides in the kernel.
    let one = GemmPlan::new(&request(16, 64, 64, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
    assert_eq!(
        (one.dispatches[0].push.a_batch_vec, one.dispatches[0].push.c_batch),
        (0, 0)
    );
    // The accurate split keeps one scale per operand: a batch is refused by the planner (the
    // router sends such batches to the exact kernel first).
    let mut split = req;
    split.loads = [Load::Split; 2];
    split.problem.a_bytes = 4;
    split.problem.b_bytes = 4;
    split.problem.batch.strides = [p.m * p.lda * 2, 0, p.m * p.ldc + 4];
    assert!(matches!(GemmPlan::new(&split, &unlimited()), Err(Error::Unsupported(m)) if m.contains("batch")));
}

#[test]
fn f32_operands_rounded_first_become_16_bit_copies_in_scratch_before_the_gemm() {
    // A f32 (row-major, 100 x 50), B f16 (column-major); split-K puts its slices after the copy.
    let mut req = request(100, 70, 4096, 1.0, 0.0, SplitK::Slices(4));
    req.problem = device_problem((100, 70, 4096), (Layout::RowMajor, Layout::ColMajor), (4, 2, 4));
    req.loads = [Load::Round, Load::Native];
    req.convert_first = true;
    let limits = unlimited();
    let plan = GemmPlan::new(&req, &limits).unwrap();
    let d = &plan.dispatches[0];
    assert_eq!(d.kernel, Kernel::Narrow { to: F16 });
    assert_eq!((d.bindings[0].0, d.bindings[2].0), (Operand::A, Operand::Scratch));
    // 100 rows of 4096 f32 (1024 vectors) into 100 rows of 4096 f16 (512 vectors).
    assert_eq!(
        (d.push.m, d.push.n, d.push.ldc, d.push.lda_vec, d.push.ldb_vec),
        (100, 512, 4096, 1024, 512)
    );
    let copy = 100 * 4096 * 2;
    assert_eq!(d.bindings[2].1.bind_range, copy);
    let rest = &plan.dispatches[1..];
    assert!(rest[0].after_previous, "the GEMM waits for the copy");
    assert!(plan.is_split_k());
    for g in plan.gemm_dispatches() {
        let Kernel::Gemm(key) = g.kernel else { unreachable!() };
        assert_eq!(key.loads, [Load::Native; 2]);
        assert_eq!(g.bindings[0].0, Operand::Scratch);
        assert!(g.bindings[0].1.bind_offset + g.bindings[0].1.bind_range <= copy);
        assert_eq!(g.bindings[1].0, Operand::B);
        assert!(g.bindings[2].1.bind_offset >= copy.next_multiple_of(limits.offset_alignment.max(16)));
    }
    assert!(plan.scratch_bytes > copy);
    // The caller's problem is what the plan reports.
    assert_eq!(plan.problem.a_bytes, 4);
    // A batch converts as it loads: rounding first is refused for it.
    req.problem.batch = Batch {
        count: 3,
        strides: [100 * 4096, 0, 100 * req.problem.ldc],
    };
    assert!(matches!(GemmPlan::new(&req, &limits), Err(Error::Unsupported(m)) if m.contains("batch")));
}

#[test]
fn relaid_operands_become_transposed_copies_the_gemm_reads_in_the_other_layout() {
    // A f32 row-major 100 x 50, rounded and transposed; B f16 column-major 50 x 70, transposed.
    let (m, n, k) = (100, 70, 50);
    let mut req = request(m, n, k, 1.0, 0.0, SplitK::Slices(1));
    req.problem = device_problem((m, n, k), (Layout::RowMajor, Layout::ColMajor), (4, 2, 4));
    req.loads = [Load::Round, Load::Native];
    req.convert_first = true;
    req.relayout = [true, true];
    let limits = unlimited();
    let plan = GemmPlan::new(&req, &limits).unwrap();
    let kinds: Vec<Kernel> = plan.dispatches.iter().map(|d| d.kernel).collect();
    let [Kernel::Transpose {
        rounds_to: Some(F16),
        bytes: 2,
    }, Kernel::Transpose {
        rounds_to: None,
        bytes: 2,
    }, Kernel::Gemm(key)] = kinds[..]
    else {
        panic!("{kinds:?}")
    };
    assert_eq!((key.a_layout, key.b_layout), (Layout::ColMajor, Layout::RowMajor));
    assert_eq!(key.loads, [Load::Native; 2]);
    let (ta, tb, g) = (&plan.dispatches[0], &plan.dispatches[1], &plan.dispatches[2]);
    // A: 100 rows of 50 f32 (ld 52: 13 vectors) into 50 rows of 100 f16 (ld 104: 13 vectors).
    assert_eq!(
        (ta.push.m, ta.push.n, ta.push.lda_vec, ta.push.ldb_vec),
        (100, 50, 13, 13)
    );
    assert_eq!(ta.bindings[2].1.bind_range, 50 * 104 * 2);
    // B: 70 rows of 50 f16 (ld 56: 7 vectors) into 50 rows of 70 f16 (ld 72: 9 vectors).
    assert_eq!((tb.push.m, tb.push.n, tb.push.lda_vec, tb.push.ldb_vec), (70, 50, 7, 9));
    assert_eq!(tb.bindings[2].1.bind_range, 50 * 72 * 2);
    assert!(
        !tb.after_previous && g.after_previous,
        "the copies run together, the GEMM after them"
    );
    assert_eq!((g.push.lda_vec, g.push.ldb_vec), (13, 9));
    for j in 0..2 {
        assert_eq!(g.bindings[j].0, Operand::Scratch);
        assert_eq!(
            g.bindings[j].1.bind_offset,
            plan.dispatches[j].bindings[2].1.bind_offset
        );
    }
    assert!(tb.bindings[2].1.bind_offset >= ta.bindings[2].1.bind_offset + ta.bindings[2].1.bind_range);
    // An f32 operand converted as it loads has no transposing pass.
    req.convert_first = false;
    assert!(matches!(GemmPlan::new(&req, &limits), Err(Error::Unsupported(m)) if m.contains("transposed")));
}

#[test]
fn the_accurate_split_done_first_writes_padded_planes_for_one_workgroup_scope_gemm() {
    let limits = unlimited();
    let config = cfg(16, 16, 16, F16, F32);
    let scheme = TileScheme::workgroup_for_limits(&config, &h200_limits(), 32, (8, 1), (1, 8), (32, 8)).unwrap();
    let (m, n, k) = (100, 70, 50);
    // A row-major (K along its rows: split transposed), B row-major (K across its rows).
    let mut req = request(m, n, k, 2.0, 0.5, SplitK::Slices(4));
    req.problem = device_problem((m, n, k), (Layout::RowMajor, Layout::RowMajor), (4, 4, 4));
    req.config = config;
    req.scheme = scheme;
    req.loads = [Load::Split; 2];
    req.convert_first = true;
    let plan = GemmPlan::new(&req, &limits).unwrap();
    let kinds: Vec<Kernel> = plan.dispatches.iter().map(|d| d.kernel).collect();
    let [Kernel::AbsMax, Kernel::AbsMax, Kernel::SplitPlanes { transposed: true }, Kernel::SplitPlanes { transposed: false }, Kernel::Gemm(key)] =
        kinds[..]
    else {
        panic!("{kinds:?}")
    };
    assert_eq!(key.loads, [Load::Planes; 2]);
    assert_eq!((key.a_layout, key.b_layout), (Layout::ColMajor, Layout::RowMajor));
    assert_eq!(plan.zeroed_scratch_bytes, 16);
    let kp = 64; // K = 50 padded to whole 32-deep steps
    let [_, _, sa, sb, gemm] = &plan.dispatches[..] else {
        unreachable!()
    };
    // A: 100 rows of 50 into 64 rows of hi (the 14 past K zero), then 64 of lo; rows of 100
    // padded to 104 elements.
    assert_eq!(
        (sa.push.m, sa.push.n, sa.push.ldc, sa.push.ldb_vec, sa.push.b_off_vec),
        (100, 50, kp as u32, 13, (kp * 104 / 8) as u32)
    );
    // B: 64 rows of hi (the 14 past K zero), then 64 of lo; rows of 70 padded to 72 elements.
    assert_eq!(
        (sb.push.m, sb.push.row0, sb.push.n, sb.push.ldb_vec),
        (kp as u32, k as u32, 9, 9)
    );
    assert_eq!(sb.push.b_off_vec, (kp * 72 / 8) as u32);
    assert_eq!((sa.push.col0, sb.push.col0), (0, 1), "each operand's scale word");
    assert!(sa.after_previous && !sb.after_previous && gemm.after_previous);
    assert_eq!(sa.bindings[2].1.bind_range, 2 * kp as u64 * 104 * 2);
    assert_eq!(sb.bindings[2].1.bind_range, 2 * kp as u64 * 72 * 2);
    // The GEMM: K of both planes, in one pass, no split-K, reading the planes and the words.
    assert_eq!(gemm.push.k, 2 * kp as u32);
    assert_eq!(gemm.push.lda_vec, 13);
    assert_eq!(
        (gemm.bindings[0].0, gemm.bindings[1].0),
        (Operand::Scratch, Operand::Scratch)
    );
    assert_eq!(gemm.bindings[0].1.bind_offset, sa.bindings[2].1.bind_offset);
    assert_eq!(gemm.bindings[1].1.bind_offset, sb.bindings[2].1.bind_offset);
    assert_eq!(gemm.aux.map(|a| a.0), Some(Operand::Scratch));
    assert_eq!(
        plan.scratch_bytes,
        sb.bindings[2].1.bind_offset + sb.bindings[2].1.bind_range
    );
    // On a subgroup-scope scheme the planes are a typed error.
    req.scheme = TileScheme::new(&config, &h200_limits(), 32, (1, 2), (2, 2), 32).unwrap();
    assert!(matches!(GemmPlan::new(&req, &limits), Err(Error::InvalidTileScheme(_))));
}

#[test]
fn specialised_plans_build_n_k_and_the_leading_dimensions_into_the_workgroup_kernel() {
    let config = cfg(16, 16, 16, F16, F32);
    let wg = TileScheme::workgroup_for_limits(&config, &h200_limits(), 32, (8, 1), (1, 8), (32, 8)).unwrap();
    let req = |scheme, specialize, split_k| PlanRequest {
        scheme,
        specialize,
        ..request(300, 200, 100, 1.0, 0.0, split_k)
    };
    let fixed = |r: &PlanRequest| GemmPlan::new(r, &unlimited()).unwrap().main_kernel().fixed;
    let on = fixed(&req(wg, true, SplitK::Slices(1))).expect("one workgroup-scope pass");
    let p = &req(wg, true, SplitK::Slices(1)).problem;
    assert_eq!((on.n, on.k), (200, 100));
    assert_eq!((on.lda, on.ldb, on.ldc), (p.lda as u32, p.ldb as u32, p.ldc as u32));
    // Off when not asked, on subgroup scope, and where the device's limits cut K into passes.
    assert_eq!(fixed(&req(wg, false, SplitK::Slices(1))), None);
    let sg = request(1, 1, 1, 1.0, 0.0, SplitK::Slices(1)).scheme;
    assert_eq!(fixed(&req(sg, true, SplitK::Slices(1))), None);
    // Split-K's slices build in their own depth: 100 in two slices of K steps is 64 + 36, so
    // two pipelines, each slice's dispatch pushing the depth its kernel has built in.
    let bk = wg.geometry(&config).bk;
    assert_eq!(bk, 32, "the depths below assume 32-deep K steps");
    let split = GemmPlan::new(&req(wg, true, SplitK::Slices(2)), &unlimited()).unwrap();
    assert!(split.is_split_k());
    let slices: Vec<_> = split
        .gemm_dispatches()
        .map(|d| match d.kernel {
            Kernel::Gemm(k) => (k.fixed.expect("a slice with sizes built in"), d.push.k),
            other => panic!("a slice ran {other:?}"),
        })
        .collect();
    assert_eq!(
        slices.iter().map(|(f, push)| (f.k, *push)).collect::<Vec<_>>(),
        [(64, 64), (36, 36)]
    );
    assert!(slices
        .iter()
        .all(|(f, _)| (f.n, f.lda, f.ldb, f.ldc) == (on.n, on.lda, on.ldb, on.ldc)));
    let pushed = GemmPlan::new(&req(wg, false, SplitK::Slices(2)), &unlimited()).unwrap();
    assert!(pushed
        .gemm_dispatches()
        .all(|d| matches!(d.kernel, Kernel::Gemm(k) if k.fixed.is_none())));
    let narrow = DispatchLimits {
        max_range: 160 * 1024,
        ..unlimited()
    };
    let cut = GemmPlan::new(&req(wg, true, SplitK::Slices(1)), &narrow).unwrap();
    assert!(cut.dispatches.len() > 1);
    assert!(cut
        .gemm_dispatches()
        .all(|d| matches!(d.kernel, Kernel::Gemm(k) if k.fixed.is_none())));
}
