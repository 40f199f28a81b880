//! Streams: a two-layer MLP forward pass (`Y = (X * W1) * W2`) for several batches, every GEMM,
//! upload and download enqueued on one stream and submitted once; no host wait between the
//! GEMMs, and the hidden activations never leave the GPU. Checked against the CPU.
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, GemmOptions, MatRef};

/// Small integers: every product and sum below is exact in f16 and f32.
fn ints(len: usize, seed: usize) -> Vec<f16> {
    (0..len)
        .map(|i| f16::from_f32(((i * 7 + seed * 13) % 5) as f32 - 2.0))
        .collect()
}

fn main() -> anyhow::Result<()> {
    let ctx = Context::new()?;
    let (tokens, d, hidden) = (64, 48, 40);
    let w1 = ints(d * hidden, 1);
    let w2 = ints(hidden * d, 2);
    let mut s = ctx.stream()?;
    // Weights go up once; activations per batch. Uploads copy into staging memory at once.
    let dw1 = s.upload(MatRef::new(&w1, d, hidden))?;
    let dw2 = s.upload(MatRef::new(&w2, hidden, d))?;
    let batches: Vec<Vec<f16>> = (0..4).map(|b| ints(tokens * d, 10 + b)).collect();
    let mut downloads = Vec::new();
    for x in &batches {
        let dx = s.upload(MatRef::new(x, tokens, d))?;
        let mut h = ctx.zeros::<f16>(tokens, hidden)?;
        let mut y = ctx.zeros::<f32>(tokens, d)?;
        s.run(&Matmul::with_options(&GemmOptions::default()), &dx, &dw1, &mut h)?;
        // Reads what the GEMM above wrote: the stream puts a barrier between them, nothing else.
        s.run(&Matmul::with_options(&GemmOptions::default()), &h, &dw2, &mut y)?;
        downloads.push(s.download(&y)?);
        // dx, h and y are dropped here; the stream keeps them alive until the GPU is done.
    }
    let ticket = s.submit()?;
    println!(
        "submitted 8 GEMMs, 6 uploads, 4 downloads in one batch; done yet: {}",
        ticket.is_done()?
    );
    for (x, download) in batches.iter().zip(downloads) {
        let y = download.wait()?;
        for i in 0..tokens {
            for j in 0..d {
                let want: f32 = (0..hidden)
                    .map(|p| {
                        let h: f32 = (0..d)
                            .map(|q| x[i * d + q].to_f32() * w1[q * hidden + p].to_f32())
                            .sum();
                        h * w2[p * d + j].to_f32()
                    })
                    .sum();
                anyhow::ensure!(y[i * d + j] == want, "Y[{i}][{j}] = {} != {want}", y[i * d + j]);
            }
        }
    }
    println!("all {} outputs exact", 4 * tokens * d);
    Ok(())
}
