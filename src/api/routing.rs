//! From a GEMM's operands to its plan on this device: the kernel path its element types and mode
//! take, the copies first (chosen in `copies.rs`), the tile scheme (chosen in `schemes.rs`),
//! then the plan.

use super::context::{Context, MAX_SPLIT_K};
use super::matmul::{Groups, Matmul};
use super::matrix::Element;
use super::operand::Placed;
use super::options::GemmOptions;
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::{simt_config, Epilogue, Load, SIMT_CONFIG};
use crate::plan::{
    check_shapes, device_problem, relayout_without_workgroup, route, Batch, GemmPlan, PlanRequest, Problem, Route,
    SplitK,
};
use crate::tiling::{mid_grid_choice, simt_scheme, simt_schemes, KernelScope, Layout, TileScheme};

/// M·N·K from which GEMMs take kernels with their sizes built in by default
/// ([`GemmOptions::specialize`]): 2^31, 128 tokens through a 4096x4096 weight. There the H200
/// ran 128x4096x4096 10% faster and the other 128-token layer GEMMs 0-1% faster, none slower
/// (docs/perf/h200-49-6.txt); from 2048³ on the H100 had measured `nn` 7% faster
/// (h100-27-10.txt). M stays free, so a weight's shape needs one pipeline per scheme and split
/// whatever its token count; smaller GEMMs (arbitrary small sizes) keep one pipeline for all.
pub(crate) const SPECIALIZE_FROM: f64 = 128.0 * 4096.0 * 4096.0;

impl Context {
    /// How a GEMM of these element types (A, B, C) runs under `options` on this device: the
    /// route (see [`route`](crate::plan::route)) with its fallbacks applied (the accurate split
    /// becomes the exact kernel without an f16 -> f32 config), and the config it uses
    /// ([`SIMT_CONFIG`] for the exact kernel).
    pub fn route_for(
        &self,
        types: [ComponentType; 3],
        options: &GemmOptions,
    ) -> Result<(Route, GPUSubgroupMatrixConfig)> {
        self.route_batch(types, 1, options)
    }

    /// [`Context::route_for`] for a batch of `count` GEMMs: the accurate split scales each
    /// operand by one largest magnitude, so a batch (whose entries would share it) takes the
    /// exact kernel instead.
    pub(crate) fn route_batch(
        &self,
        [ta, tb, tc]: [ComponentType; 3],
        count: usize,
        options: &GemmOptions,
    ) -> Result<(Route, GPUSubgroupMatrixConfig)> {
        let float = |t: ComponentType| matches!(t, ComponentType::F32 | ComponentType::F16 | ComponentType::Bf16);
        if float(ta) && float(tb) && !float(tc) {
            return Err(Error::Unsupported(format!(
                "{ta} x {tb} -> {tc}: float operands give float results (f32, or f16/bf16 where \
                 the device has that config); integer results come from i8 or u8 operands"
            )));
        }
        let mut route = route(ta, tb, options.compute)?;
        if route.loads == [Load::Split; 2] {
            match self.choose_config(ComponentType::F16, tc, options.shape) {
                Ok(config) if tc == ComponentType::F32 && count == 1 => return Ok((route, config)),
                // No f16 -> f32 config for the split, or a batch: the exact kernel keeps f32
                // accuracy.
                _ => route.loads = [Load::Simt; 2],
            }
        }
        if route.loads != [Load::Simt; 2] {
            return match self.choose_config(route.component, tc, options.shape) {
                // A fragment shape asks for the matrix units: one the device lacks is the
                // caller's mistake, not a reason to leave them.
                Err(no_config @ Error::NoConfig { .. }) if options.shape.is_none() => {
                    self.without_matrix_units(route, tc, no_config)
                }
                other => Ok((route, other?)),
            };
        }
        if tc != ComponentType::F32 {
            return Err(Error::Unsupported(format!(
                "f32 x f32 -> {tc} in {} mode: this mode runs on the exact f32 kernel here, which \
                 writes f32 results; a {tc} C takes ComputeMode::FastF16 or FastBf16 (on a device \
                 with an f16 or bf16 -> {tc} config)",
                options.compute.name()
            )));
        }
        Ok((route, SIMT_CONFIG))
    }

    /// The route on the kernels without matrix units where the device has no config for
    /// `route` (or [`ContextOptions::matrix_units`](crate::ContextOptions::matrix_units) is
    /// off): each operand widened from its stored type (an f32 one beside a 16-bit float one
    /// stays f32: nothing is rounded), products in f32 or in 32-bit integers (8-bit operands
    /// packed four to a dot product where the device has them), a 16-bit float C
    /// cast from the f32 sums by the epilogue. `no_config` is the error where that kernel does
    /// not give C's type either (an integer product into a float C without dequantisation).
    fn without_matrix_units(
        &self,
        route: Route,
        tc: ComponentType,
        no_config: Error,
    ) -> Result<(Route, GPUSubgroupMatrixConfig)> {
        let loads = route
            .loads
            .map(|l| if l == Load::Round { Load::Simt } else { Load::Widen });
        // Two f32 operands (a fast mode) multiply in f32 like the exact kernel.
        let component = if loads == [Load::Simt; 2] {
            ComponentType::F32
        } else {
            route.component
        };
        let Some(config) = simt_config(component) else {
            return Err(no_config);
        };
        let casts = config.result_type == ComponentType::F32 && matches!(tc, ComponentType::F16 | ComponentType::Bf16);
        if config.result_type != tc && !casts {
            return Err(no_config);
        }
        let features = &self.device.info().features;
        // 8-bit operands multiply four at a time where the device has packed dot products.
        let int8 = matches!(component, ComponentType::I8 | ComponentType::U8);
        let loads = if int8 && features.shader_integer_dot_product {
            [Load::Packed; 2]
        } else {
            loads
        };
        Ok((Route { component, loads }, config))
    }

    /// Whether the workgroup-scope kernel can run `fused` for `config` here: the terms it takes
    /// ([`Epilogue::check_workgroup_scope`]), per-element operations enabled on the device, and
    /// for a cast, a workgroup-scope matrix of the output type.
    pub(crate) fn fused_fits_workgroup(&self, config: &GPUSubgroupMatrixConfig, fused: &Epilogue) -> bool {
        let Some(cm2) = self.device.info().cooperative_matrix2.as_ref() else {
            return false;
        };
        let output = fused.output_type(config.result_type);
        let cast = GPUSubgroupMatrixConfig {
            result_type: output,
            ..*config
        };
        fused.check_workgroup_scope(config.result_type).is_ok()
            && cm2.per_element_operations
            && (output == config.result_type || !cm2.workgroup_entries(&cast).is_empty())
    }

    /// Validates shapes, types and scalars; chooses config and scheme; plans. Compiles and runs
    /// only the driver self-test's known-answer GEMM of a kernel family new to the device
    /// ([`Context::plan_fused`]); the recorders create the plan's other pipelines.
    pub(crate) fn plan_placed(
        &self,
        a: Placed<'_>,
        b: Placed<'_>,
        c: Placed<'_>,
        types: [ComponentType; 3],
        batch: Batch,
        options: &GemmOptions,
    ) -> Result<GemmPlan> {
        self.plan_fused(a, b, c, types, batch, options, None)
    }

    /// [`Context::plan_placed`] for a fused GEMM's terms (`Some`, even with no terms: the fused API
    /// promises f32 accumulation for 16-bit float C), its `output` derived here from C's type
    /// and the accumulator (see [`accumulator`]); `None` plans a plain GEMM. The steps: C
    /// column-major is planned as C^T = B^T A^T; decode's shapes take the matrix-vector kernel;
    /// else the kernel path ([`Context::decide`]), the copies first, the scheme
    /// ([`Context::scheme_of`]), the mid-size grids' rule, and the plan, whose copies are dropped
    /// where they would not fit.
    ///
    /// The plan's kernels pass the driver self-test first ([`Context::self_tested`]): where one
    /// fails, its configuration is dropped and the GEMM planned again without it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn plan_fused(
        &self,
        a: Placed<'_>,
        b: Placed<'_>,
        c: Placed<'_>,
        types: [ComponentType; 3],
        batch: Batch,
        options: &GemmOptions,
        fused: Option<Epilogue>,
    ) -> Result<GemmPlan> {
        loop {
            let plan = self.plan_pure(a, b, c, types, batch, options, fused)?;
            if self.self_tested(&plan)? {
                return Ok(plan);
            }
        }
    }

    /// Every kernel stores a 16-bit C as an array of 16-bit floats, converted from f32 sums:
    /// that takes `storageBuffer16BitAccess` and `shaderFloat16`, which devices with f16
    /// configs always have, and others may lack (whatever the operands' path).
    fn check_result_type(&self, tc: ComponentType) -> Result<()> {
        let features = &self.device.info().features;
        if tc.size_bytes() != 2 || (features.shader_float16 && features.storage_buffer_16bit_access) {
            return Ok(());
        }
        Err(Error::Unsupported(format!(
            "a {tc} C is stored as 16-bit values, which needs shaderFloat16 and storageBuffer16BitAccess; {} lacks \
             them (an f32 C works)",
            self.device.info().name
        )))
    }

    /// [`Context::plan_fused`] without the self-test: plain data, nothing run.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn plan_pure(
        &self,
        a: Placed<'_>,
        b: Placed<'_>,
        c: Placed<'_>,
        [ta, tb, tc]: [ComponentType; 3],
        batch: Batch,
        options: &GemmOptions,
        fused: Option<Epilogue>,
    ) -> Result<GemmPlan> {
        let (m, n, k) = check_shapes((a.rows, a.cols), (b.rows, b.cols), (c.rows, c.cols))?;
        self.check_result_type(tc)?;
        if let Some(([a, b, c], t, batch, fused)) = row_major_c([a, b, c], [ta, tb, tc], batch, fused) {
            let plan = self.plan_pure(a, b, c, t, batch, options, fused)?;
            return Ok(GemmPlan {
                transposed: true,
                ..plan
            });
        }
        if let Some(plan) = self.plan_gemv((a, b, c), [ta, tb, tc], batch, options, fused, &self.limits)? {
            return Ok(plan);
        }
        let shape = (m, n, k);
        let d = self.decide([ta, tb, tc], batch.count, options, fused, shape)?;
        let layouts = (a.layout, b.layout);
        let (relayout, scheme, mid_splits) = self.copies_and_tiles(&d, (shape, layouts, batch.count, tc), options)?;
        let request = PlanRequest {
            problem: placed_problem((a, b, c), [ta, tb, tc], batch),
            config: d.config,
            scheme,
            loads: d.route.loads,
            alpha: options.alpha,
            beta: options.beta,
            split_k: self.split_k_request(mid_splits, options.split_k)?,
            epilogue: d.epilogue,
            convert_first: d.convert_first,
            relayout,
            specialize: match options.specialize {
                Some(on) => on,
                None => m as f64 * n as f64 * k as f64 >= SPECIALIZE_FROM,
            },
        };
        match self.plan_request(
            &request,
            Load::without_matrix_units(d.route.loads) && options.scheme.is_none(),
        ) {
            // Copies chosen by default but over a binding's range or the scratch limit: the
            // operands are read where they are instead, which splits into passes that fit.
            Err(Error::TooLarge(_))
                if (d.convert_first && options.convert_first.is_none())
                    || (relayout.contains(&true) && options.relayout.is_none()) =>
            {
                let as_loaded = GemmOptions {
                    convert_first: options.convert_first.or(Some(false)),
                    relayout: options.relayout.or(Some(false)),
                    ..options.clone()
                };
                self.plan_pure(a, b, c, [ta, tb, tc], batch, &as_loaded, fused)
            }
            other => other,
        }
    }

    /// Which operands `d`'s plan copies into the kernel's fast order, its tile scheme, and the
    /// split-K of a mid-size grid's table where that chose the scheme.
    fn copies_and_tiles(
        &self,
        d: &Decided,
        at: ((usize, usize, usize), (Layout, Layout), usize, ComponentType),
        options: &GemmOptions,
    ) -> Result<([bool; 2], TileScheme, Option<u32>)> {
        let (shape, layouts, count, _) = at;
        // The accurate split's planes are written in the fast order by their own pass.
        let mut relayout = if d.split() {
            [false; 2]
        } else {
            let copyable = d
                .kernel_loads
                .map(|l| l == Load::Native && matches!(d.config.component_type.size_bytes(), 1 | 2));
            let free = d.route.loads.map(|l| l == Load::Round && d.convert_first);
            self.relayout_for(options, (&d.config, shape, layouts), (copyable, free), count)?
        };
        let mut scheme = self.scheme_of(d, relayout, at, options)?;
        // Most copies pay only for the workgroup-scope kernel's sake.
        if options.relayout.is_none() && relayout.contains(&true) && scheme.scope() != KernelScope::Workgroup {
            relayout = relayout_without_workgroup(d.config.component_type, relayout);
            scheme = self.scheme_of(d, relayout, at, options)?;
        }
        let free_choice = options.scheme.is_none() && options.split_k.is_none() && count == 1;
        let plain =
            !d.epilogue.is_fused() && !d.convert_first && relayout == [false; 2] && d.route.loads == [Load::Native; 2];
        match (free_choice && plain)
            .then(|| self.mid_grid(&d.config, shape, layouts))
            .flatten()
        {
            Some((mid, splits)) => Ok((relayout, mid, Some(splits))),
            None => Ok((relayout, scheme, None)),
        }
    }

    /// [`GemmPlan::new`], and for a kernel without matrix units whose scheme vk-sgmat chose
    /// (`simt_tiles`), where the problem's windows do not fit the device at that tile, the
    /// plan of the largest smaller tile that fits.
    fn plan_request(&self, request: &PlanRequest, simt_tiles: bool) -> Result<GemmPlan> {
        let first = GemmPlan::new(request, &self.limits);
        if !simt_tiles || !matches!(first, Err(Error::TooLarge(_))) {
            return first;
        }
        let smaller = simt_schemes(&self.device.info().limits, self.subgroup_size(), self.is_cpu());
        smaller
            .into_iter()
            .skip_while(|s| *s != request.scheme)
            .skip(1)
            .map(|scheme| GemmPlan::new(&PlanRequest { scheme, ..*request }, &self.limits))
            .find(|plan| !matches!(plan, Err(Error::TooLarge(_))))
            .unwrap_or(first)
    }

    /// The kernel path of a row-major-C GEMM of these types (A, B, C): its epilogue with the
    /// output cast, its route and config, and whether f32 operands are converted first.
    fn decide(
        &self,
        [ta, tb, tc]: [ComponentType; 3],
        batch: usize,
        options: &GemmOptions,
        fused: Option<Epilogue>,
        shape: (usize, usize, usize),
    ) -> Result<Decided> {
        let (tr, epilogue) = match fused {
            Some(fused) => {
                let tr = accumulator(route(ta, tb, options.compute)?.component, tc);
                let output = (tr != tc).then_some(tc);
                (tr, Epilogue { output, ..fused })
            }
            None if self.casts_from_f32(route(ta, tb, options.compute)?.component, tc, options) => (
                ComponentType::F32,
                Epilogue {
                    output: Some(tc),
                    ..Epilogue::default()
                },
            ),
            None => (tc, Epilogue::default()),
        };
        let (route, config) = self.route_batch([ta, tb, tr], batch, options)?;
        // Without matrix units a 16-bit float C is the f32 sums cast by the epilogue.
        let epilogue = if config.result_type != tr && Load::without_matrix_units(route.loads) {
            Epilogue {
                output: Some(tr),
                ..epilogue
            }
        } else {
            epilogue
        };
        let fused_on_workgroup = self.fused_fits_workgroup(&config, &epilogue);
        if epilogue.is_fused()
            && !fused_on_workgroup
            && options.scheme.is_some_and(|s| s.scope() != KernelScope::Subgroup)
        {
            epilogue.check_workgroup_scope(config.result_type)?;
            return Err(Error::InvalidTileScheme(
                "this fused epilogue runs on subgroup-scope schemes here (the device lacks per-element operations on workgroup-scope matrices of its types); leave the scheme to vk-sgmat or pick one of subgroup scope".into(),
            ));
        }
        let converts = route.loads.contains(&Load::Round) || route.loads == [Load::Split; 2];
        let convert_first = converts
            && match (options.convert_first, options.scheme) {
                (Some(first), _) => first,
                (None, _) if batch > 1 => false,
                (None, Some(s)) => s.scope() != KernelScope::Subgroup,
                // The planes where the rounded operands would be converted first too: on the
                // H200, written in the kernel's fast order, 89.2 TFLOP/s against 61.8 for the
                // split as loaded (4096^3), at an error still under SGEMM's.
                (None, None) => self.converts_first(&config, shape),
            };
        // What the GEMM kernel loads: converted operands arrive as 16-bit ones.
        let kernel_loads = if convert_first {
            route.loads.map(Load::converted_first)
        } else {
            route.loads
        };
        Ok(Decided {
            route,
            config,
            epilogue,
            fused_on_workgroup,
            convert_first,
            kernel_loads,
        })
    }

    /// Whether a plain GEMM of `component` operands into a 16-bit float C runs on the matrix
    /// units' `component -> f32` config with the epilogue's cast, the device lacking a config
    /// into C's type (the H200 has bf16 -> f32 but no bf16 -> bf16): f32 sums rounded once,
    /// as the fused API promises, rather than the kernels without matrix units.
    fn casts_from_f32(&self, component: ComponentType, tc: ComponentType, options: &GemmOptions) -> bool {
        matches!(tc, ComponentType::F16 | ComponentType::Bf16)
            && self.choose_config(component, tc, options.shape).is_err()
            && self.choose_config(component, ComponentType::F32, options.shape).is_ok()
    }

    /// The tile scheme of a decided GEMM whose operands are copied transposed where `relayout`
    /// says: the caller's (checked against the device and the accurate split's shared memory),
    /// else the path's own choice.
    fn scheme_of(
        &self,
        d: &Decided,
        relayout: [bool; 2],
        ((m, n, k), (la, lb), batch, tc): ((usize, usize, usize), (Layout, Layout), usize, ComponentType),
        options: &GemmOptions,
    ) -> Result<TileScheme> {
        let config = &d.config;
        let flip = |l: Layout, f: bool| if f { l.transposed() } else { l };
        let layouts = (flip(la, relayout[0]), flip(lb, relayout[1]));
        Ok(match options.scheme {
            Some(s) => {
                s.check_device(config, self.device.info())?;
                if d.split() && !d.convert_first && !self.split_fits(&s, config) {
                    return Err(Error::InvalidTileScheme(format!(
                        "{}: the accurate split stores each operand tile twice, {} bytes of shared memory where the device has {}",
                        s.name(),
                        2 * s.geometry(config).shared_bytes,
                        self.device.info().limits.max_shared_memory
                    )));
                }
                s
            }
            None if Load::without_matrix_units(d.route.loads) => {
                simt_scheme(&self.device.info().limits, self.subgroup_size(), self.is_cpu())
                    .ok_or_else(|| Error::InvalidTileScheme("no f32 kernel tile fits this device".into()))?
            }
            None if d.split() && d.convert_first => self.choose_planes_scheme(config, (m, n))?,
            None if d.split() => self.choose_split_scheme(config, m, n)?,
            None if d.epilogue.is_fused() && !d.fused_on_workgroup => {
                self.choose_subgroup_scheme(config, (m, n), batch)?
            }
            None => {
                let narrow_c = tc.size_bytes() == 2;
                self.scheme_for(config, (m, n, k), layouts, d.kernel_loads, (batch, narrow_c))?
            }
        })
    }

    /// The split-K of a plan: the mid-size grids' rule's (`mid`), the caller's (1 to
    /// [`MAX_SPLIT_K`]), or chosen per problem.
    fn split_k_request(&self, mid: Option<u32>, asked: Option<u32>) -> Result<SplitK> {
        Ok(match (mid, asked) {
            (Some(splits), _) => SplitK::Slices(splits),
            (None, Some(s @ 1..=MAX_SPLIT_K)) => SplitK::Slices(s),
            (None, Some(s)) => {
                return Err(Error::InvalidOption(format!(
                    "split_k = {s}: use 1 (off) to {MAX_SPLIT_K}, or None to choose per problem"
                )))
            }
            (None, None) => SplitK::Auto {
                cpu_device: self.is_cpu(),
            },
        })
    }

    /// [`mid_grid_choice`]'s scheme and split for a GEMM of 16-bit float operands into f32 in
    /// `nt` on a GPU with that workgroup-scope scheme (the config's
    /// [`SchemeLists::mid_grid`](super::schemes::SchemeLists)), if it makes one.
    fn mid_grid(
        &self,
        config: &GPUSubgroupMatrixConfig,
        shape: (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> Option<(TileScheme, u32)> {
        if layouts != (Layout::RowMajor, Layout::ColMajor) {
            return None;
        }
        let choice = mid_grid_choice(shape)?;
        let lists = self.scheme_lists(config);
        let scheme = lists.mid_grid.iter().find(|s| s.name() == choice.scheme)?;
        Some((*scheme, choice.splits))
    }

    /// The plan `op` would run on an `m x n x k` GEMM of these types, A and B stored `layouts`
    /// and C row-major, each in vk-sgmat's own layout (leading dimensions padded to 16 bytes):
    /// its config, scheme, passes and dispatches, as plain data. Pure and cheap: it allocates
    /// nothing, compiles no pipeline and runs nothing (an autotuned scheme is read from the
    /// tuning file, never timed here: see [`Context::tune`](crate::Context::tune)). For one GEMM
    /// (not a grouped `op`); the epilogue's vectors are checked against `m` and `n`.
    pub fn plan<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> Result<GemmPlan> {
        if !matches!(op.groups, Groups::None) {
            return Err(Error::Unsupported(
                "Context::plan plans one GEMM; a grouped one is planned on its operands by Context::prepare".into(),
            ));
        }
        // vk-sgmat's own layout of the three matrices (device_problem's leading dimensions).
        let p = device_problem((m, n, k), layouts, (size_of::<TA>(), size_of::<TB>(), size_of::<TC>()));
        let host = |rows, cols, layout, ld| Placed {
            rows,
            cols,
            layout,
            ld,
            offset: 0,
            raw: ash::vk::Buffer::null(),
            owned: None,
        };
        let (a, b) = (host(m, k, layouts.0, p.lda), host(k, n, layouts.1, p.ldb));
        let c = host(m, n, Layout::RowMajor, p.ldc);
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let terms = op
            .fused
            .as_ref()
            .map(|f| self.fused_terms(f, (m, n), types))
            .transpose()?;
        self.plan_pure(a, b, c, types, Batch::ONE, &op.options, terms)
    }
}

/// A GEMM as the planner takes it: operands, their types, the batch and the epilogue.
pub(super) type Gemm<'o> = ([Placed<'o>; 3], [ComponentType; 3], Batch, Option<Epilogue>);

/// A GEMM into a column-major C as the row-major `C^T = B^T A^T` over the same memory
/// ([`transposed_gemm`]); `None` where C is row-major already.
pub(super) fn row_major_c<'o>(
    [a, b, c]: [Placed<'o>; 3],
    types: [ComponentType; 3],
    batch: Batch,
    fused: Option<Epilogue>,
) -> Option<Gemm<'o>> {
    (c.layout == Layout::ColMajor).then(|| transposed_gemm(([a, b, c], types, batch, fused)))
}

/// `C = A B` as `C^T = B^T A^T` over the same memory: the operands transposed and swapped,
/// their types, batch strides and the epilogue to match (whose plan is then
/// [`GemmPlan::transposed`]).
pub(super) fn transposed_gemm<'o>(([a, b, c], [ta, tb, tc], batch, fused): Gemm<'o>) -> Gemm<'o> {
    let [sa, sb, sc] = batch.strides;
    let batch = Batch {
        strides: [sb, sa, sc],
        ..batch
    };
    (
        [b.t(), a.t(), c.t()],
        [tb, ta, tc],
        batch,
        fused.map(Epilogue::transposed),
    )
}

/// The problem of placed operands (C row-major, shapes checked): their shapes, layouts,
/// leading dimensions, element sizes and offsets.
pub(super) fn placed_problem(
    (a, b, c): (Placed<'_>, Placed<'_>, Placed<'_>),
    [ta, tb, tc]: [ComponentType; 3],
    batch: Batch,
) -> Problem {
    Problem {
        m: c.rows,
        n: c.cols,
        k: a.cols,
        a_layout: a.layout,
        b_layout: b.layout,
        lda: a.ld,
        ldb: b.ld,
        ldc: c.ld,
        a_bytes: ta.size_bytes() as usize,
        b_bytes: tb.size_bytes() as usize,
        c_bytes: tc.size_bytes() as usize,
        offsets: [a.offset, b.offset, c.offset],
        batch,
    }
}

/// The accumulator a fused GEMM with component type `component` and C of type `c` uses: i32 or
/// u32 for 8-bit integers (then dequantised), f32 for 16-bit float results (then cast: f32
/// accumulation, as the output cast promises), else C's type.
pub(crate) fn accumulator(component: ComponentType, c: ComponentType) -> ComponentType {
    use ComponentType::*;
    match (component, c) {
        (I8, _) => I32,
        (U8, _) => U32,
        (_, F16 | Bf16) => F32,
        _ => c,
    }
}

/// A GEMM's kernel path, decided before its scheme ([`Context::decide`]).
struct Decided {
    route: Route,
    config: GPUSubgroupMatrixConfig,
    /// The epilogue with its output cast (none for a plain GEMM).
    epilogue: Epilogue,
    /// Whether the epilogue's per-element operations run on workgroup-scope matrices here.
    fused_on_workgroup: bool,
    /// Whether f32 operands are converted first, each in a pass of its own.
    convert_first: bool,
    /// What the GEMM kernel loads (converted operands arrive as 16-bit ones).
    kernel_loads: [Load; 2],
}

impl Decided {
    /// The accurate f32 split (three products of f16 halves).
    fn split(&self) -> bool {
        self.route.loads == [Load::Split; 2]
    }
}
