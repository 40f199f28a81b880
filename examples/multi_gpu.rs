//! One GEMM over every GPU of the machine (`VK_SGMAT_DEVICE=0,1` picks some): first with host
//! operands, then with pinned host operands (copied in place by the devices), then with operands
//! kept on the devices for a second GEMM that reuses the first's result where it lies. On a machine with one device, that device does all of it. Every element
//! is checked exactly (small integers).
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{GemmOptions, Layout, MatMut, MatRef, MultiContext, Role, SplitKind};

fn product(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

fn main() -> anyhow::Result<()> {
    let mc = MultiContext::new()?;
    for (i, ctx) in mc.contexts().iter().enumerate() {
        println!("device {i}: {} (weight {:.2})", ctx.device_info().name, mc.weights()[i]);
    }
    let (m, n, k, p) = (300, 200, 64, 50);
    let a: Vec<f16> = (0..m * k).map(|i| f16::from_f32((i % 7) as f32 - 3.0)).collect();
    let b: Vec<f16> = (0..k * n).map(|i| f16::from_f32((i % 5) as f32 - 2.0)).collect();
    let w: Vec<f32> = (0..n * p).map(|i| (i % 3) as f32 - 1.0).collect();
    let to_f32 = |v: &[f16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
    let want_c = product(&to_f32(&a), &to_f32(&b), (m, n, k));
    let want_d = product(&want_c, &w, (m, p, n));

    // Host operands: cut, sent, multiplied and gathered in one call.
    let mut c = vec![0.0f32; m * n];
    mc.run(
        &Matmul::new(),
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut c, m, n),
    )?;
    anyhow::ensure!(c == want_c, "host-operand GEMM differs from the reference");

    // Pinned host operands: imported into the devices once, read and written in place.
    let mut pa = mc.pinned_matrix::<f16>(m, k, Layout::RowMajor)?;
    pa.data_mut().copy_from_slice(&a);
    let mut pb = mc.pinned_matrix::<f16>(k, n, Layout::RowMajor)?;
    pb.data_mut().copy_from_slice(&b);
    let mut pc = mc.pinned_matrix::<f32>(m, n, Layout::RowMajor)?;
    mc.run(&Matmul::with_options(&GemmOptions::default()), &pa, &pb, &mut pc)?;
    anyhow::ensure!(pc.data() == want_c, "pinned-operand GEMM differs from the reference");
    let imported = mc.contexts().iter().filter(|ctx| pc.imported_on(ctx)).count();
    println!(
        "pinned operands: imported on {imported} of {} devices",
        mc.contexts().len()
    );

    // Resident operands: C stays cut by rows and is the next GEMM's A; only W moves.
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows)?;
    let da = mc.distribute(MatRef::new(&a, m, k), &split, Role::A)?;
    let db = mc.distribute(MatRef::new(&b, k, n), &split, Role::B)?;
    let mut dc = mc.zeros::<f32>(&split)?;
    mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)?;
    let next = mc.split::<f32, f32>(m, p, n, SplitKind::Rows)?;
    let dw = mc.distribute(MatRef::new(&w, n, p), &next, Role::B)?;
    let mut dd = mc.zeros::<f32>(&next)?;
    mc.run(&Matmul::with_options(&GemmOptions::default()), &dc, &dw, &mut dd)?;
    let mut d = vec![0.0f32; m * p];
    mc.gather(&dd, MatMut::new(&mut d, m, p))?;
    anyhow::ensure!(d == want_d, "resident chain differs from the reference");
    println!(
        "{} devices: a host-operand GEMM, a pinned one and two chained resident GEMMs, {} elements exact",
        mc.contexts().len(),
        2 * m * n + m * p
    );
    Ok(())
}
