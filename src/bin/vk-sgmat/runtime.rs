//! `vk-sgmat runtime`: what the runtime costs beyond the kernels. Host time per enqueued GEMM,
//! how busy 1000 back-to-back small GEMMs keep the GPU, a transformer layer's GEMMs as one
//! stream, and the overhead of one blocking call (docs/perf/JOURNAL.md, "Runtime").

use crate::verify::{compare, random_matrix, reference, rows_to_check, Rng};
use anyhow::Result;
use half::f16;
use std::time::{Duration, Instant};
use vk_sgmat::{median, Context, DeviceMatrix, Element, GemmOptions, MatRef};
use vk_sgmat::{Matmul, Timing, Timings};

/// The figures, as printed in the `runtime` line.
#[derive(Debug, serde::Serialize)]
pub struct RuntimeReport {
    pub device: String,
    /// Host time per GEMM enqueued on a stream (1000 GEMMs of `small`), microseconds.
    pub host_us_per_gemm: f64,
    /// 1000 GEMMs of `small` with a barrier between each: their summed GPU time (1000 x one
    /// GEMM's, timed alone) over the batch's GPU span.
    pub busy_serial: f64,
    /// The same without barriers (independent outputs): may exceed 1 where GEMMs overlap.
    pub busy_independent: f64,
    /// The side of the small GEMMs.
    pub small: usize,
    /// One Llama-7B layer's GEMMs at 512 tokens, f16 -> f16, as one stream (median GPU span).
    pub layer_stream_ms: f64,
    /// The same from submission to completion on the host.
    pub layer_stream_wall_ms: f64,
    /// torch.matmul on the same shapes, same call (from `--torch`), if given.
    pub layer_torch_ms: Option<f64>,
    /// One blocking 4096^3 f16->f32 `Context::run` on device matrices: median submit-to-completion minus median GPU time.
    pub call_overhead_us_4096: f64,
    pub call_wall_us_4096: f64,
    pub call_gpu_us_4096: f64,
    /// Where one call's time goes.
    pub breakdown: Vec<CallBreakdown>,
    /// The side of the blocking GEMM (4096; smaller with `--quick`).
    pub call_size: usize,
    /// The layer's shapes were divided by this (1; 16 with `--quick`).
    pub layer_scale: usize,
    /// Whether the stream's results (two small GEMMs, every layer GEMM on sampled rows) matched
    /// the f64 reference.
    pub verified: bool,
}

/// One GEMM alone on a stream, medians in microseconds: host time to plan and record it, to
/// submit it, its GPU time alone (timestamps), and submission-to-completion minus that (launch
/// latency and noticing completion).
#[derive(Debug, serde::Serialize)]
pub struct CallBreakdown {
    pub queue: usize,
    pub enqueue_us: f64,
    pub submit_us: f64,
    pub gpu_alone_us: f64,
    pub unaccounted_us: f64,
}

/// The layer's GEMMs in order: (M, N, K) for QKV, output, gate+up, down.
pub const LAYER: [(usize, usize, usize); 4] = [
    (512, 12288, 4096),
    (512, 4096, 4096),
    (512, 22016, 4096),
    (512, 4096, 11008),
];

fn upload_random<T: Element>(ctx: &Context, rng: &mut Rng, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
    Ok(upload_kept(ctx, rng, rows, cols)?.0)
}

/// A random row-major device matrix and its host copy.
fn upload_kept<T: Element>(
    ctx: &Context,
    rng: &mut Rng,
    rows: usize,
    cols: usize,
) -> Result<(DeviceMatrix<T>, Vec<T>)> {
    let (data, _) = random_matrix::<T>(rng, rows, cols, vk_sgmat::Layout::RowMajor, 0);
    Ok((ctx.upload(MatRef::new(&data, rows, cols))?, data))
}

/// Downloads `c` through a stream and checks sampled rows against `a * b` in f64.
fn verify<TA: Element, TC: Element>(
    ctx: &Context,
    rng: &mut Rng,
    (a, b): (&[TA], &[TA]),
    c: &DeviceMatrix<TC>,
    (m, n, k): (usize, usize, usize),
) -> Result<bool> {
    let mut s = ctx.stream()?;
    let download = s.download(c)?;
    s.submit()?;
    let got = download.wait()?;
    let rows = rows_to_check(m, n, 1 << 16, 16, rng);
    let (want, magnitude) =
        reference::<TA, TA, TC>(&MatRef::new(a, m, k), &MatRef::new(b, k, n), None, 1.0, 0.0, &rows);
    let check = compare(&got, n, n, &rows, &want, &magnitude, k);
    if !check.passed {
        eprintln!("runtime: {m}x{n}x{k} {}->{} failed: {check:?}", TA::TYPE, TC::TYPE);
    }
    Ok(check.passed)
}

/// Every figure of the report: the small GEMMs on a stream, the layer, the blocking call.
pub fn measure(ctx: &Context, quick: bool, torch_layer_ms: Option<f64>) -> Result<RuntimeReport> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let small = small_gemms(ctx, &mut rng, quick)?;
    let layer = layer(ctx, &mut rng, quick)?;
    let call = blocking_call(ctx, &mut rng, quick)?;
    Ok(RuntimeReport {
        device: ctx.device_info().name.clone(),
        host_us_per_gemm: small.host_us,
        busy_serial: small.busy.0,
        busy_independent: small.busy.1,
        small: small.side,
        layer_stream_ms: layer.span_ms,
        layer_stream_wall_ms: layer.wall_ms,
        layer_torch_ms: torch_layer_ms,
        call_overhead_us_4096: (call.wall_s - call.gpu_s) * 1e6,
        call_wall_us_4096: call.wall_s * 1e6,
        call_gpu_us_4096: call.gpu_s * 1e6,
        breakdown: call.breakdown,
        call_size: call.side,
        layer_scale: layer.scale,
        verified: small.verified && layer.verified,
    })
}

/// Small GEMMs on one stream: host time per enqueued GEMM, and the GPU's busy fraction with
/// and without a barrier between them (against one GEMM timed alone).
struct SmallGemms {
    side: usize,
    host_us: f64,
    busy: (f64, f64),
    verified: bool,
}

fn small_gemms(ctx: &Context, rng: &mut Rng, quick: bool) -> Result<SmallGemms> {
    let opts = GemmOptions::default();
    let op = Matmul::with_options(&opts);
    let (small, count) = if quick { (64, 100) } else { (256, 1000) };
    // Time one alone, then `count` on a stream, serialised and independent.
    let (a, a_host) = upload_kept::<f16>(ctx, rng, small, small)?;
    let (b, b_host) = upload_kept::<f16>(ctx, rng, small, small)?;
    let mut outs: Vec<DeviceMatrix<f32>> = (0..count)
        .map(|_| ctx.zeros::<f32>(small, small))
        .collect::<vk_sgmat::Result<_>>()?;
    ctx.prepare(&op, &a, &b, &mut outs[0])
        .and_then(|p| p.time(Timing::WarmUp(Duration::from_millis(200), Duration::from_secs(2))))
        .map(|t| t.median())?;
    let single = median(
        &mut ctx
            .prepare(&op, &a, &b, &mut outs[0])
            .and_then(|p| p.time(Timing::Runs(50)))
            .map(Timings::into_seconds)?,
    );
    let run = |serial: bool, outs: &mut [DeviceMatrix<f32>]| {
        ctx.stream().and_then(|mut s| {
            s.timed(|s| {
                for (i, c) in outs.iter_mut().enumerate() {
                    if serial && i > 0 {
                        s.barrier()?;
                    }
                    s.run(&op, &a, &b, c)?;
                }
                Ok(outs.len())
            })
        })
    };
    run(true, &mut outs)?; // warm: first use of the stream path
    let mut serial = Vec::new();
    let mut independent = Vec::new();
    for _ in 0..5 {
        serial.push(run(true, &mut outs)?);
        independent.push(run(false, &mut outs)?);
    }
    let mut host: Vec<f64> = serial
        .iter()
        .chain(&independent)
        .map(|t| t.enqueue_s / t.operations as f64)
        .collect();
    let busy = |v: &[vk_sgmat::StreamTiming]| {
        let mut spans: Vec<f64> = v.iter().map(|t| t.gpu_span_s).collect();
        count as f64 * single / median(&mut spans)
    };
    let shape = (small, small, small);
    let verified = verify(ctx, rng, (&a_host, &b_host), &outs[0], shape)?
        & verify(ctx, rng, (&a_host, &b_host), &outs[count - 1], shape)?;
    Ok(SmallGemms {
        side: small,
        host_us: median(&mut host) * 1e6,
        busy: (busy(&serial), busy(&independent)),
        verified,
    })
}

/// A Llama-7B layer's GEMMs at 512 tokens (divided by `scale`), f16 -> f16, as one stream:
/// median GPU span and submission-to-completion wall time, once steady.
struct Layer {
    scale: usize,
    span_ms: f64,
    wall_ms: f64,
    verified: bool,
}

fn layer(ctx: &Context, rng: &mut Rng, quick: bool) -> Result<Layer> {
    let opts = GemmOptions::default();
    let op = Matmul::with_options(&opts);
    // The four GEMMs in order, a barrier between each (as a real layer's data flow).
    let mut layer = Vec::new();
    let mut hosts = Vec::new();
    let scale = if quick { 16 } else { 1 };
    for &(m, n, k) in &LAYER {
        let (m, n, k) = (m / scale, n / scale, k / scale);
        let (x, x_host) = upload_kept::<f16>(ctx, rng, m, k)?;
        let (w, w_host) = upload_kept::<f16>(ctx, rng, k, n)?;
        let y = ctx.zeros::<f16>(m, n)?;
        layer.push((x, w, y));
        hosts.push((x_host, w_host, (m, n, k)));
    }
    let layer_run = |layer: &mut Vec<(DeviceMatrix<f16>, DeviceMatrix<f16>, DeviceMatrix<f16>)>| {
        ctx.stream().and_then(|mut s| {
            s.timed(|s| {
                for (i, (x, w, y)) in layer.iter_mut().enumerate() {
                    if i > 0 {
                        s.barrier()?;
                    }
                    s.run(&op, x, w, y)?;
                }
                Ok(layer.len())
            })
        })
    };
    // Until two runs agree within 3% (after at least 2 s): the driver runs freshly created
    // pipelines slowly for a while, and the layer's shapes take several.
    let start = Instant::now();
    let (min, max) = if quick { (0, 1) } else { (2, 30) };
    let mut last = f64::INFINITY;
    loop {
        let span = layer_run(&mut layer)?.gpu_span_s;
        let steady = (span - last).abs() <= 0.03 * last;
        last = span;
        if (steady && start.elapsed().as_secs() >= min) || start.elapsed().as_secs() >= max {
            break;
        }
    }
    let runs: Vec<_> = (0..if quick { 2 } else { 20 })
        .map(|_| layer_run(&mut layer))
        .collect::<vk_sgmat::Result<_>>()?;
    let mut spans: Vec<f64> = runs.iter().map(|t| t.gpu_span_s).collect();
    let mut walls: Vec<f64> = runs.iter().map(|t| t.submit_to_done_s + t.enqueue_s).collect();
    let mut verified = true;
    for ((_, _, y), (x, w, shape)) in layer.iter().zip(&hosts) {
        verified &= verify(ctx, rng, (x, w), y, *shape)?;
    }
    Ok(Layer {
        scale,
        span_ms: median(&mut spans) * 1e3,
        wall_ms: median(&mut walls) * 1e3,
        verified,
    })
}

/// One blocking `Context::run` of a `side`^3 f16 -> f32 GEMM on device matrices: median wall
/// and GPU time, and where a single call's time goes.
struct BlockingCall {
    side: usize,
    wall_s: f64,
    gpu_s: f64,
    breakdown: Vec<CallBreakdown>,
}

fn blocking_call(ctx: &Context, rng: &mut Rng, quick: bool) -> Result<BlockingCall> {
    let opts = GemmOptions::default();
    let op = Matmul::with_options(&opts);
    let big = if quick { 256 } else { 4096 };
    let a = upload_random::<f16>(ctx, rng, big, big)?;
    let b = upload_random::<f16>(ctx, rng, big, big)?;
    let mut c = ctx.zeros::<f32>(big, big)?;
    ctx.prepare(&op, &a, &b, &mut c)
        .and_then(|p| p.time(Timing::WarmUp(Duration::from_millis(500), Duration::from_secs(3))))
        .map(|t| t.median())?;
    let mut wall = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        ctx.run(&op, &a, &b, &mut c)?;
        wall.push(t.elapsed().as_secs_f64());
    }
    let gpu = median(
        &mut ctx
            .prepare(&op, &a, &b, &mut c)
            .and_then(|p| p.time(Timing::Runs(50)))
            .map(Timings::into_seconds)?,
    );
    // The same GEMM alone, 20 times on one stream, on queue 0 (the blocking calls' queue) and on
    // another queue where the device has one.
    let mut alone = |queue: usize| -> Result<CallBreakdown> {
        let mut s = ctx.stream_on(queue)?;
        let singles: Vec<_> = (0..20)
            .map(|_| {
                s.timed(|s| {
                    s.run(&op, &a, &b, &mut c)?;
                    Ok(1)
                })
            })
            .collect::<vk_sgmat::Result<_>>()?;
        let med =
            |f: &dyn Fn(&vk_sgmat::StreamTiming) -> f64| median(&mut singles.iter().map(f).collect::<Vec<_>>()) * 1e6;
        Ok(CallBreakdown {
            queue: queue % ctx.queue_count(),
            enqueue_us: med(&|t| t.enqueue_s),
            submit_us: med(&|t| t.submit_s),
            gpu_alone_us: med(&|t| t.gpu_span_s),
            unaccounted_us: med(&|t| t.submit_to_done_s - t.gpu_span_s),
        })
    };
    let mut breakdown = vec![alone(0)?];
    if ctx.queue_count() > 1 {
        breakdown.push(alone(1)?);
    }
    Ok(BlockingCall {
        side: big,
        wall_s: median(&mut wall),
        gpu_s: gpu,
        breakdown,
    })
}

/// The report as text, ending with the line for scripts.
pub fn render(r: &RuntimeReport) -> String {
    let torch = r.layer_torch_ms.map_or("na".to_string(), |t| format!("{t:.3}"));
    format!(
        "device: {}\n\
         results of the streams checked against the f64 reference: {}\n\
         host time per enqueued GEMM ({s}^3, {n} on one stream): {:.2} us\n\
         GPU busy, {n} GEMMs of {s}^3 with a barrier between each: {:.3} (independent outputs, no barriers: {:.3})\n\
         Llama-7B layer GEMMs at 512 tokens (shapes / {scale}, f16 -> f16, 4 GEMMs, one stream): {:.3} ms GPU, {:.3} ms host wall; torch.matmul loop: {torch} ms\n\
         blocking {big}^3 f16->f32 Context::run: {:.1} us submit to completion, {:.1} us GPU, overhead {:.1} us\n\
         {}\
         runtime {}: host_us_per_gemm={:.2} busy_1000x256={:.3} layer_stream_ms={:.3} layer_torch_ms={torch} call_overhead_us_4096={:.1}\n",
        r.device,
        if r.verified { "PASS" } else { "FAIL" },
        r.host_us_per_gemm,
        r.busy_serial,
        r.busy_independent,
        r.layer_stream_ms,
        r.layer_stream_wall_ms,
        r.call_wall_us_4096,
        r.call_gpu_us_4096,
        r.call_overhead_us_4096,
        r.breakdown
            .iter()
            .map(|b| format!(
                "the same alone on a stream, queue {}: plan and record {:.1} us, submit {:.1} us, GPU alone {:.1} us, submit to completion minus GPU {:.1} us\n",
                b.queue, b.enqueue_us, b.submit_us, b.gpu_alone_us, b.unaccounted_us
            ))
            .collect::<String>(),
        short_name(&r.device),
        r.host_us_per_gemm,
        r.busy_serial,
        r.layer_stream_ms,
        r.call_overhead_us_4096,
        s = r.small,
        n = if r.small == 256 { 1000 } else { 100 },
        scale = r.layer_scale,
        big = r.call_size,
    )
}

/// "h200" for "NVIDIA H200", else the name without spaces, lower-case.
fn short_name(name: &str) -> String {
    let last = name.split_whitespace().last().unwrap_or(name);
    last.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_for_scripts_has_every_field() {
        let r = RuntimeReport {
            device: "NVIDIA H200".into(),
            host_us_per_gemm: 3.25,
            busy_serial: 0.93,
            busy_independent: 1.4,
            small: 256,
            layer_stream_ms: 1.5,
            layer_stream_wall_ms: 1.6,
            layer_torch_ms: Some(1.2),
            call_overhead_us_4096: 7.0,
            call_wall_us_4096: 540.0,
            call_gpu_us_4096: 533.0,
            breakdown: vec![CallBreakdown {
                queue: 0,
                enqueue_us: 2.0,
                submit_us: 5.0,
                gpu_alone_us: 536.0,
                unaccounted_us: 20.0,
            }],
            call_size: 4096,
            layer_scale: 1,
            verified: true,
        };
        let t = render(&r);
        assert!(
            t.contains("runtime h200: host_us_per_gemm=3.25 busy_1000x256=0.930 layer_stream_ms=1.500 layer_torch_ms=1.200 call_overhead_us_4096=7.0"),
            "{t}"
        );
        let t = render(&RuntimeReport {
            layer_torch_ms: None,
            ..r
        });
        assert!(t.contains("layer_torch_ms=na"), "{t}");
    }
}
