//! The autotuner's memory: the fastest tile scheme per (config, layouts, shape bucket), in a JSON
//! file keyed by the device's UUID and driver version. The file is untrusted input: one for
//! another device or driver, or one that does not parse, is ignored and replaced on the next
//! save; an entry whose scheme breaks [`TileScheme`]'s bounds is dropped when the file is read,
//! and one that fails [`TileScheme::check_device`] when it is looked up; both with a `log`
//! warning, and the bucket is tuned again. So the file can change which correct kernel runs,
//! never a result. Plain data the planner reads, so it lives beside the schemes; the timing that
//! fills it is `Context::tune`'s (`crate::tune`), which owns the buffers and pipelines.

use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::tiling::{Layout, TileScheme};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the file format; files of another version are ignored.
const FORMAT: u32 = 1;

/// What a tuned scheme is remembered for. Problem sizes are rounded up to powers of two, so
/// similar shapes share one measurement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TuneKey {
    /// The config, as displayed (e.g. `16x16x16 f16->f32`).
    pub config: String,
    /// A's and B's layouts (`nn`, `nt`, `tn`, `tt`).
    pub layouts: String,
    /// M, N and K rounded up to powers of two.
    pub bucket: [usize; 3],
}

impl TuneKey {
    /// The key of a problem.
    pub(crate) fn new(
        config: &GPUSubgroupMatrixConfig,
        layouts: (Layout, Layout),
        (m, n, k): (usize, usize, usize),
    ) -> Self {
        Self {
            config: config.to_string(),
            layouts: format!("{}{}", layouts.0.letter(), layouts.1.letter()),
            bucket: [m, n, k].map(usize::next_power_of_two),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    key: TuneKey,
    scheme: TileScheme,
    /// What the winner measured, for people reading the file.
    tflops: f64,
    /// The problem it was measured on.
    measured_on: [usize; 3],
}

#[derive(Debug, Serialize, Deserialize)]
struct TuneFile {
    format: u32,
    device_name: String,
    device_uuid: String,
    driver_version: u32,
    entries: Vec<Entry>,
}

/// [`TuneFile`] as read, before each entry is checked.
#[derive(Deserialize)]
struct RawTuneFile {
    format: u32,
    device_uuid: String,
    driver_version: u32,
    entries: Vec<serde_json::Value>,
}

/// The tuning file of one device.
#[derive(Debug)]
pub(crate) struct TuneCache {
    path: PathBuf,
    file: TuneFile,
}

impl TuneCache {
    /// Reads `path`, keeping its entries only if it parses and belongs to this device and driver.
    pub(crate) fn open(path: &Path, info: &DeviceInfo) -> Self {
        let fresh = TuneFile {
            format: FORMAT,
            device_name: info.name.clone(),
            device_uuid: info.device_uuid.clone(),
            driver_version: info.driver_version,
            entries: Vec::new(),
        };
        let Some(raw) = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<RawTuneFile>(&bytes).ok())
            .filter(|f| {
                f.format == FORMAT && f.device_uuid == info.device_uuid && f.driver_version == info.driver_version
            })
        else {
            return Self {
                path: path.to_path_buf(),
                file: fresh,
            };
        };
        // Each entry on its own: a damaged one (a scheme outside the bounds, a missing field) is
        // dropped, and the rest of the file kept.
        let entries = raw
            .entries
            .into_iter()
            .filter_map(|v| match serde_json::from_value::<Entry>(v) {
                Ok(e) => Some(e),
                Err(e) => {
                    log::warn!("{}: dropping an autotune entry: {e}", path.display());
                    None
                }
            })
            .collect();
        Self {
            path: path.to_path_buf(),
            file: TuneFile { entries, ..fresh },
        }
    }

    /// The remembered scheme for `key`, if any, checked again against the device: the file is
    /// untrusted input, and an entry that fails is ignored (and re-tuned by the caller).
    pub(crate) fn get(&self, key: &TuneKey, config: &GPUSubgroupMatrixConfig, info: &DeviceInfo) -> Option<TileScheme> {
        let scheme = self.file.entries.iter().find(|e| &e.key == key)?.scheme;
        match scheme.check_device(config, info) {
            Ok(()) => Some(scheme),
            Err(e) => {
                log::warn!("{}: re-tuning {key:?}: {e}", self.path.display());
                None
            }
        }
    }

    /// Remembers a winner and writes the file (through a temporary file and a rename, so a crash
    /// never leaves half a file).
    pub(crate) fn insert(&mut self, key: TuneKey, scheme: TileScheme, tflops: f64, problem: [usize; 3]) -> Result<()> {
        self.file.entries.retain(|e| e.key != key);
        self.file.entries.push(Entry {
            key,
            scheme,
            tflops,
            measured_on: problem,
        });
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let text = serde_json::to_vec_pretty(&self.file).expect("plain data serialises");
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}
