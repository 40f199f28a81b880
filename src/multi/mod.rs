//! [`MultiContext`]: one GEMM over several devices. C is cut into blocks ([`Split`]), one per
//! device, each block's size proportional to its device's measured speed; every device gets the
//! rows of A and the columns of B its block needs and computes on its own stream, so one
//! device's transfers overlap the others' multiplies. Operands may live on the host
//! ([`MultiContext::run`]) or stay distributed across the devices between GEMMs
//! ([`DistMatrix`](crate::DistMatrix), [`MultiContext::run`]).
//!
//! The portable path stages everything through the host: devices do not share memory here.

mod host;
mod resident;
mod trace;

pub use crate::plan::{Split, SplitKind, SplitPart};
pub use resident::Role;
pub use trace::{HostTimes, PipelineStep, PipelineTrace, TraceStep};

use crate::api::{Context, ContextOptions, Element, GemmOptions};
use crate::config::ComponentType;
use crate::device::{rank_devices, DeviceInfo, DeviceSelector, Instance, InstanceOptions};
use crate::error::{Error, Result};
use half::f16;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which devices a [`MultiContext`] uses.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum DeviceSet {
    /// Every usable device of the best kind: all discrete GPUs, say, but not a CPU driver
    /// beside them (it would get a sliver of the work and slow the gather).
    #[default]
    All,
    /// These devices, in this order.
    These(Vec<DeviceSelector>),
}

impl DeviceSet {
    /// Parses `all` or a comma-separated list of indices or name substrings (`0,1`).
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        if s.is_empty() || s.eq_ignore_ascii_case("all") {
            Self::All
        } else {
            Self::These(s.split(',').map(DeviceSelector::parse).collect())
        }
    }

    /// The set named by `VK_SGMAT_DEVICE`, else [`DeviceSet::All`].
    pub fn from_env() -> Self {
        crate::device::device_env().map_or(Self::All, |s| Self::parse(&s))
    }
}

/// Devices' relative speeds closer than this count as equal: timing noise should not unbalance
/// identical GPUs.
const SAME_SPEED: f64 = 1.1;

/// How long each GPU multiplies before its speed is timed (all at once, so the clocks rise
/// together).
const WARM_UP: Duration = Duration::from_millis(500);

/// Several [`Context`]s, one per device, that run one GEMM together. Made by
/// [`MultiContext::new`] (every usable GPU, or `VK_SGMAT_DEVICE=0,1`), or over contexts the
/// caller made ([`MultiContext::from_contexts`], [`MultiContext::with_weights`]).
///
/// Each device's share of C is proportional to its weight: its measured speed (a 4096^3 f16
/// GEMM on GPUs, after half a second of warming; devices within 10% of each other count as
/// equal) unless the caller sets them.
/// A device that fails gives [`Error::OnDevice`] naming it, and the call returns no result.
pub struct MultiContext {
    contexts: Vec<Arc<Context>>,
    weights: Vec<f64>,
}

impl MultiContext {
    /// Every usable device of the best kind, or the ones `VK_SGMAT_DEVICE` lists (`0,1`).
    pub fn new() -> Result<Self> {
        Self::with_options(&DeviceSet::from_env(), ContextOptions::default())
    }

    /// `devices`, each context made with `options` (its `device` field is ignored).
    pub fn with_options(devices: &DeviceSet, options: ContextOptions) -> Result<Self> {
        let instance = Instance::new(&InstanceOptions {
            validation: options.validation,
        })?;
        let selectors = match devices {
            DeviceSet::These(list) => list.clone(),
            DeviceSet::All => {
                let infos: Vec<DeviceInfo> = instance.devices()?.into_iter().map(|(_, d)| d).collect();
                best_kind(infos)?.into_iter().map(DeviceSelector::Index).collect()
            }
        };
        let mut contexts = Vec::with_capacity(selectors.len());
        for device in selectors {
            let options = ContextOptions {
                device,
                ..options.clone()
            };
            contexts.push(Arc::new(Context::on_instance(instance.clone(), options)?));
        }
        Self::from_contexts(contexts)
    }

    /// Over contexts the caller made (two on the same device work too), their weights measured.
    pub fn from_contexts(contexts: Vec<Arc<Context>>) -> Result<Self> {
        let speeds = measure_speeds(&contexts)?;
        let fastest = speeds.iter().copied().fold(0.0, f64::max);
        let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
        let weights = if fastest <= slowest * SAME_SPEED {
            vec![1.0; speeds.len()]
        } else {
            speeds.iter().map(|s| s / fastest).collect()
        };
        Self::with_weights(contexts, weights)
    }

    /// Over contexts the caller made, with their relative speeds given (finite, above zero).
    pub fn with_weights(contexts: Vec<Arc<Context>>, weights: Vec<f64>) -> Result<Self> {
        if contexts.is_empty() {
            return Err(Error::InvalidOption("a MultiContext needs at least one context".into()));
        }
        if weights.len() != contexts.len() {
            return Err(Error::InvalidOption(format!(
                "{} weights for {} contexts: one each",
                weights.len(),
                contexts.len()
            )));
        }
        crate::plan::split_check_weights(&weights)?;
        Ok(Self { contexts, weights })
    }

    /// The contexts, in device order.
    pub fn contexts(&self) -> &[Arc<Context>] {
        &self.contexts
    }

    /// The devices' relative speeds.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// [`Context::idle_memory`] over every device, in bytes.
    pub fn idle_memory(&self) -> u64 {
        self.contexts.iter().map(|c| c.idle_memory()).sum()
    }

    /// [`Context::release_idle_memory`] on every device; the bytes freed in all.
    pub fn release_idle_memory(&self) -> Result<u64> {
        self.contexts.iter().map(|c| c.release_idle_memory()).sum()
    }

    /// How an `m x n x k` GEMM of these element types is cut across the devices.
    pub fn split<TA: Element, TB: Element>(&self, m: usize, n: usize, k: usize, kind: SplitKind) -> Result<Split> {
        Split::new((m, n, k), &self.weights, kind, (size_of::<TA>(), size_of::<TB>()))
    }

    /// Wraps an error of device `device` so it names the device.
    pub(crate) fn on_device(&self, device: usize, source: Error) -> Error {
        named(&self.contexts, device, source)
    }

    /// The first error of per-part results, named by its device (parts in device order).
    pub(crate) fn first_error<R>(&self, results: Vec<(usize, Result<R>)>) -> Result<Vec<R>> {
        first_error(&self.contexts, results)
    }

    /// Checks that every part of a split (checked already) runs on its device with these
    /// options, before any work starts: an error names the device.
    pub(crate) fn plan_parts<TA: Element, TB: Element, TC: Element>(
        &self,
        split: &Split,
        layouts: (crate::Layout, crate::Layout),
        options: &GemmOptions,
    ) -> Result<()> {
        for p in &split.parts {
            self.contexts[p.device]
                .plan::<TA, TB, TC>(
                    &crate::Matmul::with_options(options),
                    (p.rows.len(), p.cols.len(), split.k),
                    layouts,
                )
                .map_err(|e| self.on_device(p.device, e))?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for MultiContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiContext")
            .field("contexts", &self.contexts)
            .field("weights", &self.weights)
            .finish()
    }
}

/// The indices of every usable device of the best-ranked kind (with matrix units or without,
/// discrete or integrated, ...), in enumeration order.
fn best_kind(mut infos: Vec<DeviceInfo>) -> Result<Vec<usize>> {
    rank_devices(&mut infos);
    let best = match infos.first() {
        Some(b) if b.usable() => (b.has_matrix_units(), b.kind),
        _ => {
            return Err(Error::NoUsableDevice {
                reasons: infos.iter().map(|d| (d.name.clone(), d.missing())).collect(),
            })
        }
    };
    let mut out: Vec<usize> = infos
        .iter()
        .filter(|d| d.usable() && (d.has_matrix_units(), d.kind) == best)
        .map(|d| d.index)
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// Runs `work(device, item)` for every item on a thread of its own, all at once; the results
/// in item order, each with its device. A worker's panic (a bug) is resumed here.
pub(crate) fn on_each<I: Send, R: Send>(
    items: Vec<(usize, I)>,
    work: impl Fn(usize, I) -> Result<R> + Sync,
) -> Vec<(usize, Result<R>)> {
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = items
            .into_iter()
            .map(|(d, item)| (d, s.spawn(move || work(d, item))))
            .collect();
        handles
            .into_iter()
            .map(|(d, h)| (d, h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
            .collect()
    })
}

/// Each context's GEMM rate (median of five timed square GEMMs, f16 -> f32 where the device has
/// it, else f32), all devices at once.
fn measure_speeds(contexts: &[Arc<Context>]) -> Result<Vec<f64>> {
    first_error(
        contexts,
        on_each(contexts.iter().enumerate().collect(), |_, c| measure_speed(c)),
    )
}

/// `source`, naming device `device` of `contexts`.
fn named(contexts: &[Arc<Context>], device: usize, source: Error) -> Error {
    Error::OnDevice {
        device,
        name: contexts[device].device_info().name.clone(),
        source: Box::new(source),
    }
}

/// The results, or the first error (in the order given) named by its device.
fn first_error<R>(contexts: &[Arc<Context>], results: Vec<(usize, Result<R>)>) -> Result<Vec<R>> {
    results
        .into_iter()
        .map(|(device, r)| r.map_err(|e| named(contexts, device, e)))
        .collect()
}

fn measure_speed(ctx: &Context) -> Result<f64> {
    let n = if ctx.is_cpu() { 128 } else { 4096 };
    if ctx.choose_config(ComponentType::F16, ComponentType::F32, None).is_ok() {
        time_square::<f16>(ctx, n)
    } else {
        time_square::<f32>(ctx, n)
    }
}

fn time_square<T: Element>(ctx: &Context, n: usize) -> Result<f64> {
    let (a, b) = (ctx.zeros::<T>(n, n)?, ctx.zeros::<T>(n, n)?);
    let mut c = ctx.zeros::<f32>(n, n)?;
    let op = crate::Matmul::new();
    ctx.run(&op, &a, &b, &mut c)?; // creates the pipelines
    if !ctx.is_cpu() {
        // An idle GPU runs at a fraction of its clock for a few hundred ms: timed cold, two
        // identical H200s once measured 0.217 apart (docs/perf/JOURNAL.md, two H200s).
        let warm = Instant::now();
        while warm.elapsed() < WARM_UP {
            ctx.run(&op, &a, &b, &mut c)?;
        }
    }
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            ctx.run(&op, &a, &b, &mut c).map(|()| t.elapsed().as_secs_f64())
        })
        .collect::<Result<_>>()?;
    Ok(2.0 * (n as f64).powi(3) / crate::median(&mut times))
}
