//! Timestamp queries, and the median every set of timings is summed up by.

use crate::device::Device;
use crate::error::{Error, Result};
use ash::vk;
use std::sync::Arc;

/// A timestamp query pool, destroyed on drop.
pub(crate) struct TimestampPool {
    pub raw: vk::QueryPool,
    pub count: u32,
    device: Arc<Device>,
}

impl TimestampPool {
    pub fn new(device: &Arc<Device>, count: u32) -> Result<Self> {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(count);
        // SAFETY: valid create info.
        let raw =
            unsafe { device.raw().create_query_pool(&info, None) }.map_err(|r| Error::vk("vkCreateQueryPool", r))?;
        Ok(Self {
            raw,
            count,
            device: device.clone(),
        })
    }

    /// The timestamps in ticks (call after the submission that wrote them completed).
    pub fn read(&self) -> Result<Vec<u64>> {
        let mut data = vec![0u64; self.count as usize];
        // SAFETY: every query was written by a completed submission.
        unsafe {
            self.device.raw().get_query_pool_results(
                self.raw,
                0,
                &mut data,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(|r| Error::vk("vkGetQueryPoolResults", r))?;
        Ok(data)
    }

    /// Seconds between timestamps 2i and 2i+1, for each pair i (after the submission completed).
    pub fn intervals(&self) -> Result<Vec<f64>> {
        Ok(self.steps(2)?.into_iter().flatten().collect())
    }

    /// The timestamps in runs of `per_run`: for each run, the seconds between each stamp and
    /// the next (after the submission completed).
    pub fn steps(&self, per_run: usize) -> Result<Vec<Vec<f64>>> {
        let period = f64::from(self.device.info().limits.timestamp_period) * 1e-9;
        Ok(self
            .read()?
            .chunks(per_run)
            .map(|run| {
                run.windows(2)
                    .map(|t| t[1].wrapping_sub(t[0]) as f64 * period)
                    .collect()
            })
            .collect())
    }

    /// The median of [`TimestampPool::intervals`].
    pub fn median_interval(&self) -> Result<f64> {
        Ok(median(&mut self.intervals()?))
    }
}

/// Sorts `values` and returns the middle one (the upper middle for an even count; NaN when
/// empty): how vk-sgmat sums up every set of timings.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

impl Drop for TimestampPool {
    fn drop(&mut self) {
        if self.device.work_abandoned() {
            return; // a submission that timed out may still write it
        }
        // SAFETY: the submission that used the pool has completed.
        unsafe { self.device.raw().destroy_query_pool(self.raw, None) };
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_is_the_middle_of_the_sorted_values() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(&mut []).is_nan());
    }
}
