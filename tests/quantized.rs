//! Weights in ggml's block formats on the device (issue 47): every format's values as the GEMM
//! reads them equal the CPU reference dequantization bit for bit (f32) or rounded once (f16);
//! layers `y = x * w^T` (and `w * x`) match an f64 product of the dequantized weights at odd
//! shapes (M and N = 1, 3, 17; K a whole number of blocks only), with alpha/beta, a
//! column-major C, a fused bias and on a stream; and what does not fit is a typed error.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{compare_rounded, reference, unit_roundoff, Rng};
use common::{assert_no_validation_messages, context, limited_context};
use half::f16;
use vk_sgmat::quant::{dequantize, quantize, QuantType};
use vk_sgmat::{
    Activation, Axis, ComponentType, ComputeMode, Context, DeviceMatrix, Element, Error, GemmOptions, Layout, MatMut,
    MatRef, Matmul, QuantMatrix,
};

/// Byte offsets of each format's f16 scale fields (d, and the minimum where it has one).
fn half_fields(q: QuantType) -> &'static [usize] {
    match q {
        QuantType::Q4_1 | QuantType::Q5_1 | QuantType::Q4K | QuantType::Q5K => &[0, 2],
        QuantType::Q2K => &[80, 82],
        QuantType::Q3K => &[108],
        QuantType::Q6K => &[208],
        QuantType::Mxfp4 => &[],
        _ => &[0],
    }
}

/// `rows x cols` values' worth of random blocks: every bit of the codes and packed scales
/// random, the f16 scale fields random finite halves (subnormals included), MXFP4's exponent
/// byte random with its values finite (2..=250: below 2 its scale is an f32 subnormal, which
/// a GPU may flush; above 250 a code times it overflows). With `f16_range`, scales of at most 4
/// (MXFP4: 2^12) keep every value within f16's range. NVFP4's E4M3 scale bytes are random
/// whole (NaN's 0x7f, bit 7 and subnormals included): 6 times the largest, 240, fits f16.
fn random_blocks(q: QuantType, rows: usize, cols: usize, f16_range: bool, rng: &mut Rng) -> Vec<u8> {
    let len = rows * q.bytes_for(cols).unwrap();
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    for block in bytes.chunks_exact_mut(q.block_bytes()) {
        for &at in half_fields(q) {
            let h = loop {
                let h = f16::from_bits(rng.next_u64() as u16);
                if h.is_finite() && (!f16_range || h.to_f32().abs() <= 4.0) {
                    break h;
                }
            };
            block[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
        if q == QuantType::Mxfp4 {
            block[0] = rng.int(2, if f16_range { 140 } else { 250 }) as u8;
        }
    }
    bytes
}

/// The dequantized values of `blocks` (`rows x cols`, row-major), on the CPU.
fn values(q: QuantType, blocks: &[u8], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; rows * cols];
    dequantize(q, blocks, &mut out).unwrap();
    out
}

fn exact() -> GemmOptions {
    GemmOptions {
        compute: ComputeMode::Exact,
        ..Default::default()
    }
}

/// `w * I` on the device, `w` read as f32 (exactly) or as f16: the values as the GEMM sees them.
fn seen_as(ctx: &Context, w: &QuantMatrix, as_f32: bool) -> Vec<f32> {
    let k = w.cols();
    let mut c = ctx.zeros::<f32>(w.rows(), k).unwrap();
    if as_f32 {
        let eye = ctx.upload(MatRef::new(&identity::<f32>(k), k, k)).unwrap();
        ctx.run(&Matmul::with_options(&exact()), w.as_ref().as_f32(), &eye, &mut c)
    } else {
        let eye = ctx.upload(MatRef::new(&identity::<f16>(k), k, k)).unwrap();
        ctx.run(&Matmul::new(), w, &eye, &mut c)
    }
    .unwrap();
    download(ctx, &c)
}

fn identity<T: Element>(k: usize) -> Vec<T> {
    (0..k * k)
        .map(|i| T::from_f64(if i / k == i % k { 1.0 } else { 0.0 }))
        .collect()
}

fn download(ctx: &Context, c: &DeviceMatrix<f32>) -> Vec<f32> {
    let (outer, inner) = c.layout().outer_inner(c.rows(), c.cols());
    let mut out = vec![f32::NAN; outer * inner];
    ctx.download(c, MatMut::new(&mut out, outer, inner)).unwrap();
    out
}

#[test]
fn every_format_reads_as_the_reference_values_bit_for_bit() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    // Two blocks per row, odd rows; then rows that straddle the dequantizing pass's tiles of
    // 128 and 256 units (32 values each), the last tile part full.
    let shapes = |q: QuantType| [(5, 2), (37, if q.block_values() == 32 { 9 } else { 3 })];
    for (q, (rows, blocks_per_row)) in QuantType::ALL.into_iter().flat_map(|q| shapes(q).map(|s| (q, s))) {
        let cols = blocks_per_row * q.block_values();
        let blocks = random_blocks(q, rows, cols, false, &mut rng);
        let want = values(q, &blocks, rows, cols);
        let w = ctx.upload_quantized(q, rows, cols, &blocks).unwrap();
        assert_eq!((w.rows(), w.cols(), w.bytes()), (rows, cols, blocks.len()));
        // f32: the GEMM's values times one plus zeros are the values themselves.
        let got = seen_as(ctx, &w, true);
        for (i, (g, v)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == v,
                "{q} as f32, value {i} (row {}, {}): got {g:e}, ggml's {v:e}",
                i / cols,
                i % cols
            );
        }
        // f16: each value rounded to nearest even once (values within f16's range: an infinite
        // one times the identity's zeros would be NaN).
        let blocks = random_blocks(q, rows, cols, true, &mut rng);
        let want = values(q, &blocks, rows, cols);
        let w = ctx.upload_quantized(q, rows, cols, &blocks).unwrap();
        let got = seen_as(ctx, &w, false);
        for (i, (g, v)) in got.iter().zip(&want).enumerate() {
            let r = f16::from_f32(*v).to_f32();
            assert!(*g == r, "{q} as f16, value {i}: got {g:e}, ggml's {v:e} rounded {r:e}");
        }
    }
    assert_no_validation_messages(ctx);
}

/// `y = alpha * x * w^T + beta * y0` (or `y^T = w * x^T` where `w_first`) for random `x`
/// (`m x k`, `T`) and quantized `w` (`n x k`, read as `T`), against the f64 product of `x` and
/// the dequantized weights: within the bound of a GEMM whose operands were rounded to `T` (the
/// dense copy rounds each weight to f16; the matrix-vector kernel multiplies them in f32).
#[allow(clippy::too_many_arguments)]
fn layer<T: Element>(
    q: QuantType,
    shape: (usize, usize, usize),
    w_first: bool,
    lc: Layout,
    options: &GemmOptions,
    rng: &mut Rng,
) -> Vec<String> {
    layer_on::<T>(context(), q, shape, (w_first, lc), options, rng)
}

/// [`layer`] on `ctx`.
fn layer_on<T: Element>(
    ctx: &Context,
    q: QuantType,
    (m, n, kb): (usize, usize, usize),
    (w_first, lc): (bool, Layout),
    options: &GemmOptions,
    rng: &mut Rng,
) -> Vec<String> {
    let k = kb * q.block_values();
    let blocks = random_blocks_small(q, n, k, rng);
    let deq = values(q, &blocks, n, k);
    let w = ctx.upload_quantized(q, n, k, &blocks).unwrap();
    let xs = verify::random_vec::<T>(rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    // The result: m x n (x w^T), or n x m (w x^T), stored `lc`.
    let (rows, cols) = if w_first { (n, m) } else { (m, n) };
    let c0: Vec<f32> = verify::random_vec(rng, rows * cols);
    let (_, inner) = lc.outer_inner(rows, cols);
    let host_c0 = MatRef::stored(&c0, rows, cols, lc, inner);
    let mut c = ctx.upload(host_c0).unwrap();
    let op = Matmul::with_options(options);
    let xt = ctx.upload(MatRef::col_major(&xs, k, m)).unwrap();
    // The weights read in the activations' type.
    let prepared = match (T::TYPE == ComponentType::F32, w_first) {
        (true, true) => ctx.prepare(&op, w.as_ref().as_f32(), &xt, &mut c),
        (false, true) => ctx.prepare(&op, &w, &xt, &mut c),
        (true, false) => ctx.prepare(&op, &x, w.t().as_f32(), &mut c),
        (false, false) => ctx.prepare(&op, &x, w.t(), &mut c),
    }
    .unwrap();
    prepared.run().unwrap();
    let names = dispatch_labels(&prepared);
    let int8 = names.iter().any(|n| n.ends_with("_x8"));
    drop(prepared);
    let got = download(ctx, &c);
    let xf: Vec<f32> = xs.iter().map(|v| v.to_f64() as f32).collect();
    if int8 {
        let at_c = |mi: usize, ni: usize| {
            let (r, cc) = if w_first { (ni, mi) } else { (mi, ni) };
            at(lc, r, cc, inner)
        };
        let int8 = Int8Layer {
            q,
            deq: &deq,
            x: &xf,
            k,
        };
        int8.check((m, n), (options.alpha, options.beta), (&got, &c0), at_c);
        return names;
    }
    // The reference on row-major copies of the operands and of C's old value.
    // (x's elements and the dequantized weights are exact in f32.)
    let (a_host, b_host) = if w_first {
        (deq.clone(), transpose(&xf, m, k))
    } else {
        (xf, transpose(&deq, n, k))
    };
    let c_rows: Vec<f32> = (0..rows * cols)
        .map(|i| c0[at(lc, i / cols, i % cols, inner)])
        .collect();
    let a_ref = MatRef::new(&a_host, rows, k);
    let b_ref = MatRef::new(&b_host, k, cols);
    let all: Vec<usize> = (0..rows).collect();
    let (want, mag) =
        reference::<f32, f32, f32>(&a_ref, &b_ref, Some((&c_rows, cols)), options.alpha, options.beta, &all);
    let got_rows: Vec<f32> = (0..rows * cols)
        .map(|i| got[at(lc, i / cols, i % cols, inner)])
        .collect();
    let check = compare_rounded(&got_rows, cols, cols, &all, (&want, &mag), k, unit_roundoff(T::TYPE));
    assert!(
        check.passed,
        "{q} {} {m}x{n}x{k} w_first {w_first} C {lc:?}: {check:?}",
        T::TYPE
    );
    // ggml's own metric on top: the normalised mean squared error.
    let (err, norm) = want.iter().zip(&got_rows).fold((0.0, 0.0), |(e, s), (w, g)| {
        (e + (f64::from(*g) - w).powi(2), s + w * w)
    });
    assert!(err <= 5e-4 * norm.max(f64::MIN_POSITIVE), "{q}: NMSE {}", err / norm);
    names
}

/// A layer whose activations the GPU rounded to 8 bits (`GemmOptions::int8_activations`): the
/// reference rounds them the same way in f64 (a block of 32's scale `max |x| / 127`, codes
/// rounded to nearest even), so what is left is the f32 arithmetic on the sums, bounded by
/// `SUM_SLACK` times the unit's largest weight times each activation (the kernel's terms, a
/// scale times up to 63 codes plus an offset, are a few times its values), plus one step of the
/// block's scale for each activation within `1e-4` of a rounding tie (the GPU's `127 / max |x|`
/// need not be correctly rounded). Then ggml's own metric, NMSE against the unrounded product.
struct Int8Layer<'a> {
    q: QuantType,
    deq: &'a [f32],
    x: &'a [f32],
    k: usize,
}

/// See [`Int8Layer`].
const SUM_SLACK: f64 = 5e-5;

impl Int8Layer<'_> {
    /// Activation row `mi` rounded to 8 bits as the GPU rounds it, and each element's slack for
    /// a tie (the block's scale where the rounding was within 1e-4 of one, else 0).
    fn rounded(&self, mi: usize) -> (Vec<f64>, Vec<f64>) {
        let row = &self.x[mi * self.k..(mi + 1) * self.k];
        let (mut out, mut tie) = (Vec::new(), Vec::new());
        for block in row.chunks(32) {
            let m = block.iter().fold(0.0f64, |m, v| m.max(f64::from(*v).abs()));
            let d = m / 127.0;
            for &v in block {
                let t = if m > 0.0 { f64::from(v) * 127.0 / m } else { 0.0 };
                let q = t.round_ties_even();
                out.push(q * d);
                tie.push(if ((t - t.floor()) - 0.5).abs() < 1e-4 { d } else { 0.0 });
            }
        }
        (out, tie)
    }

    /// Checks `got` (C as stored; `at_c(mi, ni)` the index of activation row `mi` times weight
    /// row `ni`) against `alpha x w^T + beta c0`.
    fn check(
        &self,
        (m, n): (usize, usize),
        (alpha, beta): (f64, f64),
        (got, c0): (&[f32], &[f32]),
        at_c: impl Fn(usize, usize) -> usize,
    ) {
        let k = self.k;
        let (mut err, mut norm) = (0.0f64, 0.0f64);
        for mi in 0..m {
            let (xq, tie) = self.rounded(mi);
            for ni in 0..n {
                let w = &self.deq[ni * k..(ni + 1) * k];
                let (mut dot, mut slack, mut exact) = (0.0f64, 0.0f64, 0.0f64);
                for (u, unit) in w.chunks(32).enumerate() {
                    let wmax = unit.iter().fold(0.0f64, |m, v| m.max(f64::from(*v).abs()));
                    for (l, &wv) in unit.iter().enumerate() {
                        let kk = 32 * u + l;
                        dot += f64::from(wv) * xq[kk];
                        exact += f64::from(wv) * f64::from(self.x[mi * k + kk]);
                        slack += SUM_SLACK * wmax * xq[kk].abs() + f64::from(wv).abs() * tie[kk];
                    }
                }
                let at = at_c(mi, ni);
                let old = beta * f64::from(c0[at]);
                let want = alpha * dot + old;
                let bound = alpha.abs() * slack + 1e-6 * (old.abs() + 1e-30);
                let g = f64::from(got[at]);
                assert!(
                    (g - want).abs() <= bound,
                    "{} {m}x{n}x{k}, 8-bit activations, ({mi}, {ni}): got {g}, want {want} (bound {bound})",
                    self.q
                );
                let unrounded = alpha * exact + old;
                err += (g - unrounded).powi(2);
                norm += unrounded * unrounded;
            }
        }
        assert!(
            err <= 5e-4 * norm.max(f64::MIN_POSITIVE),
            "{}: NMSE {}",
            self.q,
            err / norm
        );
    }
}

/// Random blocks whose values stay near 1 in magnitude (scales from quantizing uniform values),
/// so products sum without overflow: quantized from random values, then their codes randomized.
fn random_blocks_small(q: QuantType, rows: usize, cols: usize, rng: &mut Rng) -> Vec<u8> {
    let v: Vec<f32> = (0..rows * cols).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect();
    quantize(q, &v).unwrap()
}

/// Index of (r, c) in a matrix stored `lc` with `inner` elements per stored row.
fn at(lc: Layout, r: usize, c: usize, inner: usize) -> usize {
    match lc {
        Layout::RowMajor => r * inner + c,
        Layout::ColMajor => c * inner + r,
    }
}

/// `m x k` row-major values as `k x m` row-major.
fn transpose(x: &[f32], m: usize, k: usize) -> Vec<f32> {
    (0..k * m).map(|i| x[(i % m) * k + i / m]).collect()
}

#[test]
fn layers_match_the_f64_product_of_the_dequantized_weights() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let row = Layout::RowMajor;
    let plain = GemmOptions::default();
    for (i, q) in QuantType::ALL.into_iter().enumerate() {
        let kb = if q.block_values() == 32 { 3 } else { 1 };
        let shape = [(1, 17, kb), (3, 1, kb), (17, 3, kb + 1)][i % 3];
        layer::<f16>(q, shape, false, row, &plain, &mut rng);
        layer::<f32>(q, (5, 7, kb), false, row, &plain, &mut rng);
    }
    let scaled = GemmOptions {
        alpha: -1.5,
        beta: 0.25,
        ..Default::default()
    };
    // Both sides of the product, a column-major C, alpha and beta, decode's single row, and a
    // K of many blocks.
    for (q, shape, w_first, lc) in [
        (QuantType::Q4K, (1, 67, 3), false, Layout::ColMajor),
        (QuantType::Q8_0, (17, 33, 5), true, row),
        (QuantType::Q6K, (3, 17, 2), true, Layout::ColMajor),
        (QuantType::Q4_0, (65, 4, 8), false, row),
    ] {
        layer::<f16>(q, shape, w_first, lc, &scaled, &mut rng);
        layer::<f32>(q, shape, w_first, lc, &exact(), &mut rng);
    }
    assert_no_validation_messages(context());
}

#[test]
fn decode_with_8_bit_activations_matches_the_reference_in_every_format() {
    let ctx = context();
    assert!(
        ctx.device_info().features.shader_integer_dot_product,
        "this test needs a device with shaderIntegerDotProduct (lavapipe has it)"
    );
    let mut rng = Rng::new(Rng::fresh_seed());
    let row = Layout::RowMajor;
    let on = GemmOptions {
        int8_activations: Some(true),
        ..Default::default()
    };
    let scaled = GemmOptions {
        alpha: -1.5,
        beta: 0.25,
        ..on.clone()
    };
    let fast_f32 = GemmOptions {
        compute: ComputeMode::FastF16,
        ..Default::default()
    };
    for q in QuantType::ALL {
        // Several units per invocation's row where K is many 32-value blocks.
        let kb = if q.block_values() == 32 { 13 } else { 3 };
        // One token (the default options), three into a column-major C with the weights as A,
        // eight with alpha and beta, an odd number of weight rows each.
        layer::<f16>(q, (1, 17, kb), false, row, &GemmOptions::default(), &mut rng);
        layer::<f16>(q, (3, 33, kb), true, Layout::ColMajor, &on, &mut rng);
        layer::<f16>(q, (8, 5, 1), false, row, &scaled, &mut rng);
        layer::<f32>(q, (2, 9, kb), false, row, &fast_f32, &mut rng);
    }
    // 4099 weight rows.
    layer::<f16>(QuantType::Q4K, (1, 4099, 2), false, row, &on, &mut rng);
    // A fused column bias on the 8-bit path: y = x w^T + bias, checked as beta = 1 over a C
    // that holds the bias in every row.
    let (q, (m, n, k)) = (QuantType::Q6K, (3, 33, 512));
    let blocks = random_blocks_small(q, n, k, &mut rng);
    let deq = values(q, &blocks, n, k);
    let w = ctx.upload_quantized(q, n, k, &blocks).unwrap();
    let xs: Vec<f16> = verify::random_vec(&mut rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    let bias: Vec<f32> = verify::random_vec(&mut rng, n);
    let mut c = ctx.zeros::<f32>(m, n).unwrap();
    let op = Matmul::new().bias(Axis::Col, &bias);
    let prepared = ctx.prepare(&op, &x, w.t(), &mut c).unwrap();
    let names: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
    assert!(names.last().is_some_and(|n| n.ends_with("_x8")), "{names:?}");
    prepared.run().unwrap();
    drop(prepared);
    let got = download(ctx, &c);
    let xf: Vec<f32> = xs.iter().map(|v| v.to_f32()).collect();
    let broadcast: Vec<f32> = (0..m * n).map(|i| bias[i % n]).collect();
    let int8 = Int8Layer {
        q,
        deq: &deq,
        x: &xf,
        k,
    };
    int8.check((m, n), (1.0, 1.0), (&got, &broadcast), |mi, ni| mi * n + ni);
    assert_no_validation_messages(ctx);
}

/// Decode reading the blocks 16 bytes at a time (`GemmOptions::gemv_wide_loads`: by default
/// wherever every block starts on 16 bytes, Q4_K, Q5_K and Q3_K as the device holds it) and 32
/// bits at a time, on both kernels (8-bit activations, and each weight dequantized to f32),
/// against the reference; the kernel's name says which loads it makes.
#[test]
fn decode_reads_blocks_16_bytes_at_a_time_where_they_allow() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let row = Layout::RowMajor;
    let narrow = |o: GemmOptions| GemmOptions {
        gemv_wide_loads: Some(false),
        ..o
    };
    let unrounded = GemmOptions {
        int8_activations: Some(false),
        ..Default::default()
    };
    let wide_name = |names: &[String]| {
        let gemv = names.last().expect("a kernel ran");
        gemv.split('_').any(|part| part == "w")
    };
    for q in [QuantType::Q4K, QuantType::Q5K, QuantType::Q3K, QuantType::Q4_0] {
        let fits = q.device_block_bytes() % 16 == 0;
        for (options, wide) in [
            (GemmOptions::default(), fits),
            (narrow(GemmOptions::default()), false),
            (unrounded.clone(), fits),
            (narrow(unrounded.clone()), false),
        ] {
            let names = layer::<f16>(q, (2, 19, 3), false, row, &options, &mut rng);
            assert_eq!(wide_name(&names), wide, "{q} {options:?}: {names:?}");
        }
        let names = layer::<f32>(q, (1, 7, 2), true, Layout::ColMajor, &exact(), &mut rng);
        assert_eq!(wide_name(&names), fits, "{q} f32: {names:?}");
    }
    assert_no_validation_messages(context());
}

/// Blocks interleaved on the device ([`QuantType::interleave`]: rows of whole groups): in every
/// format that has groups they read as the file's values bit for bit (the dequantizing pass),
/// decode on both kernels, either orientation and the shared-row layout, run a prefill's dense
/// copy and experts grouped on the host and counted on the device, against the reference;
/// rows that are not whole groups keep their blocks whole. The kernels' names say which.
#[test]
fn interleaved_blocks_read_as_the_files_values_on_every_path() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let row = Layout::RowMajor;
    let unrounded = GemmOptions {
        int8_activations: Some(false),
        ..Default::default()
    };
    let shared_rows = GemmOptions {
        int8_activations: Some(true),
        gemv_lanes: Some(16),
        ..Default::default()
    };
    let read_interleaved = |names: &[String]| {
        let last = names.last().expect("a kernel ran");
        last.split('_').any(|part| part == "i") || names.iter().any(|n| n.contains("(interleaved)"))
    };
    for q in QuantType::ALL {
        let Some(group) = q.interleave().map(|i| i.blocks) else {
            continue;
        };
        // 37 rows of three groups (the pass's tiles straddle rows), five of a group and a block.
        for (rows, kb, interleaved) in [(37, 3 * group, true), (5, group + 1, false)] {
            let cols = kb * q.block_values();
            let blocks = random_blocks(q, rows, cols, false, &mut rng);
            let w = ctx.upload_quantized(q, rows, cols, &blocks).unwrap();
            assert_eq!(w.interleaved(), interleaved, "{q} {rows}x{cols}");
            let want = values(q, &blocks, rows, cols);
            for (i, (g, v)) in seen_as(ctx, &w, true).iter().zip(&want).enumerate() {
                assert!(g == v, "{q} {rows}x{cols}, value {i}: got {g:e}, ggml's {v:e}");
            }
        }
        // K of at least 512 values, so the shared-row layout's runs of 256 fit.
        let kb = (2 * group).max(512 / q.block_values());
        for (options, m) in [
            (GemmOptions::default(), 1),
            (unrounded.clone(), 2),
            (shared_rows.clone(), 1),
            (GemmOptions::default(), 17),
        ] {
            let names = layer::<f16>(q, (m, 19, kb), false, row, &options, &mut rng);
            assert!(read_interleaved(&names), "{q} {options:?}: {names:?}");
        }
        let names = layer::<f32>(q, (3, 7, kb), true, Layout::ColMajor, &exact(), &mut rng);
        assert!(read_interleaved(&names), "{q} f32: {names:?}");
        for counted in [false, true] {
            experts::<f16>(
                q,
                &[2, 0, 1],
                (13, kb),
                &GemmOptions::default(),
                (false, counted),
                &mut rng,
            );
        }
    }
    assert_no_validation_messages(ctx);
}

/// Decode's layouts of the 8-bit kernel (`GemmOptions::gemv_lanes`, `gemv_cols`): invocations
/// along every row a unit at a time, or 16/32/64 sharing each row a run of 256 values at a time
/// (one to four rows each), in every format, against the reference; K of 19 runs (so some
/// lanes take two and some none), 37 weight rows (no multiple of any workgroup's), and the
/// choices that do not fit as typed errors.
#[test]
fn decode_layouts_match_the_reference_in_every_format() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let forced = |lanes: Option<u32>, cols: Option<u32>| GemmOptions {
        int8_activations: Some(true),
        gemv_lanes: lanes,
        gemv_cols: cols,
        ..Default::default()
    };
    let layouts = [
        (None, None, 1, "_r1_c4_"),
        (Some(16), None, 1, "_r1_c8_l16_"),
        (Some(128), Some(3), 3, "_r3_c3_"),
        (Some(16), Some(16), 8, "_r8_c16_l16_"),
        (Some(32), Some(16), 2, "_r2_c16_l32_"),
        (Some(64), Some(2), 5, "_r5_c2_l64_"),
    ];
    for (i, q) in QuantType::ALL.into_iter().enumerate() {
        let kb = 19 * 256 / q.block_values();
        for (j, &(lanes, cols, m, name)) in layouts.iter().enumerate() {
            // Each format in four of the six layouts, every layout in most formats.
            if (i + j) % 6 >= 4 && j > 0 {
                continue;
            }
            let options = forced(lanes, cols);
            let names = layer::<f16>(q, (m, 37, kb), false, Layout::RowMajor, &options, &mut rng);
            assert!(
                names.last().is_some_and(|n| n.contains(name) && n.ends_with("_x8")),
                "{q} {lanes:?} {cols:?}: {names:?}"
            );
        }
    }
    let ctx = context();
    let n = 37;
    let int8_off = GemmOptions {
        int8_activations: Some(false),
        ..forced(Some(16), None)
    };
    // (K = 416 is 13 blocks of 32, no multiple of 256.)
    for (q, k, options, says) in [
        (QuantType::Q8_0, 416, forced(Some(16), None), "K = 416"),
        (QuantType::Q8_0, 416, forced(Some(8), None), "gemv_lanes = 8"),
        (QuantType::Q8_0, 416, int8_off, "8-bit activations off"),
        (QuantType::Q8_0, 416, forced(Some(128), Some(9)), "gemv_cols = 9"),
        (QuantType::Q4K, 512, forced(Some(16), Some(12)), "multiple of 8"),
        (QuantType::Q4K, 512, forced(Some(16), Some(40)), "at most 32"),
        (QuantType::Q4K, 512, forced(Some(16), Some(24)), "here 8 x 24"),
    ] {
        let w = ctx
            .upload_quantized(q, n, k, &random_blocks_small(q, n, k, &mut rng))
            .unwrap();
        let x = ctx.zeros::<f16>(8, k).unwrap();
        let mut c = ctx.zeros::<f32>(8, n).unwrap();
        let err = ctx.run(&Matmul::with_options(&options), &x, w.t(), &mut c);
        assert!(
            matches!(&err, Err(Error::InvalidOption(m)) if m.contains(says)),
            "{q} {options:?}: {err:?}"
        );
    }
    assert_no_validation_messages(ctx);
}

/// Workgroup memory limited to 16,000 bytes: eight tokens of f32 activations (four rows of W a
/// workgroup by default, 16.5 KiB of sums) run with two, against the reference; rows of W
/// asked for that do not fit, IQ4's table of code values counted, are a typed error before the
/// GPU.
#[test]
fn decode_fits_the_devices_workgroup_memory() {
    let small = limited_context(|device| vk_sgmat::plan::DispatchLimits {
        max_shared: 16_000,
        ..device
    });
    let mut rng = Rng::new(Rng::fresh_seed());
    let row = (false, Layout::RowMajor);
    let as_f32 = GemmOptions {
        int8_activations: Some(false),
        ..Default::default()
    };
    for (ctx, says) in [(context(), "_r8_c4_"), (&small, "_r8_c2_")] {
        let names = layer_on::<f32>(ctx, QuantType::Q4K, (8, 37, 2), row, &as_f32, &mut rng);
        assert!(names.last().is_some_and(|n| n.contains(says)), "{says}: {names:?}");
    }
    let cols = |cols| GemmOptions {
        int8_activations: Some(true),
        gemv_cols: Some(cols),
        ..Default::default()
    };
    // Six rows of X by five of W: 15,872 bytes of sums, 16,128 with IQ4's table.
    let names = layer_on::<f16>(&small, QuantType::Q4_0, (6, 37, 16), row, &cols(5), &mut rng);
    assert!(names.last().is_some_and(|n| n.contains("_r6_c5_")), "{names:?}");
    for (q, m, c) in [(QuantType::Iq4Nl, 6, 5), (QuantType::Q8_0, 8, 4)] {
        let k = 512;
        let w = small
            .upload_quantized(q, 37, k, &random_blocks_small(q, 37, k, &mut rng))
            .unwrap();
        let x = small.zeros::<f16>(m, k).unwrap();
        let mut out = small.zeros::<f32>(m, 37).unwrap();
        let err = small.run(&Matmul::with_options(&cols(c)), &x, w.t(), &mut out);
        assert!(
            matches!(&err, Err(Error::InvalidOption(msg)) if msg.contains("workgroup memory") && msg.contains("16000")),
            "{q} {m}x{c}: {err:?}"
        );
    }
    assert_no_validation_messages(&small);
}

#[test]
fn eight_bit_activations_are_chosen_as_documented() {
    let ctx = context();
    let (n, k) = (9, 64);
    let names_of = |q: QuantType, (m, n, k): (usize, usize, usize), f32_x: bool, options: &GemmOptions| {
        let w = ctx.upload_quantized(q, n, k, &random_blocks_small(q, n, k, &mut Rng::new(7)))?;
        let mut c = ctx.zeros::<f32>(m, n)?;
        let op = Matmul::with_options(options);
        let prepared = if f32_x {
            let x = ctx.zeros::<f32>(m, k)?;
            ctx.prepare(&op, &x, w.t().as_f32(), &mut c)?
        } else {
            let x = ctx.zeros::<f16>(m, k)?;
            ctx.prepare(&op, &x, w.t(), &mut c)?
        };
        let names: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
        Ok::<_, Error>(names)
    };
    // Two rows of activations: the rule for all but one row over a small weight.
    let names = |q, f32_x, options: &GemmOptions| names_of(q, (2, n, k), f32_x, options);
    let x8 = |names: &[String]| names.iter().any(|n| n.ends_with("_x8"));
    let default = GemmOptions::default();
    let off = GemmOptions {
        int8_activations: Some(false),
        ..Default::default()
    };
    let on = GemmOptions {
        int8_activations: Some(true),
        ..Default::default()
    };
    // f16 activations by default; f32 ones only when asked for or in a fast mode.
    assert!(x8(&names(QuantType::Q8_0, false, &default).unwrap()));
    assert!(!x8(&names(QuantType::Q8_0, true, &default).unwrap()));
    assert!(x8(&names(QuantType::Q8_0, true, &on).unwrap()));
    assert!(!x8(&names(QuantType::Q8_0, false, &off).unwrap()));
    // MXFP4 and NVFP4 too: their words hold their values as signed bytes.
    assert!(x8(&names(QuantType::Mxfp4, false, &default).unwrap()));
    assert!(x8(&names(QuantType::Nvfp4, false, &default).unwrap()));
    // One row over at most 2^22 weights is multiplied as it is, unless asked; over more, rounded.
    let one = |n, options: &GemmOptions| x8(&names_of(QuantType::Q4_0, (1, n, 1024), false, options).unwrap());
    assert!(!one(4096, &default) && one(4096, &on) && one(4097, &default) && !one(4097, &off));
    assert_no_validation_messages(ctx);
}

/// A device whose largest binding holds the blocks but not their dense view (as lavapipe's 128
/// MiB against a 22016x4096 q4_K weight): decode still streams the blocks, both orientations and
/// both kernels; the dense copy, which would not fit, is a typed error.
#[test]
fn decode_binds_the_blocks_where_their_dense_view_would_not_fit() {
    let device = vk_sgmat::plan::DispatchLimits::from_device(&context().device_info().limits);
    let max_range = 1 << 20;
    let ctx = Context::with_options(vk_sgmat::ContextOptions {
        validation: true,
        poison_outputs: true,
        limits_override: Some(vk_sgmat::plan::DispatchLimits { max_range, ..device }),
        ..Default::default()
    })
    .unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    let q = QuantType::Q4K;
    // 1024 rows of K = 1024: 576 KiB of blocks, a 2 MiB f16 view.
    let (n, k) = (1024, 1024);
    let blocks = random_blocks_small(q, n, k, &mut rng);
    let deq = values(q, &blocks, n, k);
    let w = ctx.upload_quantized(q, n, k, &blocks).unwrap();
    assert!((w.bytes() as u64) < max_range && (n * k * 2) as u64 > max_range);
    for (int8, w_first) in [(Some(false), false), (Some(true), false), (Some(false), true)] {
        let options = GemmOptions {
            int8_activations: int8,
            ..Default::default()
        };
        let xs: Vec<f16> = verify::random_vec(&mut rng, k);
        let x = ctx.upload(MatRef::new(&xs, 1, k)).unwrap();
        let xt = ctx.upload(MatRef::col_major(&xs, k, 1)).unwrap();
        let (mut c, op) = (
            if w_first {
                ctx.zeros::<f32>(n, 1)
            } else {
                ctx.zeros::<f32>(1, n)
            }
            .unwrap(),
            Matmul::with_options(&options),
        );
        let prepared = if w_first {
            ctx.prepare(&op, &w, &xt, &mut c)
        } else {
            ctx.prepare(&op, &x, w.t(), &mut c)
        }
        .unwrap();
        let names: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
        assert!(names.last().is_some_and(|n| n.starts_with("gemv_")), "{names:?}");
        prepared.run().unwrap();
        drop(prepared);
        let got = download(&ctx, &c);
        let xf: Vec<f32> = xs.iter().map(|v| v.to_f32()).collect();
        if int8 == Some(true) {
            let int8 = Int8Layer {
                q,
                deq: &deq,
                x: &xf,
                k,
            };
            int8.check((1, n), (1.0, 0.0), (&got, &vec![0.0; n]), |_, ni| ni);
            continue;
        }
        for (j, g) in got.iter().enumerate() {
            let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), i| {
                let p = f64::from(xf[i]) * f64::from(deq[j * k + i]);
                (d + p, s + p.abs())
            });
            assert!((f64::from(*g) - dot).abs() <= 1e-5 * (mag + 1.0), "{j}: {g} vs {dot}");
        }
    }
    // Prefill needs the dense copy: over the limit, a typed error.
    let x = ctx.zeros::<f16>(64, k).unwrap();
    let mut c = ctx.zeros::<f32>(64, n).unwrap();
    let err = ctx.run(&Matmul::new(), &x, w.t(), &mut c);
    assert!(matches!(err, Err(Error::TooLarge(_))), "{err:?}");
    assert_no_validation_messages(&ctx);
}

#[test]
fn a_fused_bias_and_a_stream_take_quantized_weights() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (3, 20, 64);
    let blocks = random_blocks_small(QuantType::Q5_1, n, k, &mut rng);
    let deq = values(QuantType::Q5_1, &blocks, n, k);
    let w = ctx.upload_quantized(QuantType::Q5_1, n, k, &blocks).unwrap();
    let xs: Vec<f32> = verify::random_vec(&mut rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    let bias: Vec<f32> = verify::random_vec(&mut rng, n);
    let op = Matmul::with_options(&exact()).bias(Axis::Col, &bias);
    let mut fused = ctx.zeros::<f32>(m, n).unwrap();
    ctx.run(&op, &x, w.t().as_f32(), &mut fused).unwrap();
    let mut streamed = ctx.zeros::<f32>(m, n).unwrap();
    let mut stream = ctx.stream().unwrap();
    stream
        .run(&Matmul::with_options(&exact()), &x, w.t().as_f32(), &mut streamed)
        .unwrap();
    stream.submit().unwrap().wait().unwrap();
    let (fused, streamed) = (download(ctx, &fused), download(ctx, &streamed));
    for i in 0..m {
        for j in 0..n {
            let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), kk| {
                let p = f64::from(xs[i * k + kk]) * f64::from(deq[j * k + kk]);
                (d + p, s + p.abs())
            });
            let bound = 1e-6 * (mag + 1.0);
            let (f, s) = (f64::from(fused[i * n + j]), f64::from(streamed[i * n + j]));
            assert!(
                (f - dot - f64::from(bias[j])).abs() <= bound,
                "fused ({i}, {j}): {f} vs {}",
                dot + f64::from(bias[j])
            );
            assert!((s - dot).abs() <= bound, "streamed ({i}, {j}): {s} vs {dot}");
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn what_does_not_fit_is_a_typed_error_before_the_gpu() {
    let ctx = context();
    let q = QuantType::Q4K;
    let row = vec![0u8; q.block_bytes()];
    // K not a whole number of blocks; bytes that do not match; an empty matrix.
    assert!(matches!(
        ctx.upload_quantized(q, 1, 128, &row),
        Err(Error::InvalidOperand(_))
    ));
    assert!(matches!(
        ctx.upload_quantized(q, 2, 256, &row),
        Err(Error::InvalidOperand(_))
    ));
    assert!(matches!(
        ctx.upload_quantized(q, 0, 256, &[]),
        Err(Error::InvalidOperand(_))
    ));
    let w = ctx.upload_quantized(q, 1, 256, &row).unwrap();
    let xs = vec![f16::ONE; 256];
    let x = ctx.upload(MatRef::new(&xs, 1, 256)).unwrap();
    let mut c = ctx.zeros::<f32>(1, 1).unwrap();
    // A host operand beside it; shapes that disagree; a grouped GEMM.
    let host = ctx.run(&Matmul::new(), MatRef::new(&xs, 1, 256), w.t(), &mut c);
    assert!(matches!(host, Err(Error::Unsupported(_))), "{host:?}");
    let wrong = ctx.run(&Matmul::new(), &x, &w, &mut c);
    assert!(matches!(wrong, Err(Error::ShapeMismatch(_))), "{wrong:?}");
    // Experts: the wrong number of bytes or none; groups that do not match them; experts
    // outside a grouped GEMM, as A, or with device counts.
    let two = vec![0u8; 2 * q.block_bytes()];
    for (e, bytes) in [(2, &row), (0, &two)] {
        let bad = ctx.upload_quantized_experts(q, e, 1, 256, bytes);
        assert!(matches!(bad, Err(Error::InvalidOperand(_))), "{bad:?}");
    }
    let experts = ctx.upload_quantized_experts(q, 2, 1, 256, &two).unwrap();
    assert_eq!((experts.experts(), experts.bytes()), (2, two.len()));
    let one = [1usize];
    let grouped = ctx.run(&Matmul::new().grouped(&one), &x, experts.t(), &mut c);
    assert!(matches!(grouped, Err(Error::ShapeMismatch(_))), "{grouped:?}");
    let alone = ctx.run(&Matmul::new(), &x, experts.t(), &mut c);
    assert!(matches!(alone, Err(Error::InvalidOperand(_))), "{alone:?}");
    let (both, mut cw) = ([1usize, 0], ctx.zeros::<f32>(1, 1).unwrap());
    let xt = ctx.upload(MatRef::new(&xs, 256, 1)).unwrap();
    let as_a = ctx.run(&Matmul::new().grouped(&both), &experts, &xt, &mut cw);
    assert!(matches!(as_a, Err(Error::InvalidOperand(_))), "{as_a:?}");
    // Device counts that add up to more rows than A's: an error, C as it was.
    let counts = ctx.upload(MatRef::new(&[1u32, 1], 1, 2)).unwrap();
    let mut kept = ctx.upload(MatRef::new(&[7.0f32], 1, 1)).unwrap();
    let counted = ctx.run(
        &Matmul::new().grouped_by_device_counts(&counts),
        &x,
        experts.t(),
        &mut kept,
    );
    assert!(matches!(counted, Err(Error::ShapeMismatch(_))), "{counted:?}");
    assert_eq!(download(ctx, &kept), vec![7.0]);
    assert_no_validation_messages(ctx);
}

/// `rows[g]` tokens (random `T` activations) through expert `g` of `rows.len()` random experts
/// of `n x K` `q` weights, grouped (`y = x * w_g^T` over each group's rows of C, alpha and
/// beta as `options` say, or a fused column bias of each expert's own `n` values over a zeroed
/// C), each group checked against the f64 product of its rows and its expert's dequantized
/// weights as the one-GEMM tests check it: decode-sized groups that took 8-bit activations
/// against the same rounding, the others within the bound of their operands' rounding to `T`.
///
/// With `counted`, the group sizes go to the device (`grouped_by_device_counts`): decode's
/// shapes (at most 8 rows in all) then stream the blocks of the experts with rows in
/// one matrix-vector kernel taking its groups from the device's table (checked: its kernel is
/// the grouped one), the rest dequantize every expert and multiply them as dense ones.
fn experts<T: Element>(
    q: QuantType,
    rows: &[usize],
    (n, kb): (usize, usize),
    options: &GemmOptions,
    (bias, counted): (bool, bool),
    rng: &mut Rng,
) {
    let ctx = context();
    let (e, k, m) = (rows.len(), kb * q.block_values(), rows.iter().sum::<usize>());
    let blocks = random_blocks_small(q, e * n, k, rng);
    let deq = values(q, &blocks, e * n, k);
    let w = ctx.upload_quantized_experts(q, e, n, k, &blocks).unwrap();
    let xs = verify::random_vec::<T>(rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    let (c0, biases): (Vec<f32>, Vec<f32>) = if bias {
        (vec![0.0; m * n], verify::random_vec(rng, e * n))
    } else {
        (verify::random_vec(rng, m * n), Vec::new())
    };
    let mut c = ctx.upload(MatRef::new(&c0, m, n)).unwrap();
    let sizes: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let counts = ctx.upload(MatRef::new(&sizes, 1, e)).unwrap();
    let mut op = match counted {
        true => Matmul::with_options(options).grouped_by_device_counts(&counts),
        false => Matmul::with_options(options).grouped(rows),
    };
    if bias {
        op = op.bias(Axis::Col, &biases);
    }
    let prepared = if T::TYPE == ComponentType::F32 {
        ctx.prepare(&op, &x, w.t().as_f32(), &mut c)
    } else {
        ctx.prepare(&op, &x, w.t(), &mut c)
    }
    .unwrap();
    prepared.run().unwrap();
    let labels: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
    if counted && m <= 8 {
        // Made for a tile of the rows asked for (by default the measured choice on blocks).
        let tile = options
            .gemv_group_rows
            .unwrap_or(vk_sgmat::plan::counted_decode_rows(true))
            .min(m as u32);
        let rows_tag = format!("_r{tile}_");
        assert!(
            labels
                .last()
                .is_some_and(|l| l.starts_with("gemv_") && l.contains(&rows_tag) && l.ends_with("_g")),
            "{q} {rows:?}: {labels:?}"
        );
    }
    // Side by side in one plan, but where a group's scratch is zeroed or written first (the
    // accurate split's scale words): a plan per non-empty group then.
    let plans: Vec<_> = prepared.plans().collect();
    if plans.len() != 1 {
        assert_eq!(plans.len(), rows.iter().filter(|&&r| r > 0).count(), "groups {rows:?}");
        let first = |p: &&vk_sgmat::plan::GemmPlan| p.zeroed_scratch_bytes > 0 || !p.scratch_words.is_empty();
        assert!(
            plans.iter().any(first),
            "groups {rows:?} apart, yet no scratch to prepare first"
        );
    }
    drop(plans);
    drop(prepared);
    let got = download(ctx, &c);
    let xf: Vec<f32> = xs.iter().map(|v| v.to_f64() as f32).collect();
    let (alpha, beta) = if bias {
        (1.0, 1.0)
    } else {
        (options.alpha, options.beta)
    };
    // Each group takes the path one GEMM of its shape on its expert alone takes: asked here.
    let expert_bytes = blocks.len() / e;
    let alone = |g: usize, mg: usize| -> Vec<String> {
        let one = ctx
            .upload_quantized(q, n, k, &blocks[g * expert_bytes..(g + 1) * expert_bytes])
            .unwrap();
        let xg = ctx.zeros::<T>(mg, k).unwrap();
        let mut cg = ctx.zeros::<f32>(mg, n).unwrap();
        let op = Matmul::with_options(options);
        let prepared = if T::TYPE == ComponentType::F32 {
            ctx.prepare(&op, &xg, one.t().as_f32(), &mut cg)
        } else {
            ctx.prepare(&op, &xg, one.t(), &mut cg)
        }
        .unwrap();
        let labels = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
        labels
    };
    let mut first = 0;
    for (g, &mg) in rows.iter().enumerate() {
        if mg == 0 {
            continue;
        }
        let kernels = if counted { labels.clone() } else { alone(g, mg) };
        let (xg, wg) = (&xf[first * k..(first + mg) * k], &deq[g * n * k..(g + 1) * n * k]);
        let span = first * n..(first + mg) * n;
        let gotg = &got[span.clone()];
        let old: Vec<f32> = if bias {
            (0..mg * n).map(|i| biases[g * n + i % n]).collect()
        } else {
            c0[span].to_vec()
        };
        first += mg;
        if kernels.iter().any(|l| l.contains("_x8")) {
            let int8 = Int8Layer { q, deq: wg, x: xg, k };
            int8.check((mg, n), (alpha, beta), (gotg, &old), |mi, ni| mi * n + ni);
            continue;
        }
        let wt = transpose(wg, n, k);
        let all: Vec<usize> = (0..mg).collect();
        let (a_ref, b_ref) = (MatRef::new(xg, mg, k), MatRef::new(&wt, k, n));
        let (want, mag) = reference::<f32, f32, f32>(&a_ref, &b_ref, Some((&old, n)), alpha, beta, &all);
        let check = compare_rounded(gotg, n, n, &all, (&want, &mag), k, unit_roundoff(T::TYPE));
        assert!(
            check.passed,
            "{q} expert {g} of {rows:?}, {mg}x{n}x{k} ({kernels:?}): {check:?}"
        );
    }
}

#[test]
fn quantized_experts_run_grouped_each_group_as_its_expert() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = GemmOptions {
        alpha: 0.75,
        beta: -0.5,
        ..Default::default()
    };
    let off = GemmOptions {
        int8_activations: Some(false),
        ..Default::default()
    };
    // Groups of one and three tokens (decode: the blocks streamed, 8-bit activations), an
    // empty one, and 37 (a dense copy of its expert); odd N.
    experts::<f16>(
        QuantType::Q4K,
        &[3, 0, 1, 37],
        (67, 2),
        &scaled,
        (false, false),
        &mut rng,
    );
    // 18-byte blocks, so each expert's bytes end inside a word; f32 activations read exactly.
    experts::<f32>(
        QuantType::Q4_0,
        &[1, 20, 2],
        (45, 5),
        &exact(),
        (false, false),
        &mut rng,
    );
    // Padded blocks with each expert's own column bias; MXFP4 without 8-bit activations.
    experts::<f16>(
        QuantType::Q6K,
        &[2, 17],
        (33, 2),
        &GemmOptions::default(),
        (true, false),
        &mut rng,
    );
    experts::<f16>(QuantType::Mxfp4, &[5, 0, 19], (21, 3), &off, (false, false), &mut rng);
    experts::<f16>(
        QuantType::Nvfp4,
        &[7, 1, 12],
        (13, 2),
        &GemmOptions::default(),
        (false, false),
        &mut rng,
    );
    // f32 activations in the accurate mode: the split's scale words are zeroed in scratch.
    let accurate = GemmOptions {
        compute: ComputeMode::Accurate,
        ..Default::default()
    };
    experts::<f32>(QuantType::Q8_0, &[2, 30], (19, 2), &accurate, (false, false), &mut rng);
    // Sizes on the device: every expert dequantized, with alpha and beta, a bias, f32 exactly.
    experts::<f16>(
        QuantType::Q4K,
        &[1, 0, 3, 20],
        (35, 2),
        &scaled,
        (false, true),
        &mut rng,
    );
    experts::<f16>(
        QuantType::Q5_0,
        &[4, 9],
        (17, 3),
        &GemmOptions::default(),
        (true, true),
        &mut rng,
    );
    experts::<f32>(QuantType::Q3K, &[0, 6, 1], (23, 1), &exact(), (false, true), &mut rng);
    // Decode with the sizes on the device: only the routed experts' blocks streamed, with
    // 8-bit activations (also with 16 invocations a row), f32 ones exactly, and without.
    experts::<f16>(QuantType::Q4K, &[1, 0, 2, 0], (35, 2), &scaled, (false, true), &mut rng);
    let lanes = GemmOptions {
        gemv_lanes: Some(16),
        ..scaled.clone()
    };
    experts::<f16>(QuantType::Q5K, &[0, 3, 0], (19, 2), &lanes, (false, true), &mut rng);
    // Tiles of two and three rows of a group (`gemv_group_rows`; the default on blocks is one):
    // groups of five and three rows take several tiles, with a bias each.
    for rows in [2, 3] {
        let tiles = GemmOptions {
            gemv_group_rows: Some(rows),
            ..scaled.clone()
        };
        experts::<f16>(QuantType::Q4K, &[5, 0, 3], (27, 2), &tiles, (false, true), &mut rng);
    }
    let tiles = GemmOptions {
        gemv_group_rows: Some(2),
        ..Default::default()
    };
    experts::<f16>(QuantType::Q8_0, &[3, 2], (19, 2), &tiles, (true, true), &mut rng);
    experts::<f32>(
        QuantType::Q6K,
        &[0, 0, 0, 1],
        (17, 1),
        &exact(),
        (false, true),
        &mut rng,
    );
    experts::<f16>(QuantType::Mxfp4, &[2, 3, 0], (21, 3), &off, (false, true), &mut rng);
    experts::<f16>(
        QuantType::Q8_0,
        &[8],
        (9, 3),
        &GemmOptions::default(),
        (false, true),
        &mut rng,
    );
    // Each expert's own column bias (gpt-oss's experts have one), 8-bit activations and not.
    experts::<f16>(
        QuantType::Mxfp4,
        &[0, 2, 1],
        (21, 2),
        &GemmOptions::default(),
        (true, true),
        &mut rng,
    );
    experts::<f32>(
        QuantType::Q4_1,
        &[3, 0, 0, 1],
        (13, 4),
        &exact(),
        (true, true),
        &mut rng,
    );
    assert_no_validation_messages(context());
}

#[test]
fn quantized_experts_take_host_activations_and_results() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (q, rows, n, k) = (QuantType::Q8_0, [2usize, 19], 30, 96);
    let m = rows.iter().sum::<usize>();
    let w = ctx
        .upload_quantized_experts(q, 2, n, k, &random_blocks_small(q, 2 * n, k, &mut rng))
        .unwrap();
    let xs: Vec<f16> = verify::random_vec(&mut rng, m * k);
    let op = Matmul::new().grouped(&rows);
    let mut on_host = vec![f32::NAN; m * n];
    ctx.run(&op, MatRef::new(&xs, m, k), w.t(), MatMut::new(&mut on_host, m, n))
        .unwrap();
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    let mut c = ctx.zeros::<f32>(m, n).unwrap();
    ctx.run(&op, &x, w.t(), &mut c).unwrap();
    assert_eq!(on_host, download(ctx, &c), "the same plans on uploaded operands");
    assert_no_validation_messages(ctx);
}

#[test]
fn every_dequantizing_kernel_passes_spirv_val() {
    for q in QuantType::ALL {
        for to in [ComponentType::F16, ComponentType::F32] {
            for interleaved in [false, true] {
                let words = vk_sgmat::kernel::generate_dequant(q, to, interleaved);
                if q.interleave().is_none() && interleaved {
                    assert!(matches!(words, Err(Error::Unsupported(_))), "{q}: {words:?}");
                    continue;
                }
                let name = format!("dequant_{q}_{to}{}", if interleaved { "_i" } else { "" });
                common::spirv_val(&words.unwrap(), &name).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }
}

#[test]
fn decode_streams_the_blocks_and_the_rest_multiplies_a_dense_copy() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let q = QuantType::Q4K;
    let (n, k) = (37, 17 * q.block_values());
    let w = ctx
        .upload_quantized(q, n, k, &random_blocks_small(q, n, k, &mut rng))
        .unwrap();
    let kernels = |m: usize, w_first: bool| -> Vec<String> {
        let x = ctx.zeros::<f16>(m, k).unwrap();
        let xt = ctx.upload(MatRef::col_major(&vec![f16::ZERO; m * k], k, m)).unwrap();
        let mut c = if w_first {
            ctx.zeros::<f32>(n, m)
        } else {
            ctx.zeros::<f32>(m, n)
        }
        .unwrap();
        let prepared = if w_first {
            ctx.prepare(&Matmul::new(), &w, &xt, &mut c)
        } else {
            ctx.prepare(&Matmul::new(), &x, w.t(), &mut c)
        }
        .unwrap();
        let names = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
        names
    };
    // f16 activations (the default options) are rounded to 8 bits first where the device has
    // packed dot products (lavapipe has), but one row over a weight this small.
    let int8 = ctx.device_info().features.shader_integer_dot_product;
    for (m, w_first) in [(1, false), (8, false), (3, true)] {
        let names = kernels(m, w_first);
        let streams = if int8 && m > 1 {
            names.len() == 2
                && names[0] == "round f16 activations to 8 bits"
                && names[1].contains("_q4_K")
                && names[1].ends_with("_x8")
        } else {
            names.len() == 1 && names[0].contains("_q4_K")
        };
        assert!(
            streams && names.last().is_some_and(|n| n.starts_with("gemv_")),
            "{m} rows, w first {w_first}: {names:?}"
        );
    }
    // One row over a larger weight, 8-bit: rounded by the kernel itself from f16 activations
    // beside Q4_K, after the pass from f32 ones or beside MXFP4.
    if int8 {
        let (n, k) = (4097, 1024);
        for (q, f32_x, pass) in [
            (QuantType::Q4K, false, false),
            (QuantType::Q4K, true, true),
            (QuantType::Mxfp4, false, true),
            (QuantType::Nvfp4, false, true),
        ] {
            let w = ctx
                .upload_quantized(q, n, k, &random_blocks_small(q, n, k, &mut rng))
                .unwrap();
            let mut c = ctx.zeros::<f32>(1, n).unwrap();
            let op = Matmul::with_options(&GemmOptions {
                int8_activations: Some(true),
                ..Default::default()
            });
            let prepared = if f32_x {
                ctx.prepare(&op, &ctx.zeros::<f32>(1, k).unwrap(), w.t().as_f32(), &mut c)
            } else {
                ctx.prepare(&op, &ctx.zeros::<f16>(1, k).unwrap(), w.t(), &mut c)
            }
            .unwrap();
            let names: Vec<String> = prepared.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
            let here = names.len() == 1 && names[0].ends_with("_xr_x8");
            let after = names.len() == 2 && names[0].starts_with("round ") && !names[1].contains("_xr");
            assert!(
                if pass { after } else { here } && names[names.len() - 1].ends_with("_x8"),
                "{q}, f32 activations {f32_x}: {names:?}"
            );
        }
    }
    // Both sides long: a dense copy first (the quantized operand on the short side too, as in
    // `layers_match_...`'s 3 x 1); 9 to 48 rows run in chunks (`a_few_rows_run_as_decode_in_chunks`,
    // `a_few_columns_over_weights_as_a_run_as_decode_in_chunks`).
    for (m, w_first) in [(49, false), (49, true)] {
        let names = kernels(m, w_first);
        assert!(
            names.first().is_some_and(|k| k == "dequantize q4_K to f16"),
            "{m} rows, w first {w_first}: {names:?}"
        );
    }
    // Many units per invocation (K = 17 blocks of 256), eight rows: against the reference.
    layer::<f16>(
        q,
        (8, 37, 17),
        false,
        Layout::RowMajor,
        &GemmOptions::default(),
        &mut rng,
    );
    // Eight rows of f32 take four weight rows per workgroup (37 leaves one alone at the end).
    let x = ctx.zeros::<f32>(8, k).unwrap();
    let mut c = ctx.zeros::<f32>(8, n).unwrap();
    let prepared = ctx
        .prepare(&Matmul::with_options(&exact()), &x, w.t().as_f32(), &mut c)
        .unwrap();
    assert_eq!(prepared.plans().next().unwrap().kernel_name(), "gemv_f32_r8_c4_q4_K_w");
    layer::<f32>(q, (8, 37, 17), false, Layout::RowMajor, &exact(), &mut rng);
    layer::<f32>(QuantType::Q6K, (2, 3, 9), true, Layout::RowMajor, &exact(), &mut rng);
    assert_no_validation_messages(ctx);
}

/// What each dispatch of `prepared` runs, in order.
fn dispatch_labels(prepared: &vk_sgmat::Prepared<'_>) -> Vec<String> {
    let dispatches = prepared.plans().flat_map(|p| &p.dispatches);
    dispatches.map(|d| d.kernel.label()).collect()
}

/// How many matrix-vector dispatches `names` holds, and whether a dense copy is made first.
fn chunks_of(names: &[String]) -> (usize, bool) {
    let gemvs = names.iter().filter(|n| n.starts_with("gemv_")).count();
    (gemvs, names.iter().any(|n| n.starts_with("dequantize ")))
}

#[test]
fn a_few_rows_run_as_decode_in_chunks() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let row_major = Layout::RowMajor;
    let scaled = GemmOptions {
        alpha: 0.75,
        beta: -0.5,
        ..Default::default()
    };
    // Chunks of at most 8 rows, as even as they come, each checked against the reference
    // (8-bit activations where the device has packed dot products, as decode rounds them).
    for (q, m, kb, options) in [
        (QuantType::Q4K, 9, 3, GemmOptions::default()),
        (QuantType::Q8_0, 16, 7, scaled.clone()),
        (QuantType::Q6K, 23, 2, GemmOptions::default()),
        (QuantType::Mxfp4, 13, 5, scaled.clone()),
        (QuantType::Q4_0, 32, 5, GemmOptions::default()),
        (QuantType::Iq4Xs, 11, 2, GemmOptions::default()),
        (QuantType::Nvfp4, 19, 3, scaled.clone()),
    ] {
        let names = layer::<f16>(q, (m, 37, kb), false, row_major, &options, &mut rng);
        assert_eq!(chunks_of(&names), (m.div_ceil(8), false), "{q}, {m} rows: {names:?}");
    }
    // f32 activations, exact: the f32 kernel a chunk.
    let names = layer::<f32>(QuantType::Q5K, (17, 29, 2), false, row_major, &exact(), &mut rng);
    assert_eq!(chunks_of(&names), (3, false), "{names:?}");
    // Past 48 rows (32 of f32) a dense copy unless asked; asked, chunks at any count; never
    // where refused.
    let on = GemmOptions {
        matrix_vector: Some(true),
        ..Default::default()
    };
    let off = GemmOptions {
        matrix_vector: Some(false),
        ..Default::default()
    };
    let q = QuantType::Q4K;
    let names = layer::<f16>(q, (48, 37, 2), false, row_major, &GemmOptions::default(), &mut rng);
    assert_eq!(chunks_of(&names), (6, false), "{names:?}");
    let names = layer::<f16>(q, (49, 37, 2), false, row_major, &GemmOptions::default(), &mut rng);
    assert!(chunks_of(&names).1, "{names:?}");
    let names = layer::<f32>(q, (33, 37, 2), false, row_major, &exact(), &mut rng);
    assert!(chunks_of(&names).1, "{names:?}");
    let names = layer::<f16>(q, (41, 37, 2), false, row_major, &on, &mut rng);
    assert_eq!(chunks_of(&names), (6, false), "{names:?}");
    let names = layer::<f16>(q, (12, 37, 2), false, row_major, &off, &mut rng);
    assert_eq!(chunks_of(&names), (0, true), "{names:?}");
    // C column-major: each chunk's rows of C are a column-major block of it.
    let names = layer::<f16>(q, (12, 37, 2), false, Layout::ColMajor, &scaled, &mut rng);
    assert_eq!(chunks_of(&names), (2, false), "{names:?}");
    assert_no_validation_messages(context());
}

#[test]
fn a_few_columns_over_weights_as_a_run_as_decode_in_chunks() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = GemmOptions {
        alpha: 1.5,
        beta: 0.25,
        ..Default::default()
    };
    // C = w x^T (ggml's orientation): chunks of x's rows, C's columns, in either storage
    // order of C, checked against the reference.
    for (q, m, kb, lc) in [
        (QuantType::Q4K, 9, 2, Layout::RowMajor),
        (QuantType::Q8_0, 23, 5, Layout::ColMajor),
        (QuantType::Q6K, 17, 1, Layout::RowMajor),
        (QuantType::Q4_1, 41, 3, Layout::ColMajor),
    ] {
        let names = layer::<f16>(q, (m, 29, kb), true, lc, &scaled, &mut rng);
        assert_eq!(
            chunks_of(&names),
            (m.div_ceil(8), false),
            "{q}, {m} columns, C {lc:?}: {names:?}"
        );
    }
    let names = layer::<f32>(QuantType::Q5_0, (19, 13, 3), true, Layout::RowMajor, &exact(), &mut rng);
    assert_eq!(chunks_of(&names), (3, false), "{names:?}");
    // Past 48 columns the dense copy, as for rows.
    let names = layer::<f16>(QuantType::Q4K, (49, 13, 1), true, Layout::RowMajor, &scaled, &mut rng);
    assert!(chunks_of(&names).1, "{names:?}");
    assert_no_validation_messages(context());
}

#[test]
fn chunks_read_the_epilogues_vectors_at_their_rows() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let q = QuantType::Q4_1;
    let (m, n, k) = (19, 21, 96);
    let blocks = random_blocks_small(q, n, k, &mut rng);
    let deq = values(q, &blocks, n, k);
    let w = ctx.upload_quantized(q, n, k, &blocks).unwrap();
    let xs: Vec<f32> = verify::random_vec(&mut rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k)).unwrap();
    let xt = ctx.upload(MatRef::col_major(&xs, k, m)).unwrap();
    // x w^T (chunks of C's rows) and w x^T (chunks of its columns, planned transposed).
    for (w_first, axis) in [
        (false, Axis::Row),
        (false, Axis::Col),
        (true, Axis::Row),
        (true, Axis::Col),
    ] {
        let (rows, cols) = if w_first { (n, m) } else { (m, n) };
        let bias: Vec<f32> = verify::random_vec(&mut rng, if axis == Axis::Row { rows } else { cols });
        let op = Matmul::with_options(&exact())
            .bias(axis, &bias)
            .activation(Activation::Relu);
        let mut c = ctx.upload(MatRef::new(&vec![f32::NAN; m * n], rows, cols)).unwrap();
        let prepared = match w_first {
            false => ctx.prepare(&op, &x, w.t().as_f32(), &mut c),
            true => ctx.prepare(&op, w.as_ref().as_f32(), &xt, &mut c),
        }
        .unwrap();
        let names = dispatch_labels(&prepared);
        assert_eq!(chunks_of(&names), (3, false), "{names:?}");
        prepared.run().unwrap();
        drop(prepared);
        let got = download(ctx, &c);
        for r in 0..rows {
            for cc in 0..cols {
                // Row i of x, row j of the weights.
                let (i, j) = if w_first { (cc, r) } else { (r, cc) };
                let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), kk| {
                    let p = f64::from(xs[i * k + kk]) * f64::from(deq[j * k + kk]);
                    (d + p, s + p.abs())
                });
                let b = f64::from(bias[if axis == Axis::Row { r } else { cc }]);
                let want = (dot + b).max(0.0);
                let g = f64::from(got[r * cols + cc]);
                assert!(
                    (g - want).abs() <= 1e-6 * (mag + b.abs() + 1.0),
                    "w first {w_first}, {axis:?} bias ({r}, {cc}): {g} vs {want}"
                );
            }
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn every_block_streaming_matrix_vector_kernel_passes_spirv_val() {
    use vk_sgmat::kernel::{generate_gemv, Epilogue, GemvKey, GEMV_THREADS};
    for quant in QuantType::ALL {
        for (elem, rows, cols, lanes) in [
            (ComponentType::F16, 1, 4, GEMV_THREADS),
            (ComponentType::F32, 8, 2, GEMV_THREADS),
            (ComponentType::Bf16, 3, 4, GEMV_THREADS),
            (ComponentType::F16, 1, 8, 16),
            (ComponentType::F16, 8, 16, 16),
            (ComponentType::F32, 3, 16, 32),
            (ComponentType::Bf16, 2, 8, 64),
        ] {
            // Invocations sharing rows take 8-bit activations only; groups an untransposed C.
            let choices = [(false, false), (true, false), (false, true), (true, true)];
            let every = choices.into_iter().flat_map(|c| [(c, false), (c, true)]);
            // Interleaved blocks in every format that has groups, whole blocks in every format.
            let interleaved = [false, quant.interleave().is_some()];
            let every = every.flat_map(|c| interleaved.map(|i| (c, i)));
            for (((int8_x, grouped), wide_loads), interleaved) in
                every.filter(|&(((x, g), _), _)| (x || lanes == GEMV_THREADS) && !(g && rows == 3))
            {
                let key = GemvKey {
                    elem,
                    rows,
                    cols,
                    lanes,
                    unroll: 1,
                    c_transposed: rows == 3,
                    epilogue: Epilogue::default(),
                    quant: Some(quant),
                    int8_x,
                    // X rounded in the kernel or by the pass, each beside both loads.
                    round_x: int8_x && wide_loads != interleaved,
                    grouped,
                    wide_loads,
                    interleaved,
                };
                let words = generate_gemv(&key).unwrap();
                common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            }
        }
    }
    // Layouts the kernel does not take: a typed error, not SPIR-V.
    let key = |lanes, cols, int8_x| GemvKey {
        elem: ComponentType::F16,
        rows: 8,
        cols,
        lanes,
        unroll: 1,
        c_transposed: false,
        epilogue: Epilogue::default(),
        quant: Some(QuantType::Q4K),
        int8_x,
        round_x: false,
        grouped: false,
        wide_loads: false,
        interleaved: false,
    };
    for bad in [
        key(16, 8, false),
        key(16, 12, true),
        key(16, 24, true),
        key(8, 16, true),
        key(GEMV_THREADS, 9, true),
        GemvKey {
            round_x: true,
            ..key(GEMV_THREADS, 4, false)
        },
    ] {
        assert!(
            matches!(generate_gemv(&bad), Err(Error::Unsupported(_))),
            "{}",
            bad.name()
        );
    }
}

#[test]
fn every_activation_rounding_pass_passes_spirv_val() {
    for elem in [ComponentType::F16, ComponentType::Bf16, ComponentType::F32] {
        let words = vk_sgmat::kernel::generate_act8(elem).unwrap();
        let name = format!("act8_{elem}");
        common::spirv_val(&words, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn host_activations_and_results_take_quantized_weights() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let q = QuantType::Q4_0;
    let (n, k) = (21, 64);
    let blocks = random_blocks_small(q, n, k, &mut rng);
    let deq = values(q, &blocks, n, k);
    let w = ctx.upload_quantized(q, n, k, &blocks).unwrap();
    // Three rows (the matrix-vector kernel) into a row-major C with a padded leading dimension,
    // C only written (beta 0); forty (the dense copy) into a column-major one, C read.
    for (m, lc, beta) in [(3, Layout::RowMajor, 0.0), (40, Layout::ColMajor, 0.5)] {
        let xs: Vec<f32> = verify::random_vec(&mut rng, m * k);
        let (_, inner) = lc.outer_inner(m, n);
        let ld = inner + 3;
        let c0: Vec<f32> = verify::random_vec(&mut rng, (ld * (m * n / inner)).max(ld));
        let mut c = c0.clone();
        let options = GemmOptions {
            alpha: -1.5,
            beta,
            compute: ComputeMode::Exact,
            ..Default::default()
        };
        let out = match lc {
            Layout::RowMajor => MatMut::new(&mut c, m, n).with_ld(ld),
            Layout::ColMajor => MatMut::col_major(&mut c, m, n).with_ld(ld),
        };
        ctx.run(
            &Matmul::with_options(&options),
            MatRef::new(&xs, m, k),
            w.t().as_f32(),
            out,
        )
        .unwrap();
        for i in 0..m {
            for j in 0..n {
                let (dot, mag) = (0..k).fold((0.0f64, 0.0f64), |(d, s), kk| {
                    let p = f64::from(xs[i * k + kk]) * f64::from(deq[j * k + kk]);
                    (d + p, s + p.abs())
                });
                let at = at(lc, i, j, ld);
                let want = -1.5 * dot + beta * f64::from(c0[at]);
                let got = f64::from(c[at]);
                assert!(
                    (got - want).abs() <= 1e-6 * (mag + 1.0),
                    "{m} rows, ({i}, {j}): {got} vs {want}"
                );
            }
        }
    }
    assert_no_validation_messages(ctx);
}
