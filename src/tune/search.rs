//! The autotuner: times the candidate schemes of a problem's bucket once and remembers the winner
//! ([`TuneCache`]); later GEMMs of the bucket take it without timing.

use crate::api::{lock_tuning, Context, Element, GemmOptions, Matmul};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::Load;
use crate::plan::{Batch, Kernel};
use crate::tiling::{not_oversized, Layout, TileScheme, TuneKey};
use crate::timestamps::median;
use std::time::Duration;

impl Context {
    /// Autotunes the tile scheme of an `m x n x k` GEMM of these types, A and B stored
    /// `layouts`, as `op` describes it: the first time its bucket (config, layouts, shape
    /// rounded up to powers of two) is seen, times each candidate scheme on scratch matrices of
    /// its size until steady and keeps the fastest in the tuning file
    /// ([`ContextOptions::autotune`](crate::ContextOptions::autotune)), which every later plan
    /// of the bucket, in any process, reads. Returns the bucket's scheme. Planning never tunes:
    /// this is the one step that does. A GEMM that runs without the matrix units (or on the
    /// matrix-vector kernel) has nothing to choose: its plan's scheme comes back and nothing is
    /// timed or stored. [`Error::InvalidOption`] without a tuning file.
    pub fn tune<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> Result<TileScheme> {
        let Some(cache) = &self.tune_cache else {
            return Err(Error::InvalidOption(
                "tuning keeps its winners in a file: set ContextOptions::autotune".into(),
            ));
        };
        let plan = self.plan::<TA, TB, TC>(op, (m, n, k), layouts)?;
        // Only the matrix units' kernels have schemes to choose among: the kernels without them
        // have one tile per device, and the matrix-vector kernel none.
        let on_matrix_units = plan
            .kernels()
            .iter()
            .any(|kernel| matches!(kernel, Kernel::Gemm(key) if !Load::without_matrix_units(key.loads)));
        if !on_matrix_units {
            return Ok(plan.scheme);
        }
        let config = plan.config;
        let key = TuneKey::new(&config, layouts, (m, n, k));
        let known = lock_tuning(cache).get(&key, &config, self.device_info());
        if let Some(s) = known {
            return Ok(s);
        }
        let (scheme, tflops) = self.autotune(&config, (m, n, k), layouts)?;
        lock_tuning(cache).insert(key, scheme, tflops, [m, n, k])?;
        Ok(scheme)
    }

    /// Times each candidate scheme that fits the problem (tile at most twice the problem) on
    /// scratch matrices of its size and returns the fastest with its TFLOP/s. Each candidate runs
    /// until its speed is steady (0.1 to 3 s, as [`Timing::WarmUp`](crate::Timing::WarmUp)) before it is timed.
    fn autotune(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        (al, bl): (Layout, Layout),
    ) -> Result<(TileScheme, f64)> {
        const WARM: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(3));
        let fits: Vec<TileScheme> = self
            .schemes(config)
            .into_iter()
            .filter(|s| {
                let g = s.geometry(config);
                not_oversized(g.bm as usize, g.bn as usize, m, n)
            })
            .collect();
        if fits.len() < 2 || self.device_info().limits.timestamp_period <= 0.0 {
            return Ok((self.choose_scheme(config, m, n)?, 0.0));
        }
        // Nonzero operands (1.0 or 1), so the timing is not that of a multiply by zero.
        let one: u32 = match config.component_type {
            ComponentType::F16 => 0x3c00_3c00,
            ComponentType::Bf16 => 0x3f80_3f80,
            ComponentType::F32 => 0x3f80_0000,
            _ => 0x0101_0101,
        };
        // Buffers of the config's element sizes: timing needs no Rust element type.
        let (ct, rt) = (config.component_type, config.result_type);
        let a = self.alloc_placed(m, k, al, ct)?;
        let b = self.alloc_placed(k, n, bl, ct)?;
        let c = self.alloc_placed(m, n, Layout::RowMajor, rt)?;
        self.run_recorded(|rec| {
            rec.fill(a.0.raw(), a.0.size(), one);
            rec.fill(b.0.raw(), b.0.size(), one);
            Ok(())
        })?;
        let mut best: Option<(TileScheme, f64)> = None;
        for scheme in fits {
            let options = GemmOptions {
                scheme: Some(scheme),
                ..Default::default()
            };
            let plan = self.plan_placed(a.1, b.1, c.1, [ct, ct, rt], Batch::ONE, &options)?;
            let operands = plan.bind_order([&a.0, &b.0, &c.0]);
            self.warm_plan(&plan, (operands, [None; 3]), WARM)?;
            let median = median(&mut self.time_plan(&plan, operands, 7)?);
            if best.is_none_or(|(_, t)| median < t) {
                best = Some((scheme, median));
            }
        }
        let (scheme, seconds) = best.expect("at least two candidates");
        Ok((scheme, 2.0 * (m * n * k) as f64 / seconds / 1e12))
    }
}
