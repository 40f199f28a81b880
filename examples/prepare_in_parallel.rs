//! A model's GEMMs prepared at start-up from several threads: each `Context::prepare` compiles
//! its pipelines, and preparations on different threads compile at the same time. Times a
//! fresh context (pipeline cache off) preparing a Llama-7B layer's four GEMMs one after another,
//! then another fresh one preparing them on four threads, and checks one result of each.
//!
//! `cargo run --release --example prepare_in_parallel -- 512` uses the layer's real sizes (M =
//! 512 tokens); without an argument, small stand-ins of the same shapes (quick on a CPU driver).
//! A second argument `helper` compiles in helper processes of this program on NVIDIA's driver
//! (`PipelineCompiler::HelperOnNvidia`), whose pipelines run at full speed from their first
//! dispatch; `main` serves them.

use half::f16;
use std::time::Instant;
use vk_sgmat::{
    Context, ContextOptions, DeviceMatrix, HelperCommand, MatMut, MatRef, Matmul, PipelineCacheFile, PipelineCompiler,
    Prepared,
};

/// (N, K) of the layer's QKV, attention output, gate+up and down projections.
const LAYER: [(usize, usize); 4] = [(12288, 4096), (4096, 4096), (22016, 4096), (4096, 11008)];

struct Gemm {
    a: DeviceMatrix<f16>,
    w: DeviceMatrix<f16>,
    c: DeviceMatrix<f32>,
    shape: (usize, usize, usize),
}

/// Small integers: the checked element is exact in f16 inputs and f32 sums.
fn ints(len: usize, seed: usize) -> Vec<f16> {
    (0..len)
        .map(|i| f16::from_f32(((i * 7 + seed) % 5) as f32 - 2.0))
        .collect()
}

/// A fresh context without a pipeline cache on disk: every pipeline is compiled, here or by
/// `compiler`.
fn fresh(compiler: &PipelineCompiler) -> anyhow::Result<Context> {
    Ok(Context::with_options(ContextOptions {
        pipeline_cache: PipelineCacheFile::Off,
        pipeline_compiler: compiler.clone(),
        ..Default::default()
    })?)
}

fn layer(ctx: &Context, m: usize, scale: usize) -> anyhow::Result<Vec<Gemm>> {
    let mut out = Vec::new();
    for (i, &(n, k)) in LAYER.iter().enumerate() {
        let (n, k) = (n / scale, k / scale);
        out.push(Gemm {
            a: ctx.upload(MatRef::new(&ints(m * k, i), m, k))?,
            w: ctx.upload(MatRef::col_major(&ints(k * n, i + 1), k, n))?,
            c: ctx.zeros::<f32>(m, n)?,
            shape: (m, n, k),
        });
    }
    Ok(out)
}

fn prepare<'a>(ctx: &'a Context, g: &'a mut Gemm) -> vk_sgmat::Result<Prepared<'a>> {
    ctx.prepare(&Matmul::new(), &g.a, &g.w, &mut g.c)
}

/// Runs each prepared GEMM once.
fn run_all(prepared: Vec<Prepared<'_>>) -> anyhow::Result<()> {
    for p in &prepared {
        p.run()?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    // This program is its own compiling helper: started as one, it serves and exits here.
    vk_sgmat::serve_helper_if_asked();
    let m: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(0);
    let (m, scale) = if m == 0 { (33, 64) } else { (m, 1) };
    let compiler = match std::env::args().nth(2).as_deref() {
        Some("helper") => PipelineCompiler::HelperOnNvidia(
            HelperCommand::this_program().ok_or_else(|| anyhow::anyhow!("this platform cannot name this program"))?,
        ),
        None => PipelineCompiler::InProcess,
        Some(other) => anyhow::bail!("second argument {other:?}: give `helper` or nothing"),
    };

    let ctx = fresh(&compiler)?;
    println!("device: {}", ctx.device_info().name);
    let mut gemms = layer(&ctx, m, scale)?;
    let t = Instant::now();
    let prepared: Vec<Prepared<'_>> = gemms.iter_mut().map(|g| prepare(&ctx, g)).collect::<Result<_, _>>()?;
    let serial = t.elapsed().as_secs_f64();
    let made = ctx.pipeline_count();
    run_all(prepared)?;
    check(&ctx, &gemms)?;
    drop((gemms, ctx));

    let ctx = fresh(&compiler)?;
    let mut gemms = layer(&ctx, m, scale)?;
    let t = Instant::now();
    let prepared: Vec<Prepared<'_>> = std::thread::scope(|s| {
        let handles: Vec<_> = gemms.iter_mut().map(|g| s.spawn(|| prepare(&ctx, g))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a preparing thread panicked"))
            .collect::<Result<_, _>>()
    })?;
    let parallel = t.elapsed().as_secs_f64();
    run_all(prepared)?;
    check(&ctx, &gemms)?;
    println!(
        "{} GEMMs of M = {m} ({made} pipelines): prepared one after another in {:.0} ms, on {} threads in {:.0} ms ({:.2}x); results checked",
        LAYER.len(),
        serial * 1e3,
        LAYER.len(),
        parallel * 1e3,
        serial / parallel
    );
    let report = ctx.compile_report();
    if report.compiled_here > 0 {
        println!(
            "compiled in this process (the threaded pass): {} pipelines, {:.0} ms of creation in all, the longest {:.0} ms",
            report.compiled_here,
            report.compile_time.as_secs_f64() * 1e3,
            report.longest_compile.as_secs_f64() * 1e3
        );
    }
    if report.from_helper > 0 || report.failures > 0 {
        println!(
            "compiled by helpers: {} pipelines in {} processes; failed: {} ({})",
            report.from_helper,
            report.helpers_started,
            report.failures,
            report.last_failure.as_deref().unwrap_or("none")
        );
    }
    Ok(())
}

/// C[m-1][n-1] of each GEMM against the CPU (exact: small integers).
fn check(ctx: &Context, gemms: &[Gemm]) -> anyhow::Result<()> {
    for (i, g) in gemms.iter().enumerate() {
        let (m, n, k) = g.shape;
        let mut c = vec![0.0f32; m * n];
        ctx.download(&g.c, MatMut::new(&mut c, m, n))?;
        let (a, w) = (ints(m * k, i), ints(k * n, i + 1));
        // W is column-major K x N: column j is w[j*k..].
        let want: f32 = (0..k)
            .map(|p| a[(m - 1) * k + p].to_f32() * w[(n - 1) * k + p].to_f32())
            .sum();
        anyhow::ensure!(c[m * n - 1] == want, "GEMM {i}: {} != {want}", c[m * n - 1]);
    }
    Ok(())
}
