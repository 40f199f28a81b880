//! The autotuner's memory: the fastest tile scheme per (config, layouts, shape bucket), in a JSON
//! file keyed by the device's UUID and driver version. A file for another device or driver, or
//! one that does not parse, is ignored and replaced on the next save; an entry whose scheme no
//! longer passes [`TileScheme::check`] is ignored. The timing itself is
//! `Context`'s (it owns the buffers and pipelines).

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
        let file = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<TuneFile>(&bytes).ok())
            .filter(|f| {
                f.format == FORMAT && f.device_uuid == info.device_uuid && f.driver_version == info.driver_version
            })
            .unwrap_or(fresh);
        Self {
            path: path.to_path_buf(),
            file,
        }
    }

    /// The remembered scheme for `key`, if any.
    pub(crate) fn get(&self, key: &TuneKey) -> Option<TileScheme> {
        self.file.entries.iter().find(|e| &e.key == key).map(|e| e.scheme)
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
