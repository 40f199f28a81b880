//! Kernel key -> compute pipeline. One descriptor-set layout (A, B, C storage buffers) and one
//! pipeline layout serve every kernel; pipelines are created once per key and kept, and a
//! `VkPipelineCache` (optionally loaded from and saved to disk) makes re-creation cheap.

use crate::compile_helper::{CompileReport, HelperCommand, Helpers, Source};
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::{self, KernelKey, Probe, PushConstants, BINDINGS};
use crate::plan::{GemmPlan, Kernel};
use ash::vk;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The least time between two saves of the pipeline cache after new pipelines (a long-lived
/// context saves what it compiled without rewriting the file for every pipeline).
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// A compute pipeline for one kernel key.
pub(crate) struct Pipeline {
    pub raw: vk::Pipeline,
    device: Arc<Device>,
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if self.device.work_abandoned() {
            return; // a command buffer that timed out may still run it
        }
        // SAFETY: pipelines are dropped only with the cache, after every submission waited.
        unsafe { self.device.raw().destroy_pipeline(self.raw, None) };
    }
}

/// All pipelines of a context.
pub(crate) struct Pipelines {
    /// Every pipeline, GEMM kernels' and passes', by kernel. Locked only to look one up and to
    /// insert one: creations run at once on several threads.
    made: Mutex<FxHashMap<Kernel, Arc<Pipeline>>>,
    pub set_layout: vk::DescriptorSetLayout,
    pub layout: vk::PipelineLayout,
    cache: vk::PipelineCache,
    /// Creations share the cache (the driver synchronizes them); a merge into it
    /// (`vkMergePipelineCaches`) must have it alone.
    cache_use: RwLock<()>,
    cache_path: Option<PathBuf>,
    /// The helper processes that compile pipelines this context lacks
    /// ([`crate::PipelineCompiler::Helper`]), if any.
    compilers: Option<Helpers>,
    report: Mutex<CompileReport>,
    /// Bytes of cache data loaded from `cache_path` (0: none, or the file was ignored).
    loaded: usize,
    /// Pipelines created so far, and how many of them the file holds.
    created: AtomicUsize,
    saved: Mutex<(usize, Option<Instant>)>,
    /// The config whose GEMM kernels are built wrong on purpose
    /// ([`crate::ContextOptions::inject_fault`]).
    faulty: Option<GPUSubgroupMatrixConfig>,
    device: Arc<Device>,
}

impl Pipelines {
    pub fn new(
        device: Arc<Device>,
        cache_path: Option<PathBuf>,
        faulty: Option<GPUSubgroupMatrixConfig>,
        compiler: Option<HelperCommand>,
    ) -> Result<Self> {
        let raw = device.raw();
        let bindings: Vec<_> = (0..BINDINGS)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // Bindings are pushed with each dispatch: no descriptor pool, nothing to free after a
        // command buffer runs (recording into the caller's command buffers relies on it).
        let info = vk::DescriptorSetLayoutCreateInfo::default()
            .flags(vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR)
            .bindings(&bindings);
        // SAFETY: valid create info on a live device.
        let set_layout = unsafe { raw.create_descriptor_set_layout(&info, None) }
            .map_err(|r| Error::vk("vkCreateDescriptorSetLayout", r))?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(std::mem::size_of::<PushConstants>() as u32)];
        let layouts = [set_layout];
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&layouts)
            .push_constant_ranges(&ranges);
        // SAFETY: as above.
        let layout = match unsafe { raw.create_pipeline_layout(&info, None) } {
            Ok(l) => l,
            Err(r) => {
                // SAFETY: unused.
                unsafe { raw.destroy_descriptor_set_layout(set_layout, None) };
                return Err(Error::vk("vkCreatePipelineLayout", r));
            }
        };
        let initial = cache_path
            .as_deref()
            .and_then(|p| crate::pipeline_file::read(p, device.info()))
            .unwrap_or_default();
        let info = vk::PipelineCacheCreateInfo::default().initial_data(&initial);
        // SAFETY: the initial data is whole and its header fits this device
        // (pipeline_file::read).
        let cache = match unsafe { raw.create_pipeline_cache(&info, None) } {
            Ok(c) => c,
            Err(r) => {
                // SAFETY: unused.
                unsafe {
                    raw.destroy_pipeline_layout(layout, None);
                    raw.destroy_descriptor_set_layout(set_layout, None);
                }
                return Err(Error::vk("vkCreatePipelineCache", r));
            }
        };
        Ok(Self {
            made: Mutex::new(FxHashMap::default()),
            set_layout,
            layout,
            cache,
            cache_use: RwLock::new(()),
            cache_path,
            compilers: compiler.map(Helpers::new),
            report: Mutex::new(CompileReport::default()),
            loaded: initial.len(),
            created: AtomicUsize::new(0),
            saved: Mutex::new((0, None)),
            faulty,
            device,
        })
    }

    /// The cache file, if any.
    pub fn cache_path(&self) -> Option<&Path> {
        self.cache_path.as_deref()
    }

    /// Bytes of cache data loaded from the file when the context was made (0: none).
    pub fn loaded_bytes(&self) -> usize {
        self.loaded
    }

    /// The pipeline of a plan's kernel, created on first use.
    pub fn kernel(&self, kernel: &Kernel) -> Result<Arc<Pipeline>> {
        self.kernel_from(kernel, None)
    }

    /// [`Pipelines::kernel`], created from `source` (its SPIR-V, made already for a helper)
    /// where given. Two threads asking for the same new kernel at once both create it; the
    /// first inserted is kept.
    fn kernel_from(&self, kernel: &Kernel, source: Option<&Source>) -> Result<Arc<Pipeline>> {
        if let Some(p) = self.made.lock().unwrap_or_else(|e| e.into_inner()).get(kernel) {
            return Ok(p.clone());
        }
        let pipeline = Arc::new(match source {
            Some(source) => self.build_source(source)?,
            None => self.build_source(&self.source(kernel)?)?,
        });
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        Ok(made.entry(*kernel).or_insert(pipeline).clone())
    }

    /// Creates every pipeline `plan` needs, on a thread each, so a failure surfaces before
    /// anything is recorded;
    /// saves the cache file when that created pipelines it lacks (at most every
    /// [`SAVE_EVERY`]; the rest on drop).
    pub fn prepare(&self, plan: &GemmPlan) -> Result<()> {
        self.prepare_all(&[plan])
    }

    /// [`Pipelines::prepare`] for several plans at once: every pipeline any of them lacks, each
    /// on a thread.
    pub fn prepare_all(&self, plans: &[&GemmPlan]) -> Result<()> {
        let mut kernels: Vec<Kernel> = Vec::new();
        for k in plans.iter().flat_map(|p| p.kernels()) {
            if !self.has(&k) && !kernels.contains(&k) {
                kernels.push(k);
            }
        }
        let sources = match (self.compilers.as_ref().filter(|h| h.usable()), kernels.is_empty()) {
            (Some(helpers), false) => self.compile_in_helper(helpers, &kernels),
            _ => None,
        };
        // A plan's passes (a copy first, split-K's reduction) compile at the same time, from the
        // SPIR-V made for the helper where there was one.
        let with_sources: Vec<(Kernel, Option<&Source>)> = match &sources {
            Some(sources) => kernels.iter().copied().zip(sources.iter().map(Some)).collect(),
            None => kernels.iter().map(|&k| (k, None)).collect(),
        };
        each_on_a_thread(&with_sources, |(k, source)| self.kernel_from(k, *source).map(drop))?;
        self.save_if_new();
        Ok(())
    }

    /// Whether `kernel`'s pipeline exists already.
    fn has(&self, kernel: &Kernel) -> bool {
        self.made.lock().unwrap_or_else(|e| e.into_inner()).contains_key(kernel)
    }

    /// Saves the cache file if pipelines were created since the last save and one is due. The
    /// file only spares later processes compiling: a failure to write it (a read-only or full
    /// disk) never fails the GEMM that created the pipelines.
    fn save_if_new(&self) {
        let created = self.created.load(Ordering::Acquire);
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        let due = saved.1.is_none_or(|at| at.elapsed() >= SAVE_EVERY);
        if self.cache_path.is_none() || created == saved.0 || !due {
            return;
        }
        let _ = self.save();
        *saved = (created, Some(Instant::now()));
    }

    /// How many pipelines exist (GEMM kernels' and passes').
    pub fn len(&self) -> usize {
        self.made.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The SPIR-V `kernel`'s pipeline is created from, and the subgroup size it pins: a GEMM
    /// kernel's checked against the device (and built wrong on purpose for
    /// [`crate::ContextOptions::inject_fault`]'s config); the passes without subgroup
    /// operations take any size.
    fn source(&self, kernel: &Kernel) -> Result<Source> {
        let any_size = |words| {
            Ok(Source {
                words,
                subgroup_size: None,
            })
        };
        match *kernel {
            Kernel::Gemm(ref key) => {
                let faulty = KernelKey {
                    probe: Probe::NoProducts,
                    ..*key
                };
                let planted = self.faulty == Some(key.config) && !kernel::Load::without_matrix_units(key.loads);
                let (words, sg) = self.checked_words(if planted { &faulty } else { key })?;
                Ok(Source {
                    words,
                    subgroup_size: Some(sg),
                })
            }
            Kernel::Reduce {
                result_type, epilogue, ..
            } => any_size(kernel::generate_reduce(result_type, epilogue)?),
            Kernel::Narrow { to } => any_size(kernel::generate_narrow(to)?),
            Kernel::SplitPlanes { transposed } => any_size(kernel::generate_split_planes(transposed)?),
            Kernel::Transpose { rounds_to, bytes } => any_size(kernel::generate_transpose(rounds_to, bytes)?),
            Kernel::GroupTable => any_size(kernel::generate_group_table()?),
            Kernel::Dequant { quant, to, interleaved } => any_size(kernel::generate_dequant(quant, to, interleaved)?),
            Kernel::Act8 { elem } => any_size(kernel::generate_act8(elem)?),
            Kernel::Gemv(key) => any_size(kernel::generate_gemv(&key)?),
            Kernel::AbsMax => any_size(kernel::generate_absmax()?),
        }
    }

    /// Has the helper program compile `kernels` and merges the cache data it returns, so their
    /// creation here finds them compiled; returns the kernels' SPIR-V, for that creation. A
    /// failure is recorded, not returned: the kernels are then compiled here, as without a
    /// helper (and where their SPIR-V could not be made, that creation says why).
    fn compile_in_helper(&self, helpers: &Helpers, kernels: &[Kernel]) -> Option<Vec<Source>> {
        let (sources, merged) = match kernels.iter().map(|k| self.source(k)).collect::<Result<Vec<_>>>() {
            Ok(sources) => {
                let merged = helpers
                    .compile(self.device.info(), &sources)
                    .and_then(|data| self.merge(&data));
                (Some(sources), merged)
            }
            Err(e) => (None, Err(e)),
        };
        let mut report = self.report.lock().unwrap_or_else(|e| e.into_inner());
        match merged {
            Ok(()) => report.from_helper += kernels.len(),
            Err(e) => {
                report.failures += 1;
                report.last_failure = Some(e.to_string());
            }
        }
        sources
    }

    /// Merges pipeline cache `data` (checked to be this device's) into the context's cache.
    fn merge(&self, data: &[u8]) -> Result<()> {
        let raw = self.device.raw();
        let info = vk::PipelineCacheCreateInfo::default().initial_data(data);
        // SAFETY: the data is whole and its header fits this device (the helper's answer was
        // checked with pipeline_file::fits_device).
        let source =
            unsafe { raw.create_pipeline_cache(&info, None) }.map_err(|r| Error::vk("vkCreatePipelineCache", r))?;
        let merged = {
            let _alone = self.cache_use.write().unwrap_or_else(|e| e.into_inner());
            // SAFETY: both caches are live; no creation uses the destination meanwhile.
            unsafe { raw.merge_pipeline_caches(self.cache, &[source]) }
        };
        // SAFETY: merged (or not) and unused.
        unsafe { raw.destroy_pipeline_cache(source, None) };
        merged.map_err(|r| Error::vk("vkMergePipelineCaches", r))
    }

    /// What the compiling helper did so far.
    pub fn compile_report(&self) -> CompileReport {
        CompileReport {
            helpers_started: self.compilers.as_ref().map_or(0, Helpers::started),
            ..self.report.lock().unwrap_or_else(|e| e.into_inner()).clone()
        }
    }

    /// The driver's statistics (name, value) for `key`'s kernel, e.g. registers per invocation;
    /// empty where the device cannot report them. They come from a pipeline compiled for the
    /// purpose, so the pipelines that run are compiled exactly as in a program that never asks
    /// (`CAPTURE_STATISTICS` is a diagnostic flag a driver may compile differently for).
    pub fn statistics(&self, key: &KernelKey) -> Result<Vec<(String, String)>> {
        // Checked first, so a key no pipeline could run is an error here as in `kernel`.
        let (words, sg) = self.checked_words(key)?;
        if !self.device.info().features.pipeline_executable_info {
            return Ok(Vec::new());
        }
        let pipeline = self.build_with(&words, Some(sg), vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)?;
        Ok(statistics(&self.device, pipeline.raw))
    }

    /// `key`'s SPIR-V and subgroup size, once the scheme is checked against the device.
    fn checked_words(&self, key: &KernelKey) -> Result<(Vec<u32>, u32)> {
        let limits = &self.device.info().limits;
        key.scheme.check_device(&key.tile_config(), self.device.info())?;
        let threads = key.scheme.geometry(&key.tile_config()).threads;
        let sg = key.scheme.subgroup_size();
        if threads % sg != 0 {
            return Err(Error::InvalidTileScheme(format!(
                "workgroup size {threads} is not a multiple of the subgroup size {sg}"
            )));
        }
        // The kernel assumes exactly `sg` lanes per subgroup: pin it when the device lets us,
        // or accept a varying size only where it cannot vary.
        let pin = limits.required_subgroup_size_compute;
        let fixed = limits.min_subgroup_size == sg && limits.max_subgroup_size == sg;
        if !(pin || fixed) {
            return Err(Error::Unsupported(format!(
                "the device cannot pin compute subgroup sizes and its size varies ({}..={}); the kernels need exactly {sg}",
                limits.min_subgroup_size, limits.max_subgroup_size
            )));
        }
        Ok((kernel::generate(key)?, sg))
    }

    /// Creates a pipeline from SPIR-V words, pinning subgroup size `sg` (checked by the caller).
    pub fn build(&self, words: &[u32], sg: u32) -> Result<Pipeline> {
        self.build_with(words, Some(sg), vk::PipelineCreateFlags::empty())
    }

    /// Creates the pipeline of `source`. A kernel without subgroup operations takes whatever
    /// subgroup size the driver picks: pinning one could ask for more subgroups per workgroup
    /// than the device allows (256 invocations at lavapipe's 4 lanes is 64 subgroups, where it
    /// allows 32).
    pub(crate) fn build_source(&self, source: &Source) -> Result<Pipeline> {
        self.build_with(&source.words, source.subgroup_size, vk::PipelineCreateFlags::empty())
    }

    /// `sg`: the subgroup size the kernel needs (pinned where the device allows, with full
    /// subgroups), or `None` for any.
    fn build_with(&self, words: &[u32], sg: Option<u32>, create_flags: vk::PipelineCreateFlags) -> Result<Pipeline> {
        let limits = &self.device.info().limits;
        let pin = limits.required_subgroup_size_compute && sg.is_some();
        let raw = self.device.raw();
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: `words` is a complete SPIR-V module from our generator.
        let module =
            unsafe { raw.create_shader_module(&info, None) }.map_err(|r| Error::vk("vkCreateShaderModule", r))?;
        let mut required =
            vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default().required_subgroup_size(sg.unwrap_or(0));
        let mut flags = vk::PipelineShaderStageCreateFlags::empty();
        if sg.is_some() {
            flags |= vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS;
        }
        if sg.is_some() && !pin {
            flags |= vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE;
        }
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .flags(flags)
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        if pin {
            stage = stage.push_next(&mut required);
        }
        // Whether the driver found the pipeline in the cache (core in Vulkan 1.3, which every
        // usable device has): what tells a helper's or the file's pipelines from compiled ones.
        let mut whole = vk::PipelineCreationFeedback::default();
        let mut feedback = vk::PipelineCreationFeedbackCreateInfo::default().pipeline_creation_feedback(&mut whole);
        let info = [vk::ComputePipelineCreateInfo::default()
            .flags(create_flags)
            .stage(stage)
            .layout(self.layout)
            .push_next(&mut feedback)];
        let started = std::time::Instant::now();
        let result = {
            let _shared = self.cache_use.read().unwrap_or_else(|e| e.into_inner());
            // SAFETY: module, layout and cache are live; the chains outlive the call.
            unsafe { raw.create_compute_pipelines(self.cache, &info, None) }
        };
        let took = started.elapsed();
        // SAFETY: the module is no longer needed once the pipeline exists (or failed).
        unsafe { raw.destroy_shader_module(module, None) };
        let pipeline = result.map_err(|(_, r)| Error::vk("vkCreateComputePipelines", r))?[0];
        self.created.fetch_add(1, Ordering::AcqRel);
        let hit = vk::PipelineCreationFeedbackFlags::VALID
            | vk::PipelineCreationFeedbackFlags::APPLICATION_PIPELINE_CACHE_HIT;
        let mut report = self.report.lock().unwrap_or_else(|e| e.into_inner());
        if whole.flags.contains(hit) {
            report.from_cache += 1;
        } else {
            report.compiled_here += 1;
            report.compile_time += took;
            report.longest_compile = report.longest_compile.max(took);
        }
        drop(report);
        Ok(Pipeline {
            raw: pipeline,
            device: self.device.clone(),
        })
    }

    /// Writes the pipeline cache to its file, if one was configured.
    pub fn save(&self) -> Result<()> {
        let Some(path) = &self.cache_path else { return Ok(()) };
        crate::pipeline_file::write(path, &self.cache_data()?)
    }

    /// The pipeline cache's data, as the driver serializes it.
    pub fn cache_data(&self) -> Result<Vec<u8>> {
        // SAFETY: plain query of a live cache.
        unsafe { self.device.raw().get_pipeline_cache_data(self.cache) }
            .map_err(|r| Error::vk("vkGetPipelineCacheData", r))
    }
}

/// Runs `f` on every item, each on a thread of its own (a single one on this thread): drivers
/// compile one pipeline per thread. Returns the first error; a thread's panic goes on here.
pub(crate) fn each_on_a_thread<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<()> + Sync) -> Result<()> {
    if let [one] = items {
        return f(one);
    }
    let f = &f;
    std::thread::scope(|s| {
        let each: Vec<_> = items.iter().map(|x| s.spawn(move || f(x))).collect();
        each.into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

impl Drop for Pipelines {
    fn drop(&mut self) {
        // Nothing new: the file may hold more (another process's), so it stays as it is.
        if self.created.load(Ordering::Acquire) > self.saved.get_mut().unwrap_or_else(|e| e.into_inner()).0 {
            let _ = self.save();
        }
        self.made.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
        if self.device.work_abandoned() {
            return; // as for the pipelines
        }
        // SAFETY: every pipeline was dropped above; nothing else uses these objects.
        unsafe {
            let raw = self.device.raw();
            raw.destroy_pipeline_cache(self.cache, None);
            raw.destroy_pipeline_layout(self.layout, None);
            raw.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

/// Reads the statistics of a pipeline's executables (empty if the driver reports none).
fn statistics(device: &Device, pipeline: vk::Pipeline) -> Vec<(String, String)> {
    let loader = ash::khr::pipeline_executable_properties::Device::new(device.instance().raw(), device.raw());
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    // SAFETY: the pipeline was created with CAPTURE_STATISTICS on a device with the feature on.
    let Ok(executables) = (unsafe { loader.get_pipeline_executable_properties(&info) }) else {
        return Vec::new();
    };
    let text = |c: &[std::ffi::c_char]| {
        // SAFETY: Vulkan fixed-size strings are NUL-terminated within their array.
        unsafe { std::ffi::CStr::from_ptr(c.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let mut out = Vec::new();
    for index in 0..executables.len() as u32 {
        let exe = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(index);
        // SAFETY: as above; ash initialises each element's sType.
        let Ok(stats) = (unsafe { loader.get_pipeline_executable_statistics(&exe) }) else {
            continue;
        };
        for st in stats {
            // SAFETY: `format` says which union member the driver wrote.
            let value = unsafe {
                match st.format {
                    vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (st.value.b32 == vk::TRUE).to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::INT64 => st.value.i64.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::UINT64 => st.value.u64.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => st.value.f64.to_string(),
                    _ => "?".into(),
                }
            };
            out.push((text(&st.name), value));
        }
    }
    out
}
