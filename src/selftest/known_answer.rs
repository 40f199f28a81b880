//! The known-answer GEMM of one kernel family: a small problem of small integers, one whole tile
//! and a remainder along M, N and K (so every edge path runs), in the family's storage orders,
//! loads and whole epilogue (alpha, beta, bias, dequantisation scales, activation, output cast)
//! and, for a grouped kernel, two groups of rows with a weight each, whose exact answer every
//! element type holds (a smooth activation's, within its f32 evaluation). Plain data, built
//! without a device, so what the self-test runs is itself tested on any machine.

use super::operands::{decode, encode, exact_limit, fill, Filled, Values};
use crate::api::poison_pattern;
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{Activation, Axis, Epilogue, KernelKey, Load, Probe};
use crate::plan::{device_problem, PlanRequest, SplitK};
use crate::tiling::Layout;

/// The kernel a verdict covers: `key` as the GEMM runs it, whole epilogue, grouping and sizes
/// built in included (each a kernel of its own the driver compiles differently), less diagnostic
/// probes. So the test runs on the very pipeline the GEMM that met the family needs, and costs
/// no compile of its own (seconds on NVIDIA).
pub(crate) fn family(key: &KernelKey) -> KernelKey {
    KernelKey {
        probe: Probe::Full,
        ..*key
    }
}

/// A known-answer GEMM: the plan request, the operands' bytes in device layout, and C's exact
/// values.
#[derive(Clone, Debug)]
pub(crate) struct KnownAnswer {
    /// What to plan: the family's config, scheme, loads and epilogue.
    pub request: PlanRequest,
    /// A, B and C's bytes as the device holds them (C poisoned where beta is off; B holds a
    /// weight per group, `b_stride` elements apart).
    pub bytes: [Vec<u8>; 3],
    /// The epilogue's vectors in binding order (bias, row scales, column scales), where on.
    pub vectors: [Option<Vec<u8>>; 3],
    /// A grouped kernel's rows per group (empty for one GEMM) and the elements from one
    /// group's weight to the next.
    pub groups: (Vec<usize>, usize),
    /// C's type.
    pub c_type: ComponentType,
    /// The activation applied to the exact values last.
    pub activation: Activation,
    /// C's exact values before the activation where checked: (row, column, value).
    pub expected: Vec<(usize, usize, i64)>,
}

/// The known-answer GEMM of `family` (see [`family`]) whose buffers each fit `max_bytes`: one
/// whole tile and a remainder along M, N and K, or where that is too large (a context whose
/// allocation limit is cut below a tile, to test cutting), a tile's edge alone. A kernel with
/// sizes built in runs at its own N, K and leading dimensions (M stays free: a tile and a
/// remainder), on its own pipeline, and is checked on sampled columns: the first tile's, those
/// around its edge, and the last ones.
pub(crate) fn known_answer(family: &KernelKey, max_bytes: u64) -> Result<KnownAnswer> {
    let g = family.scheme.geometry(&family.tile_config());
    let (bm, bn, bk) = (g.bm as usize, g.bn as usize, g.bk as usize);
    let fits = |answer: &KnownAnswer| answer.bytes.iter().all(|b| b.len() as u64 <= max_bytes);
    let mut last = 0;
    if let Some(f) = family.fixed {
        let (n, k) = (f.n as usize, f.k as usize);
        let lds = (f.lda as usize, f.ldb as usize, f.ldc as usize);
        // A column-major A holds at most `lda` rows.
        let m = (bm + 3).min(if family.a_layout == Layout::ColMajor {
            lds.0
        } else {
            usize::MAX
        });
        let around_edge = bn.saturating_sub(4)..bn + 4;
        let mut columns: Vec<usize> = (0..8)
            .chain(around_edge)
            .chain(n.saturating_sub(8)..n)
            .filter(|&j| j < n)
            .collect();
        columns.sort_unstable();
        columns.dedup();
        let answer = known_answer_at(
            family,
            Test {
                shape: (m, n, k),
                lds: Some(lds),
                columns,
            },
        )?;
        if fits(&answer) {
            return Ok(answer);
        }
        last = answer.bytes.iter().map(Vec::len).max().unwrap_or(0);
    } else {
        let shapes = [(bm + 3, bn + 5, bk + 3), (bm - 1, bn - 1, bk - 1), (3, 5, 3)];
        for (m, n, k) in shapes.map(|(m, n, k)| (m.max(1), n.max(1), k.max(1))) {
            let test = Test {
                shape: (m, n, k),
                lds: None,
                columns: (0..n).collect(),
            };
            let answer = known_answer_at(family, test)?;
            if fits(&answer) {
                return Ok(answer);
            }
            last = answer.bytes.iter().map(Vec::len).max().unwrap_or(0);
        }
    }
    Err(Error::TooLarge(format!(
        "the self-test's smallest known-answer GEMM needs {last} bytes a buffer, over the allocation limit of {max_bytes}"
    )))
}

/// One known-answer problem: its shape, the leading dimensions a kernel with sizes built in
/// has (else vk-sgmat's own), and the columns of C checked (every row of each).
struct Test {
    shape: (usize, usize, usize),
    lds: Option<(usize, usize, usize)>,
    columns: Vec<usize>,
}

/// The integers a known answer is made of: alpha and beta (`None`: off), operand values in
/// `-v..=v` (`0..=v` unsigned) and A's sparsity, so that every value of C is exact in its type.
struct Scale {
    alpha: Option<i64>,
    beta: Option<i64>,
    v: i64,
    sparse: usize,
    unsigned: bool,
}

impl Scale {
    /// The scale of `family`'s test along `k`, whose sums are stored as `tc`.
    fn of(family: &KernelKey, [ta, tb, tc]: [ComponentType; 3], k: usize) -> Result<Self> {
        let ep = family.epilogue;
        let ct = family.config.component_type;
        let unsigned = !ct.is_float() && !ct.is_signed_int();
        // alpha and beta exact in every result type: a sign flip, or 2 where results are unsigned.
        let scalar = |on: bool| match (on, unsigned) {
            (false, _) => None,
            (true, false) => Some(-1i64),
            (true, true) => Some(2),
        };
        let (alpha, beta) = (scalar(ep.alpha), scalar(ep.beta));
        // Every input type holds -2..=2; the sums must be exact in C's.
        exact_limit(ta)?;
        exact_limit(tb)?;
        let limit = exact_limit(tc)?;
        // |C| <= |alpha| * |scales| * terms * v^2 + |beta| * 2 + |bias|, with `terms` nonzero
        // products per element, dequantisation scales in {-1, 1, 2} (a product of two at most
        // 4) and a bias in -2..=2: integers, exact in f32 and in C's type.
        let scale = alpha.unwrap_or(1).abs() * if ep.dequant { 4 } else { 1 };
        let extra = beta.map_or(0, |b| 2 * b.abs()) + if ep.bias.is_some() { 2 } else { 0 };
        let room = |terms: i64, v: i64| scale * terms * v * v + extra;
        let v = if room(k as i64, 2) <= limit { 2 } else { 1 };
        // Where even ones would pass C's exact range (an f16 C past K = 2048, a bf16 one past
        // 256), A keeps one value in `sparse` along each row, on a diagonal pattern so that every
        // K position still meets a nonzero in some row.
        let terms = ((limit - extra) / (scale * v * v)).max(1);
        Ok(Self {
            alpha,
            beta,
            v,
            sparse: (k as u64).div_ceil(terms as u64).max(1) as usize,
            unsigned,
        })
    }

    /// The operands' range for values up to `v`.
    fn range(&self, v: i64) -> (i64, i64) {
        if self.unsigned {
            (0, v)
        } else {
            (-v, v)
        }
    }
}

/// A fused epilogue's vectors as integers: the bias (its axis and type), and the row and
/// column dequantisation scales. Column vectors hold each group's N values, group after group;
/// row vectors one per row.
struct Vectors {
    bias: Option<(Axis, ComponentType, Vec<i64>)>,
    scales: Option<(Vec<i64>, Vec<i64>)>,
}

impl Vectors {
    /// `ep`'s vectors for `rows` rows and `cols` columns (every group's), drawn from `values`:
    /// a bias in -2..=2, scales in {-1, 1, 2}.
    fn draw(values: &mut Values, ep: &Epilogue, (rows, cols): (usize, usize)) -> Self {
        let mut draw =
            |len: usize, pick: fn(i64) -> i64| -> Vec<i64> { (0..len).map(|_| pick(values.next(-2, 2))).collect() };
        let along = |axis: Axis| if axis == Axis::Row { rows } else { cols };
        let bias = ep.bias.map(|(axis, t)| (axis, t, draw(along(axis), |x| x)));
        let to_scale: fn(i64) -> i64 = |x| [-1, 1, 1, 2, 2][(x + 2) as usize];
        let scales = ep.dequant.then(|| (draw(rows, to_scale), draw(cols, to_scale)));
        Self { bias, scales }
    }

    /// Element (i, j)'s scale product and bias, `column` being j's index into column vectors.
    fn at(&self, i: usize, column: usize) -> (i64, i64) {
        let s = self.scales.as_ref().map_or(1, |(r, c)| r[i] * c[column]);
        let bias = self
            .bias
            .as_ref()
            .map_or(0, |(axis, _, v)| v[if *axis == Axis::Row { i } else { column }]);
        (s, bias)
    }

    /// Their bytes in binding order (bias, row scales, column scales), in whole 32-bit words as
    /// the kernel reads them.
    fn bytes(&self) -> [Option<Vec<u8>>; 3] {
        let encoded = |t: ComponentType, v: &[i64]| -> Vec<u8> {
            let es = t.size_bytes() as usize;
            let mut out = vec![0u8; (v.len() * es).next_multiple_of(4)];
            for (x, at) in v.iter().zip(out.chunks_exact_mut(es)) {
                encode(t, *x, at);
            }
            out
        };
        [
            self.bias.as_ref().map(|(_, t, v)| encoded(*t, v)),
            self.scales.as_ref().map(|(r, _)| encoded(ComponentType::F32, r)),
            self.scales.as_ref().map(|(_, c)| encoded(ComponentType::F32, c)),
        ]
    }
}

/// The known-answer GEMM of `family` for `test`.
fn known_answer_at(family: &KernelKey, test: Test) -> Result<KnownAnswer> {
    let (m, n, k) = test.shape;
    let (config, ep) = (family.config, family.epilogue);
    // The accurate split done first runs from f32 operands: its planes are the plan's own.
    let (loads, convert_first) = match family.loads {
        [Load::Planes, Load::Planes] => ([Load::Split; 2], true),
        loads => (loads, false),
    };
    let [ta, tb] = loads.map(|l| l.storage_type(config.component_type));
    let tc = ep.output.unwrap_or(config.result_type);
    let scale = Scale::of(family, [ta, tb, tc], k)?;
    // A grouped kernel runs two groups, the first ending inside a tile, so the second's first
    // tile starts mid-tile and each tile stops at its group's end.
    let groups: Vec<usize> = if family.grouped {
        vec![m.div_ceil(2), m / 2]
    } else {
        Vec::new()
    };
    let weights = groups.len().max(1);
    let sizes = [ta, tb, tc].map(|t| t.size_bytes() as usize);
    let mut p = device_problem((m, n, k), (family.a_layout, family.b_layout), sizes.into());
    if let Some((lda, ldb, ldc)) = test.lds {
        (p.lda, p.ldb, p.ldc) = (lda, ldb, ldc);
    }
    let mut values = Values::seeded();
    let lds = (p.lda, p.ldb, p.ldc);
    let (a, b, c) = draw_operands(&mut values, (family, &test), [ta, tb, tc], lds, (&scale, weights));
    let b_stride = b[0].bytes.len() / sizes[1];
    let vectors = Vectors::draw(&mut values, &ep, (m, n * weights));
    let expected = expected(&test, (&a, &b, &c), (&scale, &vectors), &groups, (m, n, k));
    // The weights one after another, the first moved rather than copied (it can be 180 MB).
    let mut weights_bytes = b.into_iter().map(|b| b.bytes);
    let first = weights_bytes.next().unwrap_or_default();
    let b_bytes = weights_bytes.fold(first, |mut all, w| {
        all.extend_from_slice(&w);
        all
    });
    let request = PlanRequest {
        problem: p,
        config,
        scheme: family.scheme,
        loads,
        alpha: scale.alpha.unwrap_or(1) as f64,
        beta: scale.beta.unwrap_or(0) as f64,
        split_k: SplitK::Slices(1),
        epilogue: ep,
        convert_first,
        relayout: [false; 2],
        specialize: test.lds.is_some(),
    };
    Ok(KnownAnswer {
        request,
        bytes: [a.bytes, b_bytes, c.bytes],
        vectors: vectors.bytes(),
        groups: (groups, b_stride),
        c_type: tc,
        activation: ep.activation,
        expected,
    })
}

/// A, the weights (one per group) and C of `test` in `family`'s layouts, drawn from `values`;
/// C poisoned where beta leaves it unread, so an element the kernel does not write shows.
fn draw_operands(
    values: &mut Values,
    (family, test): (&KernelKey, &Test),
    [ta, tb, tc]: [ComponentType; 3],
    (lda, ldb, ldc): (usize, usize, usize),
    (scale, weights): (&Scale, usize),
) -> (Filled, Vec<Filled>, Filled) {
    let (m, n, k) = test.shape;
    let range = scale.range(scale.v);
    // Where only some columns of C are checked (a kernel with sizes built in, whose B can be a
    // weight's size), B and C hold values in those alone: drawing the whole of a 22016x4096 B
    // took over a second of a Llama layer's cold preparation.
    let only = (test.columns.len() < n).then_some(&test.columns[..]);
    let a = fill(values, (m, k), (family.a_layout, lda), ta, range, (scale.sparse, None));
    let b = (0..weights)
        .map(|_| fill(values, (k, n), (family.b_layout, ldb), tb, range, (1, only)))
        .collect();
    let mut c = fill(values, (m, n), (Layout::RowMajor, ldc), tc, scale.range(2), (1, only));
    if scale.beta.is_none() {
        // Every element must be written: a NaN (or an unlikely integer) shows one that is not.
        let poison = poison_pattern(tc).to_le_bytes();
        for (i, x) in c.bytes.iter_mut().enumerate() {
            *x = poison[i % 4];
        }
    }
    (a, b, c)
}

/// The exact results of the checked columns of `test`, `(row, column, value)`: `a x b` (the
/// group's weight per row), scaled, with beta times `c`'s old value and the epilogue's bias.
fn expected(
    test: &Test,
    (a, b, c): (&Filled, &[Filled], &Filled),
    (scale, vectors): (&Scale, &Vectors),
    groups: &[usize],
    (m, n, k): (usize, usize, usize),
) -> Vec<(usize, usize, i64)> {
    let group_of = |i: usize| usize::from(!groups.is_empty() && i >= groups[0]);
    let mut expected = Vec::with_capacity(m * test.columns.len());
    for &j in &test.columns {
        let columns: Vec<Vec<i64>> = b
            .iter()
            .map(|b| (0..k).map(|l| i64::from(b.values[l * n + j])).collect())
            .collect();
        for i in 0..m {
            let g = group_of(i);
            let row = &a.values[i * k..(i + 1) * k];
            let dot: i64 = row.iter().zip(&columns[g]).map(|(&x, &y)| i64::from(x) * y).sum();
            let (s, bias) = vectors.at(i, g * n + j);
            let c0 = i64::from(c.values[i * n + j]);
            let value = scale.alpha.unwrap_or(1) * s * dot + scale.beta.map_or(0, |beta| beta * c0) + bias;
            expected.push((i, j, value));
        }
    }
    expected
}

/// The first element of `c` (C's bytes in device layout) that differs from the known answer, as
/// a sentence; `None` where every element checked is exact (within the f32 evaluation and C's
/// rounding of a smooth activation, whose reference is f64).
pub(crate) fn first_wrong(answer: &KnownAnswer, c: &[u8]) -> Option<String> {
    let p = &answer.request.problem;
    let es = p.c_bytes;
    let act = answer.activation;
    let smooth = !matches!(act, Activation::None | Activation::Relu);
    let rounding = match answer.c_type {
        ComponentType::F16 => 2f64.powi(-10),
        ComponentType::Bf16 => 2f64.powi(-7),
        _ => 2f64.powi(-22),
    };
    answer.expected.iter().find_map(|&(i, j, value)| {
        let at = (i * p.ldc + j) * es;
        let got = decode(answer.c_type, &c[at..at + es]);
        let want = act.reference(value as f64);
        // 4e-6 covers f32's exp and erfc fit (as the tests' fused bound), per unit of input.
        let bound = if smooth {
            4e-6 * (1.0 + (value as f64).abs()) + rounding * want.abs()
        } else {
            0.0
        };
        // Compared this way round so that a NaN fails.
        let close = (got - want).abs() <= bound;
        (!close).then(|| {
            format!(
                "C[{i}][{j}] = {got} where {want} is {} ({}x{}x{}, A {:?}, B {:?})",
                if smooth { "the answer" } else { "exact" },
                p.m,
                p.n,
                p.k,
                p.a_layout,
                p.b_layout
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComponentType::*;
    use crate::kernel::FixedSizes;
    use crate::tiling::test_support::{cfg, h200_limits};
    use crate::tiling::TileScheme;

    fn key(ab: ComponentType, r: ComponentType, layouts: (Layout, Layout)) -> KernelKey {
        let config = cfg(16, 16, 16, ab, r);
        KernelKey {
            config,
            scheme: TileScheme::new(&config, &h200_limits(), 32, (2, 2), (2, 2), 32).unwrap(),
            a_layout: layouts.0,
            b_layout: layouts.1,
            epilogue: Epilogue::default(),
            loads: [Load::Native; 2],
            probe: Probe::Full,
            grouped: false,
            fixed: None,
        }
    }

    /// C's bytes holding `entries` (row-major, `ldc` apart), zeros elsewhere.
    fn c_bytes(answer: &KnownAnswer, entries: &[(usize, usize, i64)]) -> Vec<u8> {
        let p = &answer.request.problem;
        let mut out = vec![0u8; p.m * p.ldc * p.c_bytes];
        for &(i, j, v) in entries {
            let at = (i * p.ldc + j) * p.c_bytes;
            encode(answer.c_type, v, &mut out[at..at + p.c_bytes]);
        }
        out
    }

    #[test]
    fn a_family_is_the_kernel_as_it_runs_but_its_probe() {
        let mut k = key(F16, F32, (Layout::RowMajor, Layout::ColMajor));
        k.epilogue = Epilogue {
            alpha: true,
            beta: true,
            bias: Some((Axis::Col, F32)),
            activation: Activation::Gelu,
            output: Some(F16),
            ..Epilogue::default()
        };
        k.grouped = true;
        k.probe = Probe::NoMma;
        let f = family(&k);
        assert_eq!(f.probe, Probe::Full);
        assert_eq!(
            KernelKey {
                probe: Probe::NoMma,
                ..f
            },
            k
        );
    }

    #[test]
    fn each_tile_has_an_edge_and_every_answer_is_exact_in_its_type() {
        for (ab, r) in [(F16, F32), (F16, F16), (Bf16, F32), (I8, I32), (U8, U32)] {
            for (alpha, beta) in [(false, false), (true, true)] {
                let mut k = key(ab, r, (Layout::ColMajor, Layout::RowMajor));
                k.epilogue.alpha = alpha;
                k.epilogue.beta = beta;
                let answer = known_answer(&k, u64::MAX).unwrap();
                let p = &answer.request.problem;
                let g = k.scheme.geometry(&k.config);
                assert!(p.m > g.bm as usize && p.m % g.bm as usize != 0, "{p:?}");
                assert!(p.n > g.bn as usize && p.n % g.bn as usize != 0);
                assert!(p.k > g.bk as usize && p.k % g.bk as usize != 0);
                let limit = exact_limit(answer.c_type).unwrap();
                assert_eq!(answer.expected.len(), p.m * p.n, "every element checked");
                assert!(answer.expected.iter().all(|e| e.2.abs() <= limit));
                assert!(
                    answer.expected.iter().any(|e| e.2 != 0),
                    "a product of zeros tests nothing"
                );
                if ab == U8 {
                    assert!(answer.expected.iter().all(|e| e.2 >= 0));
                }
                // The exact answer is accepted, poisoned C and one wrong element are not.
                assert_eq!(first_wrong(&answer, &c_bytes(&answer, &answer.expected)), None);
                if !beta {
                    assert!(first_wrong(&answer, &answer.bytes[2]).is_some(), "poisoned C passed");
                }
                let mut wrong = answer.expected.clone();
                let (i, j, v) = *wrong.last().unwrap();
                *wrong.last_mut().unwrap() = (i, j, v + 1);
                let said = first_wrong(&answer, &c_bytes(&answer, &wrong)).expect("one element off");
                assert!(said.starts_with(&format!("C[{i}][{j}]")), "{said}");
            }
        }
    }

    /// C's values before the activation, recomputed from the bytes the device gets: A, each
    /// group's weight, old C and the epilogue's vectors, decoded.
    fn recomputed(answer: &KnownAnswer, ab: ComponentType) -> Vec<i64> {
        let p = answer.request.problem;
        let r = &answer.request;
        let (rows, b_stride) = &answer.groups;
        let at = |bytes: &[u8], t: ComponentType, i: usize| {
            let es = t.size_bytes() as usize;
            match t {
                I8 => f64::from(bytes[i] as i8),
                U8 => f64::from(bytes[i]),
                t => decode(t, &bytes[i * es..]),
            }
        };
        let index = |layout, (i, j): (usize, usize), ld: usize| match layout {
            Layout::RowMajor => i * ld + j,
            Layout::ColMajor => j * ld + i,
        };
        let vector = |v: usize, t, i| answer.vectors[v].as_ref().map(|bytes| at(bytes, t, i));
        let bias_type = r.epilogue.bias.map_or(F32, |(_, t)| t);
        answer
            .expected
            .iter()
            .map(|&(i, j, _)| {
                let g = usize::from(!rows.is_empty() && i >= rows[0]);
                let dot: f64 = (0..p.k)
                    .map(|l| {
                        let a = at(&answer.bytes[0], ab, index(p.a_layout, (i, l), p.lda));
                        let b = at(&answer.bytes[1], ab, g * b_stride + index(p.b_layout, (l, j), p.ldb));
                        a * b
                    })
                    .sum();
                let s = vector(1, F32, i).unwrap_or(1.0) * vector(2, F32, g * p.n + j).unwrap_or(1.0);
                let c0 = at(&answer.bytes[2], answer.c_type, i * p.ldc + j);
                let along = match r.epilogue.bias {
                    Some((Axis::Row, _)) => i,
                    _ => g * p.n + j,
                };
                let v = r.alpha * s * dot + r.beta * c0 + vector(0, bias_type, along).unwrap_or(0.0);
                v as i64
            })
            .collect()
    }

    #[test]
    fn fused_and_grouped_answers_are_exact_and_what_the_device_gets() {
        let fused = |ab, r, bias, activation, dequant, output| {
            let mut k = key(ab, r, (Layout::RowMajor, Layout::ColMajor));
            k.epilogue = Epilogue {
                alpha: true,
                beta: true,
                bias,
                activation,
                dequant,
                output,
            };
            k
        };
        let cases = [
            fused(F16, F32, Some((Axis::Col, F16)), Activation::Gelu, false, Some(F16)),
            fused(Bf16, F32, Some((Axis::Row, Bf16)), Activation::Relu, false, Some(Bf16)),
            fused(I8, I32, Some((Axis::Col, F32)), Activation::Silu, true, Some(F32)),
            fused(U8, U32, None, Activation::GeluErf, true, Some(F16)),
        ];
        for (n, base) in cases.into_iter().enumerate() {
            for grouped in [false, true] {
                let k = KernelKey { grouped, ..base };
                let answer = known_answer(&k, u64::MAX).unwrap();
                let case = format!("case {n}, grouped {grouped}");
                let (rows, b_stride) = &answer.groups;
                let p = answer.request.problem;
                if grouped {
                    assert_eq!(rows.iter().sum::<usize>(), p.m, "{case}");
                    assert!(rows[0] % k.scheme.geometry(&k.config).bm as usize != 0, "{case}");
                    assert_eq!(answer.bytes[1].len(), 2 * b_stride * p.b_bytes, "{case}");
                } else {
                    assert!(rows.is_empty());
                }
                let limit = exact_limit(answer.c_type).unwrap();
                assert!(answer.expected.iter().all(|e| e.2.abs() <= limit), "{case}");
                let want: Vec<i64> = answer.expected.iter().map(|e| e.2).collect();
                assert_eq!(recomputed(&answer, k.config.component_type), want, "{case}");
                // Every element of both groups differs from a product with the other's weight
                // somewhere: the weights are not the same.
                if grouped {
                    let (w0, w1) = answer.bytes[1].split_at(b_stride * p.b_bytes);
                    assert_ne!(w0, w1, "{case}");
                }
                // The activated answer passes; one element a unit off before it does not.
                let activated = |v: i64| {
                    let mut b = [0u8; 4];
                    let x = k.epilogue.activation.reference(v as f64);
                    match answer.c_type {
                        F16 => b[..2].copy_from_slice(&half::f16::from_f64(x).to_le_bytes()),
                        Bf16 => b[..2].copy_from_slice(&half::bf16::from_f64(x).to_le_bytes()),
                        _ => b.copy_from_slice(&(x as f32).to_le_bytes()),
                    }
                    b
                };
                let es = p.c_bytes;
                let mut c = vec![0u8; p.m * p.ldc * es];
                for &(i, j, v) in &answer.expected {
                    c[(i * p.ldc + j) * es..][..es].copy_from_slice(&activated(v)[..es]);
                }
                assert_eq!(first_wrong(&answer, &c), None, "{case}");
                let &(i, j, v) = answer.expected.iter().max_by_key(|e| e.2).unwrap();
                c[(i * p.ldc + j) * es..][..es].copy_from_slice(&activated(v + 1)[..es]);
                let said = first_wrong(&answer, &c).expect("one element off");
                assert!(said.starts_with(&format!("C[{i}][{j}]")), "{case}: {said}");
            }
        }
    }

    #[test]
    fn the_operands_hold_the_values_the_answer_was_computed_from() {
        let k = key(F16, F32, (Layout::ColMajor, Layout::ColMajor));
        let answer = known_answer(&k, u64::MAX).unwrap();
        let p = answer.request.problem;
        let a = |i: usize, l: usize| decode(F16, &answer.bytes[0][(l * p.lda + i) * 2..]) as i64;
        let b = |l: usize, j: usize| decode(F16, &answer.bytes[1][(j * p.ldb + l) * 2..]) as i64;
        for &(i, j, want) in &answer.expected {
            let dot: i64 = (0..p.k).map(|l| a(i, l) * b(l, j)).sum();
            assert_eq!(want, dot, "C[{i}][{j}]");
        }
    }

    #[test]
    fn the_accurate_split_done_first_is_tested_from_f32_operands() {
        let mut k = key(F16, F32, (Layout::RowMajor, Layout::RowMajor));
        k.loads = [Load::Planes; 2];
        let answer = known_answer(&k, u64::MAX).unwrap();
        assert!(answer.request.convert_first && answer.request.loads == [Load::Split; 2]);
        assert_eq!((answer.request.problem.a_bytes, answer.request.problem.b_bytes), (4, 4));
    }

    #[test]
    fn a_kernel_with_sizes_built_in_runs_at_its_own_sizes_and_is_checked_on_sampled_columns() {
        let mut k = key(F16, F32, (Layout::ColMajor, Layout::RowMajor));
        k.fixed = Some(FixedSizes {
            n: 300,
            k: 200,
            lda: 136,
            ldb: 304,
            ldc: 304,
        });
        let answer = known_answer(&k, u64::MAX).unwrap();
        let p = answer.request.problem;
        assert!(answer.request.specialize);
        assert_eq!((p.n, p.k, p.lda, p.ldb, p.ldc), (300, 200, 136, 304, 304));
        let bm = k.scheme.geometry(&k.config).bm as usize;
        assert_eq!(p.m, (bm + 3).min(136), "a column-major A holds lda rows");
        let columns: std::collections::BTreeSet<usize> = answer.expected.iter().map(|e| e.1).collect();
        assert!(
            columns.contains(&0) && columns.contains(&299) && columns.len() < 40,
            "{columns:?}"
        );
        assert_eq!(answer.expected.len(), p.m * columns.len(), "every row of each");
        assert_eq!(answer.bytes[1].len(), 200 * 304 * 2);
        // B (row-major, ldb 304) holds values in the checked columns alone.
        let b = |l: usize, j: usize| decode(F16, &answer.bytes[1][(l * p.ldb + j) * 2..]);
        for j in 0..p.n {
            let nonzero = (0..p.k).filter(|&l| b(l, j) != 0.0).count();
            assert_eq!(nonzero > 0, columns.contains(&j), "column {j}: {nonzero} values");
        }
    }

    #[test]
    fn a_long_k_into_a_16_bit_c_stays_exact_by_a_sparse_a() {
        for (ab, r, output, k_len) in [(F16, F16, None, 4096), (Bf16, F32, Some(Bf16), 1000)] {
            let mut k = key(ab, r, (Layout::RowMajor, Layout::ColMajor));
            k.epilogue.beta = true;
            k.epilogue.output = output;
            k.fixed = Some(FixedSizes {
                n: 40,
                k: k_len,
                lda: k_len,
                ldb: k_len,
                ldc: 40,
            });
            let answer = known_answer(&k, u64::MAX).unwrap();
            let limit = exact_limit(answer.c_type).unwrap();
            assert!(
                answer.expected.iter().all(|e| e.2.abs() <= limit),
                "{ab} -> {:?}",
                answer.c_type
            );
            assert!(answer.expected.iter().any(|e| e.2.abs() > 2), "products reach C");
            // Every K position meets a nonzero A value in some row.
            let p = answer.request.problem;
            let es = p.a_bytes;
            let nonzero = |i: usize, l: usize| answer.bytes[0][(i * p.lda + l) * es..][..es].iter().any(|&b| b != 0);
            assert!((0..p.k).all(|l| (0..p.m).any(|i| nonzero(i, l))));
        }
    }

    #[test]
    fn a_context_with_a_tiny_allocation_limit_gets_a_smaller_test() {
        let k = key(F16, F32, (Layout::RowMajor, Layout::RowMajor));
        let whole = known_answer(&k, u64::MAX).unwrap();
        let small = known_answer(&k, 4096).unwrap();
        assert!(small.bytes.iter().all(|b| b.len() <= 4096));
        assert!(small.request.problem.m < whole.request.problem.m);
        assert!(matches!(known_answer(&k, 8), Err(Error::TooLarge(_))));
    }

    #[test]
    fn a_type_without_an_exact_answer_is_an_error() {
        let k = key(F8E4M3, F32, (Layout::RowMajor, Layout::RowMajor));
        assert!(matches!(known_answer(&k, u64::MAX), Err(Error::Unsupported(_))));
    }
}
