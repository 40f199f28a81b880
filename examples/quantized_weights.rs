//! A layer whose weight is held in a ggml block format, as a GGUF file stores it: decode (one
//! token: the matrix-vector kernel reads the blocks themselves) and prefill (a batch of tokens:
//! the blocks are dequantized into a scratch copy, then multiplied on the matrix units), each
//! checked against the CPU: the dequantized weight times the activations in f64; then decode
//! with f16 activations, rounded to 8 bits for packed dot products by default; then two
//! experts of a mixture, grouped.
//!
//! `cargo run --release --example quantized_weights -- q4_K`; the weight here comes from
//! `vk_sgmat::quant::quantize` (a model's would be the tensor's bytes from its GGUF file).

use anyhow::{ensure, Result};
use vk_sgmat::quant::{dequantize, quantize, QuantType};
use vk_sgmat::{Context, MatMut, MatRef, Matmul};

fn main() -> Result<()> {
    let quant = QuantType::parse(&std::env::args().nth(1).unwrap_or_else(|| "q4_K".into()))?;
    let ctx = Context::new()?;
    // An nn.Linear weight: N output features of K inputs, K a whole number of blocks.
    let (n, k) = (384, 4 * quant.block_values());
    let values: Vec<f32> = (0..n * k).map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0).collect();
    let blocks = quantize(quant, &values)?;
    let w = ctx.upload_quantized(quant, n, k, &blocks)?;
    let mut weight = vec![0.0f32; n * k];
    dequantize(quant, &blocks, &mut weight)?;
    println!(
        "{} on {}: {n}x{k} weight in {} bytes ({:.2} bits a value)",
        quant,
        ctx.device_info().name,
        w.bytes(),
        8.0 * w.bytes() as f64 / (n * k) as f64
    );
    for tokens in [1, 64] {
        let x: Vec<f32> = (0..tokens * k).map(|i| ((i * 13 % 29) as f32 / 14.0) - 1.0).collect();
        let dx = ctx.upload(MatRef::new(&x, tokens, k))?;
        let mut dy = ctx.zeros::<f32>(tokens, n)?;
        // y = x * w^T, the weight read exactly as its f32 values.
        let op = Matmul::new();
        let prepared = ctx.prepare(&op, &dx, w.t().as_f32(), &mut dy)?;
        prepared.run()?;
        let mut y = vec![0.0f32; tokens * n];
        ctx.download(&dy, MatMut::new(&mut y, tokens, n))?;
        let mut worst = 0.0f64;
        for t in 0..tokens {
            for j in 0..n {
                let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), i| {
                    let p = f64::from(x[t * k + i]) * f64::from(weight[j * k + i]);
                    (d + p, s + p.abs())
                });
                worst = worst.max((f64::from(y[t * n + j]) - dot).abs() / mag.max(f64::MIN_POSITIVE));
            }
        }
        let kernels: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
        println!(
            "{tokens} token(s): {} -> largest error {worst:.2e} of the products' magnitude",
            kernels.join(", ")
        );
        ensure!(worst < 1e-5, "{quant}, {tokens} tokens: error {worst:e}");
    }
    // Decode with f16 activations, as a model runs it: by default they are rounded to 8 bits
    // per block of 32 and multiplied four at a time in packed dot products (as ggml does;
    // GemmOptions::int8_activations turns it off), judged by ggml's own metric, the normalised
    // mean squared error against the exact product.
    let x: Vec<half::f16> = (0..k)
        .map(|i| half::f16::from_f32(((i * 13 % 29) as f32 / 14.0) - 1.0))
        .collect();
    let dx = ctx.upload(MatRef::new(&x, 1, k))?;
    let mut dy = ctx.zeros::<f32>(1, n)?;
    let prepared = ctx.prepare(&Matmul::new(), &dx, w.t(), &mut dy)?;
    prepared.run()?;
    let mut y = vec![0.0f32; n];
    ctx.download(&dy, MatMut::new(&mut y, 1, n))?;
    let (mut err, mut norm) = (0.0f64, 0.0f64);
    for (j, got) in y.iter().enumerate() {
        let dot: f64 = (0..k)
            .map(|i| f64::from(x[i].to_f32()) * f64::from(weight[j * k + i]))
            .sum();
        err += (f64::from(*got) - dot).powi(2);
        norm += dot * dot;
    }
    let nmse = err / norm.max(f64::MIN_POSITIVE);
    let kernels: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
    println!("1 token, f16 activations: {} -> NMSE {nmse:.2e}", kernels.join(", "));
    ensure!(nmse <= 5e-4, "{quant}, f16 activations: NMSE {nmse:e}");
    experts(&ctx, quant, &values, (n, k))
}

/// A mixture of two experts, as a GGUF file holds an MoE layer's weights (one tensor of the
/// experts back to back): the first token routed to expert 0, the next 40 to expert 1, run as
/// one grouped GEMM (the lone token streams its expert's blocks, the 40 multiply a dense copy
/// of theirs), each row checked against its own expert on the CPU.
fn experts(ctx: &Context, quant: QuantType, values: &[f32], (n, k): (usize, usize)) -> Result<()> {
    let two: Vec<f32> = values.iter().chain(values.iter().rev()).copied().collect();
    let blocks = quantize(quant, &two)?;
    let w = ctx.upload_quantized_experts(quant, 2, n, k, &blocks)?;
    let mut weights = vec![0.0f32; 2 * n * k];
    dequantize(quant, &blocks, &mut weights)?;
    let rows = [1usize, 40];
    let tokens = rows.iter().sum::<usize>();
    let x: Vec<f32> = (0..tokens * k).map(|i| ((i * 7 % 23) as f32 / 11.0) - 1.0).collect();
    let dx = ctx.upload(MatRef::new(&x, tokens, k))?;
    let mut dy = ctx.zeros::<f32>(tokens, n)?;
    ctx.run(&Matmul::new().grouped(&rows), &dx, w.t().as_f32(), &mut dy)?;
    let mut y = vec![0.0f32; tokens * n];
    ctx.download(&dy, MatMut::new(&mut y, tokens, n))?;
    let mut worst = 0.0f64;
    for t in 0..tokens {
        let expert = &weights[usize::from(t >= rows[0]) * n * k..][..n * k];
        for j in 0..n {
            let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), i| {
                let p = f64::from(x[t * k + i]) * f64::from(expert[j * k + i]);
                (d + p, s + p.abs())
            });
            worst = worst.max((f64::from(y[t * n + j]) - dot).abs() / mag.max(f64::MIN_POSITIVE));
        }
    }
    println!("2 experts, groups {rows:?}: largest error {worst:.2e} of the products' magnitude");
    ensure!(worst < 1e-5, "{quant}, experts: error {worst:e}");
    Ok(())
}
