//! Criterion benchmarks of device-resident GEMMs: the context is built once, GPU time comes from
//! timestamp queries (`iter_custom`), throughput is counted as 2*M*N*K FLOP ("elements" below).
//!
//! `stream_enqueue`: host time per GEMM enqueued on a stream. `decode_quantized`: one token of
//! decode on weights in ggml's block formats, both kernel paths. Then one group per element-type
//! pair the device offers (its default config), over square sizes
//! and the LLM shapes 4096x11008x4096, 16x4096x4096 and 4096x4096x256. CPU drivers (lavapipe) get
//! small squares only. `VK_SGMAT_BENCH_SHAPES=MxNxK,...` overrides the shapes.

#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;
use crate::verify::{random_vec, Rng};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use half::{bf16, f16};
use std::time::Duration;
use vk_sgmat::device::DeviceKind;
use vk_sgmat::{ComponentType, Context, Element, GemmOptions, MatRef};
use vk_sgmat::{Matmul, Timing, Timings};

fn shapes(ctx: &Context) -> Vec<(usize, usize, usize)> {
    if let Ok(list) = std::env::var("VK_SGMAT_BENCH_SHAPES") {
        return list
            .split(',')
            .map(|s| {
                let v: Vec<usize> = s.split('x').map(|x| x.parse().expect("MxNxK")).collect();
                (v[0], v[1], v[2])
            })
            .collect();
    }
    if ctx.device_info().kind == DeviceKind::Cpu {
        return vec![(64, 64, 64), (128, 128, 128)];
    }
    let mut v: Vec<_> = [256, 512, 1024, 2048, 4096, 8192]
        .into_iter()
        .map(|s| (s, s, s))
        .collect();
    v.extend([(4096, 11008, 4096), (16, 4096, 4096), (4096, 4096, 256)]);
    v
}

fn group<TA: Element, TC: Element>(c: &mut Criterion, ctx: &Context) {
    let Ok(config) = ctx.choose_config(TA::TYPE, TC::TYPE, None) else {
        return;
    };
    let mut g = c.benchmark_group(format!("gemm_{}_{}", TA::TYPE, TC::TYPE));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut rng = Rng::new(Rng::fresh_seed());
    for (m, n, k) in shapes(ctx) {
        let a: Vec<TA> = random_vec(&mut rng, m * k);
        let b: Vec<TA> = random_vec(&mut rng, k * n);
        let da = ctx.upload(MatRef::new(&a, m, k)).expect("upload A");
        let db = ctx.upload(MatRef::new(&b, k, n)).expect("upload B");
        let mut dc = ctx.zeros::<TC>(m, n).expect("C");
        let options = GemmOptions::default();
        g.throughput(Throughput::Elements(2 * (m * n * k) as u64));
        g.bench_function(BenchmarkId::new(config.to_string(), format!("{m}x{n}x{k}")), |bench| {
            bench.iter_custom(|iters| {
                let mut total = 0.0;
                let mut left = iters;
                while left > 0 {
                    let reps = left.min(256);
                    let t = ctx
                        .prepare(&Matmul::with_options(&options), &da, &db, &mut dc)
                        .and_then(|p| p.time(Timing::Runs(reps as u32)))
                        .map(Timings::into_seconds)
                        .expect("gemm");
                    total += t.iter().sum::<f64>();
                    left -= reps;
                }
                Duration::from_secs_f64(total)
            })
        });
    }
    g.finish();
}

/// Host time per GEMM enqueued on a stream (the runtime's own cost: validate, plan, record), on
/// 256 GEMMs of 64^3 into distinct outputs; the stream is submitted outside the timed part.
fn enqueue(c: &mut Criterion, ctx: &Context) {
    let mut g = c.benchmark_group("stream_enqueue");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    let n = 64;
    let a: Vec<f16> = random_vec(&mut Rng::new(Rng::fresh_seed()), n * n);
    let da = ctx.upload(MatRef::new(&a, n, n)).expect("upload");
    let mut outs: Vec<_> = (0..256).map(|_| ctx.zeros::<f32>(n, n).expect("C")).collect();
    let options = GemmOptions::default();
    g.throughput(Throughput::Elements(1));
    g.bench_function("gemm_64x64x64_f16_f32", |bench| {
        bench.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                let batch = left.min(outs.len());
                let mut s = ctx.stream().expect("stream");
                let start = std::time::Instant::now();
                for c in &mut outs[..batch] {
                    s.run(&Matmul::with_options(&options), &da, &da, c).expect("enqueue");
                }
                total += start.elapsed();
                s.synchronize().expect("run");
                left -= batch;
            }
            total
        })
    });
    g.finish();
}

/// One token of decode on quantized weights (`VK_SGMAT_BENCH_SHAPES` does not apply): f16
/// activations times an `N x K` weight in each main block format, through the default path
/// (activations rounded to 8 bits, packed dot products) and with it off (each weight
/// dequantized to f32); throughput in bytes of blocks as the file holds them.
fn decode_quantized(c: &mut Criterion, ctx: &Context) {
    use vk_sgmat::quant::{quantize, QuantType};
    let (n, k) = if ctx.device_info().kind == DeviceKind::Cpu {
        (256, 1024)
    } else {
        (22016, 4096)
    };
    let mut g = c.benchmark_group("decode_quantized");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut rng = Rng::new(Rng::fresh_seed());
    let values: Vec<f32> = (0..n * k).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect();
    let x: Vec<f16> = random_vec(&mut rng, k);
    let dx = ctx.upload(MatRef::new(&x, 1, k)).expect("upload x");
    let mut dy = ctx.zeros::<f32>(1, n).expect("y");
    for q in [
        QuantType::Q4K,
        QuantType::Q6K,
        QuantType::Q8_0,
        QuantType::Q4_0,
        QuantType::Mxfp4,
    ] {
        let w = ctx
            .upload_quantized(q, n, k, &quantize(q, &values).expect("quantize"))
            .expect("upload w");
        g.throughput(Throughput::Bytes(w.bytes() as u64));
        for int8 in [None, Some(false)] {
            let options = GemmOptions {
                int8_activations: int8,
                ..Default::default()
            };
            let path = if int8.is_none() { "8-bit x" } else { "f32" };
            g.bench_function(BenchmarkId::new(format!("{q} {path}"), format!("1x{n}x{k}")), |bench| {
                bench.iter_custom(|iters| {
                    let prepared = ctx
                        .prepare(&Matmul::with_options(&options), &dx, w.t(), &mut dy)
                        .expect("prepare");
                    let t = prepared
                        .time(Timing::Runs(iters.clamp(1, 1 << 16) as u32))
                        .map(Timings::into_seconds)
                        .expect("decode");
                    Duration::from_secs_f64(t.iter().sum::<f64>() * iters as f64 / t.len() as f64)
                })
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let ctx = Context::new().expect("a Vulkan device with cooperative matrices");
    enqueue(c, &ctx);
    decode_quantized(c, &ctx);
    use ComponentType::*;
    let pairs: Vec<_> = ctx
        .configs()
        .iter()
        .map(|c| (c.component_type, c.result_type))
        .collect();
    let has = |p| pairs.contains(&p);
    if has((F16, F32)) {
        group::<f16, f32>(c, &ctx);
    }
    if has((F16, F16)) {
        group::<f16, f16>(c, &ctx);
    }
    if has((Bf16, F32)) {
        group::<bf16, f32>(c, &ctx);
    }
    if has((I8, I32)) {
        group::<i8, i32>(c, &ctx);
    }
    if has((U8, U32)) {
        group::<u8, u32>(c, &ctx);
    }
}

criterion_group!(gemm, benches);
criterion_main!(gemm);
