//! The matrix-vector plan: a GEMM whose A has at most [`GEMV_MAX_ROWS`] rows (or B as many
//! columns), both operands stored contiguous along K (A row-major, B column-major: weights held
//! `N x K`, as `nn.Linear` stores them), of f16, bf16 or f32 into an f32 C, is one dispatch of
//! the matrix-vector kernel ([`crate::kernel::gemv`]), which reads the large operand once.
//! Pure.

use super::gemm::{fused_vectors, scalar_bits, Dispatch, Kernel, Operand};
use super::passes::{span, window, DispatchLimits, Problem, Window};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{gemv_takes, Epilogue, GemvKey, PushConstants, GEMV_MAX_COLS, GEMV_MAX_ROWS, GEMV_THREADS};
use crate::tiling::{Layout, VECTOR_BYTES};

/// Vectors of each row an invocation loads per step of the K loop, by rows of the vector side
/// (H200, docs/perf/h200-29-3.txt, two passes as streams): two where a step's loads are few
/// (one row: 22016x4096 44.6-44.7 us against 45.3) or its sums many (eight rows: 96.8 against
/// 99.7), one between (two rows: 46.7-46.9 against 47.6). Every difference is within 3%.
fn unroll_for(rows: u32) -> u32 {
    if rows == 1 || rows >= 5 {
        2
    } else {
        1
    }
}

/// Rows of the weights per workgroup, by rows of the vector side (H200, f16 weights of
/// 22016x4096 and 4096x4096, docs/perf/h200-29-2.txt, as streams): four up to four rows (at
/// one row within 2% of two and eight; at four rows 56.7 us against 59.8 for two), two from
/// five on, where each invocation's `rows x cols` sums and the X vectors it loads per W vector
/// outgrow the registers (eight rows: 100.0 us with two, 108.5 with four, 199 with eight).
fn cols_for(rows: u32) -> u32 {
    if rows <= 4 {
        4
    } else {
        2
    }
}

/// `key` made for `rows` rows of the vector side instead (a grouped decode's tiles,
/// [`super::GemmPlan::gemv_grouped_counted`]): the rows of W per workgroup and the vectors per
/// step measured for that many rows (this module's tables, [`super::blocks_cols`] on blocks),
/// where `tuning` does not set them and every invocation reads along each row; invocations
/// sharing rows keep their layout.
pub fn gemv_for_rows(key: GemvKey, rows: u32, (cols, unroll): (Option<u32>, Option<u32>)) -> GemvKey {
    if key.lanes < GEMV_THREADS {
        return GemvKey { rows, ..key };
    }
    let dense = cols.unwrap_or_else(|| cols_for(rows));
    let (cols, unroll) = match key.quant {
        Some(_) if cols.is_none() => (super::blocks_cols(key.elem, rows, dense, key.int8_x), key.unroll),
        Some(_) => (dense, key.unroll),
        None => (dense, unroll.unwrap_or_else(|| unroll_for(rows))),
    };
    GemvKey {
        rows,
        cols,
        unroll,
        ..key
    }
}

/// The matrix-vector dispatch of `p` (C row-major, one GEMM), or `None` where the kernel does
/// not take it: other types or layouts, more rows than [`GEMV_MAX_ROWS`] on both sides, terms
/// the f32 sums cannot take (`terms`' alpha and beta flags follow `alpha` and `beta`; C's
/// element size must be its output type's), or a grid or binding over the device's limits.
/// `tuning` overrides the rows of W per workgroup and the vectors per step (by default the
/// measured choices by rows of the vector side, in this module's tables).
pub fn gemv_dispatch(
    p: &Problem,
    elem: ComponentType,
    ((alpha, beta), terms): ((f64, f64), Epilogue),
    (cols, unroll): (Option<u32>, Option<u32>),
    limits: &DispatchLimits,
) -> Result<Option<Dispatch>> {
    check_tuning(cols, unroll)?;
    let es = elem.size_bytes() as usize;
    let epilogue = Epilogue {
        alpha: alpha != 1.0,
        beta: beta != 0.0,
        ..terms
    };
    let out = epilogue.output_type(ComponentType::F32).size_bytes() as usize;
    let k_contiguous = (p.a_layout, p.b_layout) == (Layout::RowMajor, Layout::ColMajor);
    if p.batch.count != 1
        || !gemv_takes(elem)
        || !k_contiguous
        || (p.a_bytes, p.b_bytes, p.c_bytes) != (es, es, out)
        || epilogue.check(ComponentType::F32).is_err()
    {
        return Ok(None);
    }
    let rows = p.m.min(p.n);
    if rows > GEMV_MAX_ROWS as usize {
        return Ok(None);
    }
    let (c_transposed, (x, x_ld, x_off), (w, w_rows, w_ld, w_off)) = sides(p);
    let rows = rows as u32;
    let key = GemvKey {
        unroll: unroll.unwrap_or_else(|| unroll_for(rows)),
        c_transposed,
        epilogue,
        ..GemvKey::dense(elem, rows, cols.unwrap_or_else(|| cols_for(rows)))
    };
    // Where even one row of W per workgroup does not fit, the GEMM takes the problem.
    let key = match fit_workgroup_memory(key, cols.is_some(), limits) {
        Err(_) if cols.is_none() => return Ok(None),
        fit => fit?,
    };
    let groups = w_rows.div_ceil(key.cols as usize);
    if groups > limits.max_groups[0] as usize {
        return Ok(None);
    }
    let Some([xw, ww, cw]) = windows(
        p,
        (es, out),
        ((x_off, rows as usize, x_ld), (w_off, w_rows, w_ld)),
        limits,
    ) else {
        return Ok(None);
    };
    let vec = u64::from(VECTOR_BYTES);
    let vecs = |ld: usize| ld as u64 * es as u64 / vec;
    // A fused epilogue applies alpha and beta in f32.
    let vectors = fused_vectors(p, &epilogue, limits)?;
    Ok(Some(Dispatch {
        kernel: Kernel::Gemv(key),
        bindings: [(x, xw), (w, ww), (Operand::C, cw)],
        aux: None,
        vectors,
        push: PushConstants {
            m: rows,
            n: w_rows as u32,
            k: p.k as u32,
            lda_vec: vecs(x_ld) as u32,
            ldb_vec: vecs(w_ld) as u32,
            ldc: p.ldc as u32,
            a_off_vec: (xw.start / vec) as u32,
            b_off_vec: (ww.start / vec) as u32,
            c_off: (cw.start / out as u64) as u32,
            alpha_bits: scalar_bits("alpha", alpha, ComponentType::F32)?,
            beta_bits: scalar_bits("beta", beta, ComponentType::F32)?,
            ..Default::default()
        },
        groups: [groups as u32, 1, 1],
        after_previous: false,
    }))
}

/// `key` within the device's workgroup memory ([`GemvKey::shared_bytes`]): where the caller did
/// not choose the rows of W per workgroup (`chosen`), halved until it fits; a typed error where
/// the caller's choice, or one row, does not fit.
pub fn fit_workgroup_memory(mut key: GemvKey, chosen: bool, limits: &DispatchLimits) -> Result<GemvKey> {
    while !chosen && key.lanes == GEMV_THREADS && key.cols > 1 && key.shared_bytes() > limits.max_shared {
        key.cols /= 2;
    }
    if key.shared_bytes() <= limits.max_shared {
        return Ok(key);
    }
    let msg = format!(
        "the matrix-vector kernel for {} rows of X, {} rows of W per workgroup and {} invocations a row takes {} bytes of workgroup memory, over the device's {}",
        key.rows,
        key.cols,
        key.lanes,
        key.shared_bytes(),
        limits.max_shared
    );
    Err(if chosen {
        Error::InvalidOption(format!("{msg}: choose fewer rows of W per workgroup (gemv_cols)"))
    } else {
        Error::TooLarge(format!("{msg}: use fewer rows of X"))
    })
}

/// The vector's operand, leading dimension and offset.
type VectorSide = (Operand, usize, u64);
/// The weight's operand, rows, leading dimension and offset.
type WeightSide = (Operand, usize, usize, u64);

/// Which side of `p` is the vector: the shorter, A's rows, or B's columns (then C^T = B^T A^T,
/// `c_transposed`); the vector's operand, leading dimension and offset, and the weight's with
/// its rows.
fn sides(p: &Problem) -> (bool, VectorSide, WeightSide) {
    let c_transposed = p.n < p.m;
    if c_transposed {
        (
            true,
            (Operand::B, p.ldb, p.offsets[1]),
            (Operand::A, p.m, p.lda, p.offsets[0]),
        )
    } else {
        (
            false,
            (Operand::A, p.lda, p.offsets[0]),
            (Operand::B, p.n, p.ldb, p.offsets[1]),
        )
    }
}

/// A typed error where a tuning choice is out of range.
fn check_tuning(cols: Option<u32>, unroll: Option<u32>) -> Result<()> {
    if let Some(c) = cols.filter(|c| !(1..=GEMV_MAX_COLS).contains(c)) {
        return Err(Error::InvalidOption(format!(
            "gemv_cols = {c}: use 1 to {GEMV_MAX_COLS} rows of the weights per workgroup, or None"
        )));
    }
    if let Some(u) = unroll.filter(|u| !(1..=2).contains(u)) {
        return Err(Error::InvalidOption(format!(
            "gemv_unroll = {u}: use 1 or 2 vectors per step, or None"
        )));
    }
    Ok(())
}

/// The windows of X, W (each `(offset, rows, ld)`, contiguous along K, elements of `es`
/// bytes) and C (elements of `out` bytes) of `p`, or `None` where one is over the device's
/// largest binding or an offset, leading dimension or K the push constants carry does not fit
/// 32 bits.
fn windows(
    p: &Problem,
    (es, out): (usize, usize),
    (x, w): ((u64, usize, usize), (u64, usize, usize)),
    limits: &DispatchLimits,
) -> Option<[Window; 3]> {
    let operand = |(offset, outer, ld): (u64, usize, usize)| {
        let (start, len) = span(0, 0, outer, p.k, ld, es, true);
        window(offset + start, len, limits)
    };
    let (xw, ww) = (operand(x), operand(w));
    let (c_start, c_len) = span(0, 0, p.m, p.n, p.ldc, out, false);
    let cw = window(p.offsets[2] + c_start, c_len, limits);
    let vec = u64::from(VECTOR_BYTES);
    let vecs = |ld: usize| ld as u64 * es as u64 / vec;
    let fits32 = [
        xw.start / vec,
        ww.start / vec,
        cw.start / out as u64,
        vecs(x.2),
        vecs(w.2),
        p.ldc as u64,
        p.k as u64,
    ]
    .iter()
    .all(|&v| v <= u64::from(u32::MAX));
    let bound = [xw, ww, cw].iter().all(|w| w.bind_range <= limits.max_range);
    (fits32 && bound).then_some([xw, ww, cw])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{device_problem, Batch};

    fn limits() -> DispatchLimits {
        DispatchLimits {
            max_groups: [65535; 3],
            max_range: u64::from(u32::MAX),
            offset_alignment: 16,
            max_allocation: u64::MAX,
            max_shared: u32::MAX,
        }
    }

    fn problem(m: usize, n: usize, k: usize, layouts: (Layout, Layout), es: usize) -> Problem {
        device_problem((m, n, k), layouts, (es, es, 4))
    }

    const NT: (Layout, Layout) = (Layout::RowMajor, Layout::ColMajor);

    #[test]
    fn short_sides_on_k_contiguous_operands_take_the_matrix_vector_kernel() {
        for (m, n, rows, transposed) in [
            (1, 4096, 1, false),
            (8, 22016, 8, false),
            (4099, 3, 3, true),
            (1, 1, 1, false),
        ] {
            let p = problem(m, n, 4096, NT, 2);
            let d = gemv_dispatch(
                &p,
                ComponentType::F16,
                ((1.0, 0.0), Epilogue::default()),
                (None, None),
                &limits(),
            )
            .unwrap()
            .unwrap_or_else(|| panic!("{m}x{n}"));
            let Kernel::Gemv(key) = d.kernel else {
                panic!("{:?}", d.kernel)
            };
            assert_eq!((key.rows, key.c_transposed), (rows, transposed), "{m}x{n}");
            let w_rows = m.max(n);
            assert_eq!(d.groups[0] as usize, w_rows.div_ceil(key.cols as usize));
            assert_eq!(d.push.n as usize, w_rows);
            let x = if transposed { Operand::B } else { Operand::A };
            assert_eq!(d.bindings[0].0, x);
            assert!(!key.epilogue.alpha && !key.epilogue.beta);
        }
    }

    #[test]
    fn workgroup_memory_over_the_device_halves_the_rows_of_w_or_is_refused_where_chosen() {
        // Vulkan's guaranteed 16 KiB: eight rows of X take 4 KiB of sums per row of W.
        let small = DispatchLimits {
            max_shared: 16 << 10,
            ..limits()
        };
        let plan = |rows: usize, cols: Option<u32>, limits: &DispatchLimits| {
            let p = problem(rows, 22016, 4096, NT, 4);
            let d = gemv_dispatch(
                &p,
                ComponentType::F32,
                ((1.0, 0.0), Epilogue::default()),
                (cols, None),
                limits,
            )?;
            Ok::<_, Error>(d.map(|d| match d.kernel {
                Kernel::Gemv(key) => (key, d.groups[0]),
                k => panic!("{k:?}"),
            }))
        };
        for (rows, cols) in [(8, 8), (8, 4), (5, 4), (4, 8), (1, 8)] {
            let (wide, _) = plan(rows, Some(cols), &limits()).unwrap().unwrap();
            let fits = wide.shared_bytes() <= small.max_shared;
            assert_eq!(wide.shared_bytes(), 4 * (rows as u32 * cols + 1) * GEMV_THREADS);
            match plan(rows, Some(cols), &small) {
                Ok(Some((key, _))) => assert!(fits && key.cols == cols, "{rows}x{cols}"),
                Err(Error::InvalidOption(msg)) => {
                    assert!(
                        !fits && msg.contains("workgroup memory") && msg.contains("16384"),
                        "{msg}"
                    )
                }
                other => panic!("{rows}x{cols}: {other:?}"),
            }
        }
        for rows in 1..=GEMV_MAX_ROWS as usize {
            let (key, groups) = plan(rows, None, &small).unwrap().unwrap();
            let (wide, _) = plan(rows, None, &limits()).unwrap().unwrap();
            assert!(key.shared_bytes() <= small.max_shared, "{rows} rows: {key:?}");
            assert!(key.cols <= wide.cols && key.cols >= 1);
            assert_eq!(groups as usize, 22016usize.div_ceil(key.cols as usize));
        }
        // Not even one row of W: the GEMM takes it.
        let tiny = DispatchLimits {
            max_shared: 1 << 10,
            ..limits()
        };
        assert!(plan(8, None, &tiny).unwrap().is_none());
    }

    #[test]
    fn other_shapes_types_and_layouts_keep_the_gemm() {
        let none = |p: &Problem, t: ComponentType| {
            gemv_dispatch(p, t, ((1.0, 0.0), Epilogue::default()), (None, None), &limits())
                .unwrap()
                .is_none()
        };
        assert!(
            none(&problem(9, 9, 64, NT, 2), ComponentType::F16),
            "9 rows on both sides"
        );
        for layouts in [
            (Layout::RowMajor, Layout::RowMajor),
            (Layout::ColMajor, Layout::ColMajor),
            (Layout::ColMajor, Layout::RowMajor),
        ] {
            assert!(
                none(&problem(1, 4096, 64, layouts, 2), ComponentType::F16),
                "{layouts:?}"
            );
        }
        assert!(none(&device_problem((1, 64, 64), NT, (1, 1, 4)), ComponentType::I8));
        assert!(
            none(&device_problem((1, 64, 64), NT, (2, 2, 2)), ComponentType::F16),
            "an f16 C without its output cast"
        );
        let mut batch = problem(1, 64, 64, NT, 2);
        batch.batch = Batch {
            count: 2,
            strides: [64, 64 * 64, 64],
        };
        assert!(none(&batch, ComponentType::F16), "a batch");
        let small = DispatchLimits {
            max_groups: [100, 65535, 65535],
            ..limits()
        };
        let p = problem(1, 4096, 64, NT, 2);
        assert!(gemv_dispatch(
            &p,
            ComponentType::F16,
            ((1.0, 0.0), Epilogue::default()),
            (None, None),
            &small
        )
        .unwrap()
        .is_none());
    }

    #[test]
    fn windows_cover_what_the_kernel_reads() {
        let (m, n, k) = (3, 1000, 77);
        let mut p = problem(m, n, k, NT, 4);
        p.offsets = [32, 48, 64];
        let d = gemv_dispatch(
            &p,
            ComponentType::F32,
            ((2.0, 0.5), Epilogue::default()),
            (None, None),
            &limits(),
        )
        .unwrap()
        .unwrap();
        let [(_, x), (_, w), (_, c)] = d.bindings;
        let whole_vectors = k.next_multiple_of(4) * 4;
        assert_eq!(x.start + x.bind_offset, 32);
        assert!(x.bind_range - x.start >= ((m - 1) * p.lda * 4 + whole_vectors) as u64);
        assert!(w.bind_range - w.start >= ((n - 1) * p.ldb * 4 + whole_vectors) as u64);
        assert_eq!(c.bind_range - c.start, ((m - 1) * p.ldc + n) as u64 * 4);
        assert_eq!(u64::from(d.push.c_off) * 4, c.start);
        let Kernel::Gemv(key) = d.kernel else { panic!() };
        assert!(key.epilogue.alpha && key.epilogue.beta);
        assert_eq!(f32::from_bits(d.push.alpha_bits), 2.0);
    }

    #[test]
    fn a_16_bit_c_is_an_output_cast_of_the_f32_sums() {
        let mut p = device_problem((3, 70, 33), NT, (2, 2, 2));
        p.offsets = [0, 0, 32];
        let cast = Epilogue {
            output: Some(ComponentType::F16),
            ..Epilogue::default()
        };
        let d = gemv_dispatch(&p, ComponentType::F16, ((1.0, 0.5), cast), (None, None), &limits())
            .unwrap()
            .expect("an f16 C with its cast");
        let Kernel::Gemv(key) = d.kernel else { panic!() };
        assert_eq!(
            (key.epilogue.output, key.epilogue.beta),
            (Some(ComponentType::F16), true)
        );
        let c = d.bindings[2].1;
        assert_eq!(u64::from(d.push.c_off) * 2, c.start);
        assert_eq!(c.bind_range - c.start, ((3 - 1) * p.ldc + 70) as u64 * 2);
        let int = Epilogue {
            output: Some(ComponentType::I32),
            ..Epilogue::default()
        };
        let p = device_problem((3, 70, 33), NT, (2, 2, 4));
        assert!(
            gemv_dispatch(&p, ComponentType::F16, ((1.0, 0.0), int), (None, None), &limits())
                .unwrap()
                .is_none()
        );
    }
}
