//! The driver self-test ([`ContextOptions::self_test`](crate::ContextOptions::self_test)):
//! drivers advertise cooperative-matrix configurations they compute wrongly, so before a
//! configuration's kernel family first runs on a device and driver, a small exact known-answer
//! GEMM runs on it ([`known_answer`]); a configuration that answers wrongly is dropped from the
//! context's configs, and the planner routes its work to the next path. Verdicts are kept per
//! kernel family, in memory and in a file beside the pipeline cache ([`file`]), so a later
//! process tests nothing it tested before. The test itself runs in `crate::api::self_test`.

mod file;
pub(crate) mod known_answer;
mod operands;

use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceInfo;
use crate::kernel::KernelKey;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What the known-answer GEMM of one kernel family found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every element exact.
    Passed,
    /// An element differed: the family's configuration (its display name) and how.
    Failed {
        /// The configuration, as `GPUSubgroupMatrixConfig` displays it.
        config: String,
        /// The first wrong element.
        reason: String,
    },
}

/// A configuration the self-test dropped: no plan of its context uses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DroppedConfig {
    /// The configuration.
    pub config: GPUSubgroupMatrixConfig,
    /// The kernel whose known-answer GEMM failed (its [`KernelKey::name`]).
    pub kernel: String,
    /// What was wrong: the first element that differed from the exact answer.
    pub reason: String,
}

/// What the driver self-test knows on a context's device ([`crate::Context::self_test`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SelfTestReport {
    /// Whether the self-test runs ([`ContextOptions::self_test`](crate::ContextOptions::self_test)).
    pub on: bool,
    /// The file the verdicts are kept in, if any.
    pub file: Option<PathBuf>,
    /// Kernel families that passed, in this process or an earlier one.
    pub passed: usize,
    /// Configurations dropped, with the kernel that failed and how.
    pub dropped: Vec<DroppedConfig>,
    /// Known-answer GEMMs this context ran (the families it met without a verdict).
    pub tested: usize,
    /// The time they took (on pipelines the GEMMs that met them create anyway).
    pub testing_time: Duration,
    /// The time reading the verdict file took when the context was made.
    pub load_time: Duration,
}

impl SelfTestReport {
    /// What the verdict file beside `cache` holds for `device`, without a context (what
    /// `vk-sgmat info` shows): a context on that device and driver starts from the same.
    pub fn stored(device: &DeviceInfo, cache: &crate::PipelineCacheFile) -> Self {
        SelfTest::open(true, cache.self_test_path_for(device), device).report()
    }
}

/// A context's verdicts.
pub(crate) struct SelfTest {
    on: bool,
    file: Option<PathBuf>,
    header: String,
    load_time: Duration,
    state: Mutex<State>,
    /// Whether any configuration was dropped: every planned GEMM asks about each configuration,
    /// and on a healthy driver the answer needs no lock.
    any_dropped: AtomicBool,
}

#[derive(Default)]
struct State {
    /// Every verdict known, by kernel name: the file's and this process's.
    by_name: BTreeMap<String, Verdict>,
    /// Whether a family may run (passed, or not a driver's configuration), by key: the lookup
    /// each plan makes, so a name is formatted once per family and process.
    by_key: FxHashMap<KernelKey, bool>,
    dropped: Vec<DroppedConfig>,
    /// Known-answer GEMMs run by this context, and their time.
    tested: (usize, Duration),
}

impl SelfTest {
    /// The verdicts for `device`: the file's where it is good (`None`: no file, or a
    /// diagnostic context that must neither trust nor write one).
    pub fn open(on: bool, file: Option<PathBuf>, device: &DeviceInfo) -> Self {
        let start = Instant::now();
        let header = file::header(device);
        let by_name = file
            .as_deref()
            .filter(|_| on)
            .and_then(|p| file::read(p, &header))
            .unwrap_or_default();
        let offered = device.all_configs();
        let mut state = State::default();
        for (name, verdict) in &by_name {
            if let Verdict::Failed { config, reason } = verdict {
                state.drop_config(&offered, name, config, reason);
            }
        }
        state.by_name = by_name;
        Self {
            on,
            file,
            header,
            load_time: start.elapsed(),
            any_dropped: AtomicBool::new(!state.dropped.is_empty()),
            state: Mutex::new(state),
        }
    }

    /// Whether the self-test runs.
    pub fn on(&self) -> bool {
        self.on
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the self-test dropped `config`.
    pub fn dropped(&self, config: &GPUSubgroupMatrixConfig) -> bool {
        self.any_dropped.load(Ordering::Acquire) && self.state().dropped.iter().any(|d| d.config == *config)
    }

    /// Whether `family` may run (`Some(true)`), failed (`Some(false)`), or is untested.
    pub fn lookup(&self, family: &KernelKey) -> Option<bool> {
        let mut state = self.state();
        if let Some(&ok) = state.by_key.get(family) {
            return Some(ok);
        }
        let ok = match state.by_name.get(&family.name())? {
            Verdict::Passed => true,
            Verdict::Failed { .. } => false,
        };
        state.by_key.insert(*family, ok);
        Some(ok)
    }

    /// Records that `family` needs no test (its configuration is no driver's).
    pub fn exempt(&self, family: &KernelKey) {
        self.state().by_key.insert(*family, true);
    }

    /// Records `family`'s verdict (dropping its configuration if it failed) and saves the
    /// file. A file that cannot be written costs the next process a test, nothing more.
    pub fn record(
        &self,
        family: &KernelKey,
        offered: &[GPUSubgroupMatrixConfig],
        (wrong, took): (Option<String>, Duration),
    ) {
        let name = family.name();
        let mut state = self.state();
        state.tested.0 += 1;
        state.tested.1 += took;
        let verdict = match wrong {
            None => Verdict::Passed,
            Some(reason) => {
                let reason = file::one_field(&reason);
                let config = family.config.to_string();
                state.drop_config(offered, &name, &config, &reason);
                self.any_dropped.store(!state.dropped.is_empty(), Ordering::Release);
                Verdict::Failed { config, reason }
            }
        };
        state.by_key.insert(*family, verdict == Verdict::Passed);
        state.by_name.insert(name, verdict);
        if let Some(path) = &self.file {
            let _ = file::save(path, &self.header, &state.by_name);
        }
    }

    /// The report [`crate::Context::self_test`] returns.
    pub fn report(&self) -> SelfTestReport {
        let state = self.state();
        SelfTestReport {
            on: self.on,
            file: self.file.clone(),
            passed: state.by_name.values().filter(|v| **v == Verdict::Passed).count(),
            dropped: state.dropped.clone(),
            tested: state.tested.0,
            testing_time: state.tested.1,
            load_time: self.load_time,
        }
    }
}

impl State {
    /// Drops the offered configuration named `config` (once), for the reason given.
    fn drop_config(&mut self, offered: &[GPUSubgroupMatrixConfig], kernel: &str, config: &str, reason: &str) {
        let Some(c) = offered.iter().find(|c| c.to_string() == config) else {
            return; // a configuration this device does not offer (now): nothing to drop
        };
        if !self.dropped.iter().any(|d| d.config == *c) {
            self.dropped.push(DroppedConfig {
                config: *c,
                kernel: kernel.to_string(),
                reason: reason.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{filter_configs, tests::lavapipe_list, FilterFeatures};
    use crate::device::test_device;
    use crate::tiling::test_support::lavapipe_limits;

    fn device(driver_version: u32) -> DeviceInfo {
        let mut d = test_device(lavapipe_limits(), None);
        d.configs = filter_configs(
            &lavapipe_list(),
            FilterFeatures {
                shader_f16: true,
                ..Default::default()
            },
        );
        d.driver_version = driver_version;
        d.device_uuid = "0123".into();
        d
    }

    #[test]
    fn a_failed_verdict_on_disk_drops_its_configuration_for_the_same_driver_only() {
        let dir = std::env::temp_dir().join(format!("vk-sgmat-selftest-open-{}", std::process::id()));
        let path = dir.join("verdicts");
        let d = device(1);
        let config = d.all_configs()[0];
        let mut verdicts = BTreeMap::new();
        verdicts.insert("gemm_x".to_string(), Verdict::Passed);
        let failed = Verdict::Failed {
            config: config.to_string(),
            reason: "C[0][0] = 0 where 1 is exact".into(),
        };
        verdicts.insert("gemm_y".to_string(), failed);
        file::save(&path, &file::header(&d), &verdicts).unwrap();

        let t = SelfTest::open(true, Some(path.clone()), &d);
        assert!(t.dropped(&config));
        let report = t.report();
        assert_eq!(report.passed, 1);
        assert_eq!(report.dropped[0].kernel, "gemm_y");
        assert!(d.all_configs()[1..].iter().all(|c| !t.dropped(c)));

        // Another driver version, or the self-test off: the file says nothing.
        assert!(!SelfTest::open(true, Some(path.clone()), &device(2)).dropped(&config));
        assert!(!SelfTest::open(false, Some(path.clone()), &d).dropped(&config));
        // Nor do verdicts of other library sources under the same crate version.
        let ours = file::header(&d);
        let other = ours.replacen(env!("VK_SGMAT_SOURCE_DIGEST"), "0000000000000000", 1);
        assert_ne!(other, ours, "the header names the sources' digest");
        file::save(&path, &other, &verdicts).unwrap();
        assert!(!SelfTest::open(true, Some(path), &d).dropped(&config));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
