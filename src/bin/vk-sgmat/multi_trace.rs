//! `bench --devices all --trace`: pinned GEMMs traced call by call, and what they print.

use anyhow::Result;
use std::fmt::Write as _;
use std::time::Instant;
use vk_sgmat::{Element, GemmOptions, Matmul, MultiContext, PinnedMatrix, PipelineStep, PipelineTrace, Split};

/// One traced call: its wall time (ms) and each device's trace.
pub type TracedCall = (f64, Vec<PipelineTrace>);

/// `reps` (at least one) traced pinned GEMMs on `set`, cut as `split`.
pub fn traced_calls<TA: Element, TB: Element, TC: Element>(
    set: &MultiContext,
    (a, b, c): (&PinnedMatrix<TA>, &PinnedMatrix<TB>, &mut PinnedMatrix<TC>),
    options: &GemmOptions,
    split: &Split,
    reps: usize,
) -> Result<Vec<TracedCall>> {
    (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            let parts = set.run_traced(&Matmul::with_options(options).split(split), a, b, c)?;
            Ok((t.elapsed().as_secs_f64() * 1e3, parts))
        })
        .collect()
}

/// A line per call, then the slowest call's steps: where a slow call departs from the rest.
pub fn render(label: &str, calls: &[TracedCall]) -> String {
    let mut s = format!("traced {label}: {} calls\n", calls.len());
    for (ms, parts) in calls {
        let _ = writeln!(s, "  {}", render_call(*ms, parts));
    }
    if let Some((ms, parts)) = calls.iter().max_by(|x, y| x.0.total_cmp(&y.0)) {
        s.push_str(&render_trace(&format!("{label}, slowest call, {ms:.2} ms"), parts));
    }
    s
}

/// One traced call on a line: its time, and each device's GPU span (first to last timestamp),
/// time waiting for the GPU and buffers allocated.
fn render_call(ms: f64, parts: &[PipelineTrace]) -> String {
    let mut s = format!("{ms:7.2} ms:");
    for p in parts {
        let gpu = p.steps.iter().map(|t| t.end_ms).fold(0.0, f64::max);
        let h = &p.host;
        let _ = write!(
            s,
            " device {} GPU {gpu:.2}, host {:.2}-{:.2} waiting {:.2}, {} new;",
            p.device, h.began_ms, h.ended_ms, h.waiting_ms, h.new_buffers
        );
    }
    s
}

/// One traced pinned GEMM: each device's steps in ms from its first timestamp, a line per band.
fn render_trace(label: &str, parts: &[PipelineTrace]) -> String {
    let mut s =
        format!("trace {label} (ms from each device's first timestamp; B, then per band: A in, multiply, C out)\n");
    for part in parts {
        let span = |step: PipelineStep, band: usize| {
            part.steps
                .iter()
                .find(|t| t.step == step && t.band == band)
                .map_or("-".to_string(), |t| {
                    // Work per microsecond: bytes / 1e3 is GB/s, operations / 1e6 TFLOP/s.
                    let per_us = t.work as f64 / ((t.end_ms - t.start_ms) * 1e3);
                    let rate = match step {
                        PipelineStep::Multiply => format!("{:.0} TFLOP/s", per_us / 1e6),
                        _ => format!("{:.1} GB/s", per_us / 1e3),
                    };
                    format!("{:.2}-{:.2} ({rate})", t.start_ms, t.end_ms)
                })
        };
        let h = &part.host;
        let _ = writeln!(
            s,
            "  device {} host (ms from the call's start): began {:.2}, B submitted {:.2}, waited {:.2}, ended {:.2}, {} new buffers",
            part.device, h.began_ms, h.first_submit_ms, h.waiting_ms, h.ended_ms, h.new_buffers
        );
        let _ = writeln!(s, "  device {}: B in {}", part.device, span(PipelineStep::BIn, 0));
        let bands = part.steps.iter().map(|t| t.band + 1).max().unwrap_or(0);
        for band in 0..bands {
            let _ = writeln!(
                s,
                "  device {} band {band}: A in {}, multiply {}, C out {}",
                part.device,
                span(PipelineStep::AIn, band),
                span(PipelineStep::Multiply, band),
                span(PipelineStep::COut, band)
            );
        }
    }
    s
}
