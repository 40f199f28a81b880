//! Pipelines compiled by a helper process (`PipelineCompiler`): the `vk-sgmat` binary compiles
//! what a preparation lacks and exits, and the context creates the pipelines from its cache; a
//! helper that is missing, fails, ends without answering or
//! answers with something other than this device's cache costs only the in-process compile
//! (the GEMM is right either way, and `compile_report` says why); `HelperOnNvidia` starts no
//! helper elsewhere.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::ints;
use half::f16;
use vk_sgmat::{
    Context, ContextOptions, HelperCommand, Layout, MatMut, MatRef, Matmul, PipelineCacheFile, PipelineCompiler,
};

/// The `vk-sgmat` binary as a helper, started as this test binary was (through the test
/// runner's loader where it uses one).
fn vk_sgmat_helper() -> HelperCommand {
    let bin = env!("CARGO_BIN_EXE_vk-sgmat");
    let this = HelperCommand::this_program().expect("this platform names the running program");
    match this.args.len() {
        0 => HelperCommand::new(bin),
        n => {
            let mut args = this.args;
            args[n - 1] = bin.into();
            HelperCommand {
                program: this.program,
                args,
            }
        }
    }
}

fn context_with(compiler: PipelineCompiler) -> Context {
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        pipeline_cache: PipelineCacheFile::Off,
        pipeline_compiler: compiler,
        ..Default::default()
    })
    .expect("a context")
}

/// One exact GEMM (small integers) of `m x n x k` with B stored `b_layout`, checked element by
/// element.
fn exact_gemm(ctx: &Context, rng: &mut Rng, (m, n, k): (usize, usize, usize), b_layout: Layout) {
    let a: Vec<f16> = ints(rng, m * k);
    let b: Vec<f16> = ints(rng, k * n);
    let mut c = vec![f32::NAN; m * n];
    let b_ref = match b_layout {
        Layout::RowMajor => MatRef::new(&b, k, n),
        Layout::ColMajor => MatRef::col_major(&b, k, n),
    };
    ctx.run(&Matmul::new(), MatRef::new(&a, m, k), b_ref, MatMut::new(&mut c, m, n))
        .unwrap();
    for i in 0..m {
        for j in 0..n {
            let at = |p: usize| match b_layout {
                Layout::RowMajor => b[p * n + j],
                Layout::ColMajor => b[j * k + p],
            };
            let want: f32 = (0..k).map(|p| a[i * k + p].to_f32() * at(p).to_f32()).sum();
            assert_eq!(c[i * n + j], want, "{m}x{n}x{k} {b_layout:?}: ({i}, {j})");
        }
    }
    common::assert_no_validation_messages(ctx);
}

#[test]
fn a_helper_compiles_what_a_preparation_lacks() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let ctx = context_with(PipelineCompiler::Helper(vk_sgmat_helper()));
    exact_gemm(&ctx, &mut rng, (19, 23, 17), Layout::RowMajor);
    let first = ctx.compile_report();
    assert_eq!(first.failures, 0, "the helper failed: {:?}", first.last_failure);
    assert!(first.from_helper >= 1, "no pipeline came from the helper: {first:?}");
    exact_gemm(&ctx, &mut rng, (37, 5, 131), Layout::ColMajor);
    let second = ctx.compile_report();
    assert_eq!(second.failures, 0, "the helper failed: {:?}", second.last_failure);
    assert!(
        second.from_helper > first.from_helper,
        "the second GEMM's new pipelines did not come from the helper: {first:?} then {second:?}"
    );
    assert_eq!(second.helpers_started, 2, "a helper for each preparation: {second:?}");
    // Where the driver's cache data holds compiled pipelines (NVIDIA's; lavapipe's holds none),
    // each of the helper's was created from it, not compiled again here.
    if ctx.device_info().driver_id == 4 {
        assert!(second.from_cache >= second.from_helper, "{second:?}");
    }
}

#[test]
fn a_failing_helper_costs_only_the_compile() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let sh = |script: &str| HelperCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into(), "sh".into()],
    };
    let cases = [
        (
            HelperCommand::new("/nonexistent/vk-sgmat-helper"),
            "/nonexistent/vk-sgmat-helper",
        ),
        // Ended before or after it was sent the request, whichever came first.
        (HelperCommand::new("/bin/false"), "(exit status: 1)"),
        (sh("exit 0"), "(exit status: 0)"),
        (sh("echo broken >&2; exit 3"), "(exit status: 3): broken"),
        (
            sh("head -c 8 > /dev/null; exit 4"),
            "ended without answering (exit status: 4)",
        ),
        // Answers each request with the request itself: a whole frame, but no pipeline cache.
        (sh("exec cat"), "answered with no pipeline cache of this device"),
    ];
    for (command, says) in cases {
        let program = format!("{command:?}");
        let ctx = context_with(PipelineCompiler::Helper(command));
        exact_gemm(&ctx, &mut rng, (19, 23, 17), Layout::RowMajor);
        // Given up after the first failure: the next preparation compiles here at once.
        exact_gemm(&ctx, &mut rng, (37, 5, 131), Layout::ColMajor);
        let report = ctx.compile_report();
        assert_eq!(report.from_helper, 0, "{program}: {report:?}");
        assert_eq!(report.failures, 1, "{program}: {report:?}");
        // So every pipeline was compiled here, and timed.
        assert!(
            report.compiled_here >= 2
                && report.longest_compile > std::time::Duration::ZERO
                && report.longest_compile < report.compile_time,
            "{program}: {report:?}"
        );
        let why = report.last_failure.unwrap_or_default();
        assert!(
            why.contains(says),
            "{program}: the reason {why:?} does not say {says:?}"
        );
    }
}

#[test]
fn the_nvidia_only_helper_starts_nowhere_else() {
    let ctx = context_with(PipelineCompiler::HelperOnNvidia(HelperCommand::new(
        "/nonexistent/vk-sgmat-helper",
    )));
    let nvidia = ctx.device_info().driver_id == 4; // VK_DRIVER_ID_NVIDIA_PROPRIETARY
    exact_gemm(&ctx, &mut Rng::new(Rng::fresh_seed()), (19, 23, 17), Layout::RowMajor);
    let report = ctx.compile_report();
    assert_eq!(report.failures >= 1, nvidia, "{report:?}");
}
