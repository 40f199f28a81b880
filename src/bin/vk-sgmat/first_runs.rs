//! `vk-sgmat bench --first-runs SECONDS`: what a user meets in a fresh process. Per shape, in
//! order, with no warm-up: the wall time to plan it and create its pipelines, then runs back to
//! back for SECONDS, each timed by its own GPU timestamps; printed per shape: the preparation,
//! the first result's wall time, the first run against the steady state (the median of the last
//! third), and when the runs came within 5% of it for good.

use crate::verify::{random_matrix, Rng};
use anyhow::Result;
use std::time::{Duration, Instant};
use vk_sgmat::{Context, Element, GemmOptions, Layout, MatRef};
use vk_sgmat::{Matmul, Timing, Timings};

/// One shape's first runs.
pub(crate) struct FirstRuns {
    shape: (usize, usize, usize),
    kernel: String,
    prepare: Duration,
    /// Wall time from the start of planning to the first result back.
    first_result: Duration,
    /// (seconds since the pipelines were ready, GPU seconds) of each run.
    runs: Vec<(f64, f64)>,
    /// Of the pipelines the preparation created: how many a helper process compiled, and how
    /// many the driver took from the pipeline cache (its creation feedback).
    compiled: (usize, usize),
    /// How many this process compiled itself, and their compiles' wall times summed.
    compiled_here: (usize, Duration),
}

/// Within this of the steady state counts as at speed.
const AT_SPEED: f64 = 1.05;

impl FirstRuns {
    fn steady(&self) -> f64 {
        let mut tail: Vec<f64> = self.runs[self.runs.len() * 2 / 3..].iter().map(|r| r.1).collect();
        vk_sgmat::median(&mut tail)
    }

    /// The first run from which every later run is within [`AT_SPEED`] of the steady state.
    fn settled(&self) -> Option<(usize, f64)> {
        let limit = self.steady() * AT_SPEED;
        let last_slow = self.runs.iter().rposition(|r| r.1 > limit);
        let i = last_slow.map_or(0, |i| i + 1);
        self.runs.get(i).map(|r| (i, r.0))
    }

    /// One line: the shape's figures.
    pub(crate) fn line(&self) -> String {
        let (m, n, k) = self.shape;
        let tflops = |s: f64| 2.0 * (m * n * k) as f64 / s / 1e12;
        let (first, steady) = (self.runs[0].1, self.steady());
        let settled = match self.settled() {
            Some((i, at)) => format!("run {i}, {:.0} ms after ready", at * 1e3),
            None => "never".into(),
        };
        format!(
            "first {m}x{n}x{k} [{}]: prepare {:.1} ms, first result {:.1} ms, first run {:.1} us ({:.2} TFLOP/s), steady {:.1} us ({:.2}), first/steady {:.2}, within 5% from {settled}; {} runs; pipelines from a helper {}, from the cache {}, compiled here {} in {:.0} ms",
            self.kernel,
            self.prepare.as_secs_f64() * 1e3,
            self.first_result.as_secs_f64() * 1e3,
            first * 1e6,
            tflops(first),
            steady * 1e6,
            tflops(steady),
            first / steady,
            self.runs.len(),
            self.compiled.0,
            self.compiled.1,
            self.compiled_here.0,
            self.compiled_here.1.as_secs_f64() * 1e3
        )
    }
}

/// Runs one shape as a fresh process meets it (operands made and uploaded first, untimed).
pub(crate) fn first_runs<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (al, bl): (Layout, Layout),
    options: &GemmOptions,
    (seconds, pause, prime): (Duration, Duration, usize),
) -> Result<FirstRuns> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, al, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, bl, 0);
    let da = ctx.upload(MatRef::stored(&a, m, k, al, lda))?;
    let db = ctx.upload(MatRef::stored(&b, k, n, bl, ldb))?;
    let mut dc = ctx.zeros::<TC>(m, n)?;
    let start = Instant::now();
    let kernel = ctx
        .plan::<TA, TB, TC>(&Matmul::with_options(options), (m, n, k), (al, bl))?
        .kernel_name();
    let before = ctx.compile_report();
    // Preparing creates every pipeline the GEMM needs.
    let prepared = ctx.prepare(&Matmul::with_options(options), &da, &db, &mut dc)?;
    if prime > 0 {
        prime_kernel::<TA, TB, TC>(ctx, (m, k), (al, &db), options, prime)?;
    }
    let prepare = start.elapsed();
    let after = ctx.compile_report();
    let compiled = (
        after.from_helper - before.from_helper,
        after.from_cache - before.from_cache,
    );
    let compiled_here = (
        after.compiled_here - before.compiled_here,
        after.compile_time - before.compile_time,
    );
    let ready = Instant::now();
    let mut runs = Vec::new();
    let mut first_result = Duration::ZERO;
    while runs.len() < 3 || ready.elapsed() < seconds {
        let gpu = prepared.time(Timing::Runs(1)).map(Timings::into_seconds)?[0];
        if runs.is_empty() {
            first_result = start.elapsed();
            std::thread::sleep(pause);
        }
        runs.push((ready.elapsed().as_secs_f64(), gpu));
    }
    Ok(FirstRuns {
        shape: (m, n, k),
        kernel,
        prepare,
        first_result,
        runs,
        compiled,
        compiled_here,
    })
}

/// Runs the GEMM's kernel `count` times on a few rows of A (the same scheme, sizes and leading
/// dimensions: the same pipeline), enqueued on one stream: whether a freshly compiled pipeline's
/// slow start follows the count of its runs (then cheap runs end it) or their work.
fn prime_kernel<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, k): (usize, usize),
    (al, db): (Layout, &vk_sgmat::DeviceMatrix<TB>),
    options: &GemmOptions,
    count: usize,
) -> Result<()> {
    let n = db.cols();
    let full = ctx.plan::<TA, TB, TC>(&Matmul::with_options(options), (m, n, k), (al, db.layout()))?;
    let rows = m.min(16);
    // Split the same way: a slice's kernel builds in the slice's depth.
    let slices = if full.is_split_k() {
        full.gemm_dispatches().count()
    } else {
        1
    };
    let small = GemmOptions {
        scheme: Some(full.scheme),
        specialize: Some(full.main_kernel().fixed.is_some()),
        matrix_vector: Some(false),
        split_k: Some(slices as u32),
        ..options.clone()
    };
    let op = Matmul::with_options(&small);
    let same = ctx
        .plan::<TA, TB, TC>(&op, (rows, n, k), (al, db.layout()))?
        .main_kernel()
        == full.main_kernel();
    anyhow::ensure!(same, "priming would run another kernel than the GEMM's");
    let mut rng = Rng::new(1);
    let (a, lda) = random_matrix::<TA>(&mut rng, rows, k, al, 0);
    let da = ctx.upload(MatRef::stored(&a, rows, k, al, lda))?;
    let mut dc = ctx.zeros::<TC>(rows, n)?;
    let mut s = ctx.stream()?;
    for _ in 0..count {
        s.run(&op, &da, db, &mut dc)?;
    }
    s.submit()?.wait()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(times: &[f64]) -> FirstRuns {
        FirstRuns {
            shape: (2, 2, 2),
            kernel: "k".into(),
            prepare: Duration::from_millis(3),
            first_result: Duration::from_millis(5),
            runs: times.iter().enumerate().map(|(i, &t)| (i as f64 * 0.01, t)).collect(),
            compiled: (2, 3),
            compiled_here: (1, Duration::from_millis(1500)),
        }
    }

    #[test]
    fn settling_is_the_run_after_the_last_slow_one() {
        let slow_then_fast = runs(&[5.0, 4.0, 1.0, 6.0, 1.0, 1.02, 1.0, 0.99, 1.0]);
        assert_eq!(slow_then_fast.steady(), 1.0);
        assert_eq!(slow_then_fast.settled().map(|s| s.0), Some(4));
        assert_eq!(runs(&[1.0, 1.0, 1.0]).settled().map(|s| s.0), Some(0));
        let line = slow_then_fast.line();
        assert!(
            line.contains("first/steady 5.00")
                && line.contains("from run 4")
                && line.contains("pipelines from a helper 2, from the cache 3, compiled here 1 in 1500 ms"),
            "{line}"
        );
    }
}
