//! Batched and grouped GEMM: attention scores for every head in one dispatch, a weight shared by
//! a batch, and a mixture-of-experts layer (its sizes from the host, then counted on the device);
//! each checked against a CPU product.

use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{BatchMut, BatchRef, Context, GemmOptions, MatMut, MatRef};

/// Small integers: every product below is exact in f16 inputs and f32 sums.
fn ints(len: usize, seed: usize) -> Vec<f16> {
    (0..len)
        .map(|i| f16::from_f32(((i * 7 + seed) % 5) as f32 - 2.0))
        .collect()
}

fn main() -> anyhow::Result<()> {
    let ctx = Context::new()?;
    println!("device: {}", ctx.device_info().name);

    // Scores S[h] = Q[h] K[h]^T for 8 heads of 33 tokens of dimension 16: one dispatch.
    let (heads, seq, dim) = (8, 33, 16);
    let (q, k) = (ints(heads * seq * dim, 1), ints(heads * seq * dim, 2));
    let mut s = vec![0.0f32; heads * seq * seq];
    let options = GemmOptions::default();
    ctx.run(
        &Matmul::with_options(&options),
        BatchRef::new(&q, heads, seq, dim),
        BatchRef::new(&k, heads, seq, dim).t(),
        BatchMut::new(&mut s, heads, seq, seq),
    )?;
    for h in [0, heads - 1] {
        for (i, j) in [(0, 0), (seq - 1, 5)] {
            let at = |x: &[f16], r: usize, c: usize| x[(h * seq + r) * dim + c].to_f32();
            let want: f32 = (0..dim).map(|d| at(&q, i, d) * at(&k, j, d)).sum();
            assert_eq!(s[(h * seq + i) * seq + j], want, "head {h} ({i}, {j})");
        }
    }
    println!("{heads} heads of {seq}x{seq} scores: checked");

    // A mixture-of-experts layer: 4 experts, ragged token counts (one expert idle).
    let rows = [20, 0, 7, 13];
    let (tokens, d_in, d_out) = (rows.iter().sum::<usize>(), 24, 40);
    let (x, w) = (ints(tokens * d_in, 3), ints(rows.len() * d_in * d_out, 4));
    let mut y = vec![0.0f32; tokens * d_out];
    ctx.run(
        &Matmul::with_options(&options).grouped(&rows),
        MatRef::new(&x, tokens, d_in),
        BatchRef::new(&w, rows.len(), d_in, d_out),
        MatMut::new(&mut y, tokens, d_out),
    )?;
    // Token 27 is the first of expert 3 (after 20 + 0 + 7 tokens).
    let want: f32 = (0..d_in)
        .map(|p| x[27 * d_in + p].to_f32() * w[(3 * d_in + p) * d_out + 9].to_f32())
        .sum();
    assert_eq!(y[27 * d_out + 9], want);
    println!("experts {rows:?}: checked");

    // The same layer with the tokens per expert counted on the GPU (as a router would): the
    // grouped GEMM reads the counts there, with no trip through the host.
    let counts: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let counts = ctx.upload(MatRef::new(&counts, 1, counts.len()))?;
    let (dx, dw) = (
        ctx.upload(MatRef::new(&x, tokens, d_in))?,
        ctx.upload_batch(BatchRef::new(&w, rows.len(), d_in, d_out))?,
    );
    let mut dy = ctx.zeros::<f32>(tokens, d_out)?;
    ctx.run(
        &Matmul::with_options(&options).grouped_by_device_counts(&counts),
        &dx,
        &dw,
        &mut dy,
    )?;
    let mut y2 = vec![0.0f32; tokens * d_out];
    ctx.download(&dy, MatMut::new(&mut y2, tokens, d_out))?;
    assert_eq!(y2, y);
    println!("experts counted on the device: the same result");
    Ok(())
}
