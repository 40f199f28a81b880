//! `peak`: the register-resident multiply-accumulate ceiling of one config on this device (see
//! [`crate::kernel::peak`] for the kernel). GEMM throughput is read as a fraction of it.

use crate::api::Context;
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::peak::{CHAINS, SUBGROUPS};
use crate::kernel::{generate_peak, PushConstants};
use crate::memory::BufferKind;
use crate::plan::Window;
use crate::record::{Access, Recording};
use crate::timestamps::TimestampPool;

/// One `peak` measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PeakResult {
    /// The config measured.
    pub config: GPUSubgroupMatrixConfig,
    /// Median multiply-accumulate throughput, in FLOP/s (2 per multiply-add).
    pub flops: f64,
    /// Workgroups per dispatch.
    pub workgroups: u32,
    /// Loop iterations per subgroup.
    pub iterations: u32,
    /// Timed dispatches.
    pub reps: u32,
}

/// How fast the device writes memory: a buffer filled by `vkCmdFillBuffer` (the driver's own
/// fill), the ceiling for writing C, which dominates GEMMs with short K.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FillResult {
    /// Bytes written per fill.
    pub bytes: u64,
    /// Median write rate, in bytes per second.
    pub bytes_per_s: f64,
    /// Timed fills.
    pub reps: u32,
}

/// A small value of the component type as a 32-bit word pattern, so accumulators stay finite and
/// in range for thousands of iterations (and inputs are not all zero, which some GPUs run faster).
fn fill_word(t: ComponentType) -> u32 {
    match t {
        ComponentType::F16 => 0x1c00_1c00,  // 2^-8
        ComponentType::Bf16 => 0x3b80_3b80, // 2^-8
        ComponentType::F32 => 0x3b80_0000,  // 2^-8
        _ => 0x0101_0101,                   // 1 in every byte
    }
}

impl Context {
    /// Measures the multiply-accumulate ceiling of `config`: `workgroups` workgroups of
    /// 4 subgroups, each running `iterations` x 8 independent MulAdds, `reps` timed dispatches
    /// after one warm-up; the median is returned.
    pub fn peak(
        &self,
        config: &GPUSubgroupMatrixConfig,
        workgroups: u32,
        iterations: u32,
        reps: u32,
    ) -> Result<PeakResult> {
        if !self.configs().contains(config) {
            return Err(Error::NoConfig {
                component_type: config.component_type,
                result_type: config.result_type,
                available: self.configs(),
            });
        }
        let sg = self.subgroup_size();
        let words = generate_peak(config, sg)?;
        let pipeline = self.pipelines.build(&words, sg)?;
        let es = config.component_type.size_bytes() as u64;
        let in_bytes = (u64::from(CHAINS) * u64::from(config.m * config.k) + 2 * u64::from(config.k * config.n)) * es;
        let out_bytes = u64::from(workgroups * SUBGROUPS * CHAINS * config.m * config.n)
            * u64::from(config.result_type.size_bytes());
        let input = self.pool.allocate(in_bytes, BufferKind::Storage)?;
        let output = self.pool.allocate(out_bytes, BufferKind::Storage)?;
        let reps = reps.max(1);
        let pool = TimestampPool::new(&self.device, 2 * reps)?;
        let push = PushConstants {
            m: iterations,
            ..Default::default()
        };
        let whole = Window::from_start;
        let bindings = [
            (0, input.raw(), whole(input.size())),
            (1, input.raw(), whole(input.size())),
            (2, output.raw(), whole(output.size())),
        ];
        self.run_recorded(|rec| {
            rec.fill(input.raw(), input.size(), fill_word(config.component_type));
            rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
            rec.reset_queries(pool.raw, pool.count);
            let layout = self.pipelines.layout;
            let dispatch =
                |rec: &mut Recording<'_>| rec.dispatch(pipeline.raw, layout, &bindings, &push, [workgroups, 1, 1]);
            // Warm-up dispatch (clocks rise), then the timed ones.
            dispatch(rec)?;
            for r in 0..reps {
                rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
                rec.timestamp(pool.raw, 2 * r);
                dispatch(rec)?;
                rec.timestamp(pool.raw, 2 * r + 1);
            }
            Ok(())
        })?;
        let median = pool.median_interval()?;
        let flop = 2.0
            * f64::from(config.m * config.n * config.k)
            * f64::from(CHAINS)
            * f64::from(iterations)
            * f64::from(workgroups * SUBGROUPS);
        Ok(PeakResult {
            config: *config,
            flops: flop / median,
            workgroups,
            iterations,
            reps,
        })
    }
}

impl Context {
    /// Measures the device's memory write rate: `reps` timed fills of a `bytes`-byte buffer
    /// after one warm-up fill; the median is returned. Nothing is read back, so the figure is
    /// the write path alone, which a GEMM's store of C cannot beat.
    pub fn fill_bandwidth(&self, bytes: u64, reps: u32) -> Result<FillResult> {
        let bytes = bytes.max(4).next_multiple_of(4);
        let buffer = self.pool.allocate(bytes, BufferKind::Storage)?;
        let reps = reps.max(1);
        let pool = TimestampPool::new(&self.device, 2 * reps)?;
        self.run_recorded(|rec| {
            rec.reset_queries(pool.raw, pool.count);
            rec.fill(buffer.raw(), bytes, 0);
            for r in 0..reps {
                rec.barrier(Access::TRANSFER_WRITE, Access::TRANSFER_WRITE);
                rec.timestamp(pool.raw, 2 * r);
                // A different pattern each time, so no fill can be skipped as redundant.
                rec.fill(buffer.raw(), bytes, r + 1);
                rec.timestamp(pool.raw, 2 * r + 1);
            }
            Ok(())
        })?;
        let median = pool.median_interval()?;
        Ok(FillResult {
            bytes,
            bytes_per_s: bytes as f64 / median,
            reps,
        })
    }
}
