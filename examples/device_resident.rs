//! Device-resident matrices: upload once, run many GEMMs with alpha and beta, download once.
//! Here `C = A*B` and then `C = 2*A*B - C` (so C ends as A*B), every element checked exactly.
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, GemmOptions, MatMut, MatRef};

fn main() -> anyhow::Result<()> {
    let ctx = Context::new()?;
    let (m, n, k) = (96, 80, 48);
    let a: Vec<f16> = (0..m * k).map(|i| f16::from_f32((i % 7) as f32 - 3.0)).collect();
    let b: Vec<f16> = (0..k * n).map(|i| f16::from_f32((i % 5) as f32 - 2.0)).collect();
    let da = ctx.upload(MatRef::new(&a, m, k))?;
    let db = ctx.upload(MatRef::new(&b, k, n))?;
    let mut dc = ctx.zeros::<f32>(m, n)?;
    ctx.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)?;
    let twice_minus = GemmOptions {
        alpha: 2.0,
        beta: -1.0,
        ..Default::default()
    };
    ctx.run(&Matmul::with_options(&twice_minus), &da, &db, &mut dc)?;
    let mut c = vec![0.0f32; m * n];
    ctx.download(&dc, MatMut::new(&mut c, m, n))?;
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p].to_f32() * b[p * n + j].to_f32()).sum();
            anyhow::ensure!(c[i * n + j] == want, "C[{i}][{j}] = {} != {want}", c[i * n + j]);
        }
    }
    println!(
        "two device-resident GEMMs, one upload of each operand, one download: {} elements exact",
        m * n
    );
    Ok(())
}
