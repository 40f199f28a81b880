//! The library call in a few lines: multiply two f16 matrices into f32 and check one element.
use half::f16;
use vk_sgmat::{gemm, MatMut, MatRef};

fn main() -> anyhow::Result<()> {
    let (m, n, k) = (257, 129, 65);
    let a: Vec<f16> = (0..m * k).map(|i| f16::from_f32((i % 7) as f32 * 0.25)).collect();
    let b: Vec<f16> = (0..k * n).map(|i| f16::from_f32((i % 5) as f32 * 0.5)).collect();
    let mut c = vec![0.0f32; m * n];
    gemm(MatRef::new(&a, m, k), MatRef::new(&b, k, n), MatMut::new(&mut c, m, n))?;
    let (i, j) = (m - 1, n - 1);
    let expect: f32 = (0..k).map(|p| a[i * k + p].to_f32() * b[p * n + j].to_f32()).sum();
    println!("C[{i}][{j}] = {} (expected {expect})", c[i * n + j]);
    anyhow::ensure!(
        (c[i * n + j] - expect).abs() <= 1e-3 * expect.abs().max(1.0),
        "wrong result"
    );
    Ok(())
}
