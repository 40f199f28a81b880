//! Checking GEMM results: random inputs, a CPU reference in f64, and an error measure with a bound
//! fitting the types. Not part of the library: the tests, the benchmarks and the `vk-sgmat`
//! command line (`gemm`, `check`, `bench`) include this module by path (`#[path]`), so the
//! library exports no test helper and reads no seed from the environment.
//!
//! The error measure is the relative Frobenius norm `||C - C_ref|| / ||M||`, where
//! `M = |alpha| * |A| |B| + |beta| * |C_in|` (element-wise absolute values). Normalising by `M`
//! rather than `C_ref` keeps the bound meaningful under cancellation. Inputs are converted exactly,
//! so only accumulation and output rounding count: the bound is `4 * (sqrt(K) + 1) * u_acc + 2 * u_out`
//! with `u` the unit roundoff of the accumulator and result types (2^-11 for f16, 2^-24 for f32).
//! Integer results must match exactly. Any non-finite output where the reference is finite fails.

use vk_sgmat::config::ComponentType;
use vk_sgmat::tiling::Layout;
use vk_sgmat::{Element, MatRef};

/// A small, fast, seedable generator (SplitMix64): fresh inputs each run, reproducible by seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A seed from `VK_SGMAT_SEED` if set, else from the clock and process id.
    pub fn fresh_seed() -> u64 {
        if let Some(s) = std::env::var("VK_SGMAT_SEED").ok().and_then(|s| s.parse().ok()) {
            return s;
        }
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ (u64::from(std::process::id()) << 32)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
}

/// Random elements: floats uniform in [-1, 1); 8-bit integers over their full range (extremes
/// included); 32-bit integers in [-1000, 1000] (or [0, 1000]).
pub fn random_vec<T: Element>(rng: &mut Rng, len: usize) -> Vec<T> {
    (0..len)
        .map(|_| {
            let v = match T::TYPE {
                ComponentType::I8 => rng.int(-128, 127) as f64,
                ComponentType::U8 => rng.int(0, 255) as f64,
                ComponentType::I32 => rng.int(-1000, 1000) as f64,
                ComponentType::U32 => rng.int(0, 1000) as f64,
                _ => rng.unit() * 2.0 - 1.0,
            };
            T::from_f64(v)
        })
        .collect()
}

/// The reference result for the listed rows of C: `alpha * A*B + beta * C_in`, in f64, with the
/// magnitude `|alpha| |A||B| + |beta| |C_in|` of each element. `c_in` is row-major with `ldc`.
#[allow(clippy::type_complexity)]
pub fn reference<TA: Element, TB: Element, TC: Element>(
    a: &MatRef<'_, TA>,
    b: &MatRef<'_, TB>,
    c_in: Option<(&[TC], usize)>,
    alpha: f64,
    beta: f64,
    rows: &[usize],
) -> (Vec<f64>, Vec<f64>) {
    let (k, n) = (a.cols, b.cols);
    // B transposed into f64 rows, so each dot product streams both operands.
    let mut bt = vec![0.0f64; n * k];
    for kk in 0..k {
        for j in 0..n {
            bt[j * k + kk] = b.data[b.index(kk, j)].to_f64();
        }
    }
    let mut value = vec![0.0f64; rows.len() * n];
    let mut magnitude = vec![0.0f64; rows.len() * n];
    let threads = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(rows.len().max(1));
    let chunk = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for ((rows, value), magnitude) in rows
            .chunks(chunk)
            .zip(value.chunks_mut(chunk * n))
            .zip(magnitude.chunks_mut(chunk * n))
        {
            let bt = &bt;
            s.spawn(move || {
                let mut arow = vec![0.0f64; k];
                for (ri, &r) in rows.iter().enumerate() {
                    for (kk, x) in arow.iter_mut().enumerate() {
                        *x = a.data[a.index(r, kk)].to_f64();
                    }
                    for j in 0..n {
                        let brow = &bt[j * k..(j + 1) * k];
                        let (mut dot, mut mag) = (0.0f64, 0.0f64);
                        for (x, y) in arow.iter().zip(brow) {
                            dot += x * y;
                            mag += (x * y).abs();
                        }
                        let c0 = c_in.map_or(0.0, |(c, ldc)| c[r * ldc + j].to_f64());
                        let cterm = if beta == 0.0 { 0.0 } else { beta * c0 };
                        value[ri * n + j] = alpha * dot + cterm;
                        let cmag = if beta == 0.0 { 0.0 } else { (beta * c0).abs() };
                        magnitude[ri * n + j] = alpha.abs() * mag + cmag;
                    }
                }
            });
        }
    });
    (value, magnitude)
}

/// The outcome of comparing a GEMM result with its reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Check {
    /// Relative Frobenius-norm error (see the module docs).
    pub rel_error: f64,
    /// The bound it must stay under (0 for exact types).
    pub tolerance: f64,
    /// Elements that differ (integers) or are non-finite (floats).
    pub mismatches: usize,
    /// Elements compared.
    pub compared: usize,
    /// The first bad element: (row, col, got, expected).
    pub first_bad: Option<(usize, usize, f64, f64)>,
    /// Whether the result is correct.
    pub passed: bool,
}

/// Unit roundoff of a floating type (0 for integers).
pub fn unit_roundoff(t: ComponentType) -> f64 {
    match t {
        ComponentType::F16 => 2f64.powi(-11),
        ComponentType::Bf16 => 2f64.powi(-8),
        ComponentType::F32 => 2f64.powi(-24),
        ComponentType::F64 => 2f64.powi(-53),
        _ => 0.0,
    }
}

/// The error bound for a GEMM with this result type and K (0 means exact).
pub fn tolerance(result_type: ComponentType, k: usize) -> f64 {
    let u = unit_roundoff(result_type);
    4.0 * ((k as f64).sqrt() + 1.0) * u + 2.0 * u
}

/// Compares the listed rows of `c` (row-major, `ldc`) with the reference.
pub fn compare<TC: Element>(
    c: &[TC],
    ldc: usize,
    n: usize,
    rows: &[usize],
    expected: &[f64],
    magnitude: &[f64],
    k: usize,
) -> Check {
    compare_rounded(c, ldc, n, rows, (expected, magnitude), k, 0.0)
}

/// [`compare`] for a GEMM whose operands were rounded to a type of unit roundoff `input_u` on
/// the way to the matrix units: each product then carries a relative error of at most about
/// `2 * input_u`, so the bound grows by `2 * input_u` (relative to the magnitude `sum |a||b|`).
pub fn compare_rounded<TC: Element>(
    c: &[TC],
    ldc: usize,
    n: usize,
    rows: &[usize],
    (expected, magnitude): (&[f64], &[f64]),
    k: usize,
    input_u: f64,
) -> Check {
    let exact = !TC::TYPE.is_float();
    let (mut diff2, mut mag2) = (0.0f64, 0.0f64);
    let mut mismatches = 0;
    let mut first_bad = None;
    for (ri, &r) in rows.iter().enumerate() {
        for j in 0..n {
            let got = c[r * ldc + j].to_f64();
            let want = expected[ri * n + j];
            let bad = if exact {
                got != want
            } else {
                !got.is_finite() && want.is_finite()
            };
            if bad {
                mismatches += 1;
                first_bad.get_or_insert((r, j, got, want));
            }
            let d = got - want;
            diff2 += d * d;
            mag2 += magnitude[ri * n + j] * magnitude[ri * n + j];
        }
    }
    let rel_error = if mag2 > 0.0 {
        (diff2 / mag2).sqrt()
    } else {
        diff2.sqrt()
    };
    let tolerance = if exact {
        0.0
    } else {
        tolerance(TC::TYPE, k) + 2.0 * input_u + input_u * input_u
    };
    let passed = mismatches == 0 && (exact || rel_error <= tolerance);
    if !passed && first_bad.is_none() {
        // Find the worst element to report.
        let mut worst = (0.0, None);
        for (ri, &r) in rows.iter().enumerate() {
            for j in 0..n {
                let got = c[r * ldc + j].to_f64();
                let want = expected[ri * n + j];
                let e = (got - want).abs() / magnitude[ri * n + j].max(f64::MIN_POSITIVE);
                if e > worst.0 {
                    worst = (e, Some((r, j, got, want)));
                }
            }
        }
        first_bad = worst.1;
    }
    Check {
        rel_error,
        tolerance,
        mismatches,
        compared: rows.len() * n,
        first_bad,
        passed,
    }
}

/// Rows to verify for an `m x n` result: all when `m * n <= full_limit`, else `sample` rows spread
/// over M (first and last included).
pub fn rows_to_check(m: usize, n: usize, full_limit: usize, sample: usize, rng: &mut Rng) -> Vec<usize> {
    if m.saturating_mul(n) <= full_limit || m <= sample {
        return (0..m).collect();
    }
    let mut rows: Vec<usize> = (0..sample - 2).map(|_| rng.int(1, m as i64 - 2) as usize).collect();
    rows.push(0);
    rows.push(m - 1);
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// A host matrix of random elements in the given layout (dense, or with `extra_ld` padding).
pub fn random_matrix<T: Element>(
    rng: &mut Rng,
    rows: usize,
    cols: usize,
    layout: Layout,
    extra_ld: usize,
) -> (Vec<T>, usize) {
    let (outer, inner) = layout.outer_inner(rows, cols);
    let ld = inner + extra_ld;
    (random_vec(rng, outer * ld), ld)
}

/// Runs one GEMM on random inputs (fresh from `rng`) and checks it: C starts random (so beta is
/// exercised), every row is checked when `m * n <= full_limit`, else 256 sampled rows.
#[allow(clippy::too_many_arguments)]
pub fn run_random_gemm<TA: Element, TB: Element, TC: Element>(
    ctx: &vk_sgmat::Context,
    rng: &mut Rng,
    shape: (usize, usize, usize),
    (la, lb): (Layout, Layout),
    extra_ld: usize,
    options: &vk_sgmat::GemmOptions,
    full_limit: usize,
) -> vk_sgmat::Result<Check> {
    run_random_gemm_c::<TA, TB, TC>(
        ctx,
        rng,
        shape,
        (la, lb, Layout::RowMajor),
        extra_ld,
        options,
        full_limit,
    )
}

/// [`run_random_gemm`] with C stored `lc` (column-major C is checked through its transpose).
#[allow(clippy::too_many_arguments)]
pub fn run_random_gemm_c<TA: Element, TB: Element, TC: Element>(
    ctx: &vk_sgmat::Context,
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    extra_ld: usize,
    options: &vk_sgmat::GemmOptions,
    full_limit: usize,
) -> vk_sgmat::Result<Check> {
    let (a, lda) = random_matrix::<TA>(rng, m, k, la, extra_ld);
    let (b, ldb) = random_matrix::<TB>(rng, k, n, lb, extra_ld);
    let (c_in, ldc) = random_matrix::<TC>(rng, m, n, lc, extra_ld);
    let am = MatRef::stored(&a, m, k, la, lda);
    let bm = MatRef::stored(&b, k, n, lb, ldb);
    let mut c = c_in.clone();
    let cm = vk_sgmat::MatMut {
        data: &mut c,
        rows: m,
        cols: n,
        layout: lc,
        ld: ldc,
    };
    ctx.run(&vk_sgmat::Matmul::with_options(options), am, bm, cm)?;
    // The reference and the comparison read C row-major: dense copies of the old and new C.
    let view = |data: &[TC]| {
        let src = MatRef {
            data,
            rows: m,
            cols: n,
            layout: lc,
            ld: ldc,
        };
        (0..m * n).map(|i| data[src.index(i / n, i % n)]).collect::<Vec<TC>>()
    };
    let (c_in, c) = (view(&c_in), view(&c));
    let rows = rows_to_check(m, n, full_limit, 256, rng);
    let (expected, magnitude) = reference(&am, &bm, Some((&c_in, n)), options.alpha, options.beta, &rows);
    Ok(compare_rounded(
        &c,
        n,
        n,
        &rows,
        (&expected, &magnitude),
        k,
        input_roundoff(TA::TYPE, TB::TYPE, options.compute)?,
    ))
}

/// The unit roundoff of what A and B are rounded to on their way to the matrix units (0 when
/// neither is rounded).
pub fn input_roundoff(a: ComponentType, b: ComponentType, mode: vk_sgmat::ComputeMode) -> vk_sgmat::Result<f64> {
    use vk_sgmat::kernel::Load;
    let route = vk_sgmat::plan::route(a, b, mode)?;
    Ok(if route.loads.contains(&Load::Round) {
        unit_roundoff(route.component)
    } else if route.loads.contains(&Load::Split) {
        // hi + lo keep 22 significand bits (where the device has no f16 config the exact kernel
        // runs instead, well inside this bound).
        2f64.powi(-22)
    } else {
        0.0
    })
}

pub mod fused;
