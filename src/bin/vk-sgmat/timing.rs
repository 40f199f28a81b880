//! Timing a command's runs after a warm-up.

use std::time::{Duration, Instant};

/// The median of `reps` runs timed by `time` (each run's GPU seconds), after `warm` of batches
/// of eight: clocks rise under load, fresh pipelines run slowly at first.
pub fn warm_median(
    warm: Duration,
    reps: u32,
    mut time: impl FnMut(u32) -> vk_sgmat::Result<Vec<f64>>,
) -> vk_sgmat::Result<f64> {
    let start = Instant::now();
    while start.elapsed() < warm {
        time(8)?;
    }
    Ok(vk_sgmat::median(&mut time(reps.max(1))?))
}
