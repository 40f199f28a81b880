//! The pipeline cache on disk: where it lives (by default one file per device and driver in the
//! user's cache directory), and the envelope that lets a damaged or foreign file be told apart
//! from a good one before any byte of it reaches the driver. Files are untrusted input.

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a [`Context`](crate::Context) keeps its Vulkan pipeline cache between processes, so a
/// second process on the same machine compiles nothing it compiled before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PipelineCacheFile {
    /// Default: a file per device and driver version in the user's cache directory
    /// (`$XDG_CACHE_HOME/vk-sgmat`, else `$HOME/.cache/vk-sgmat`; none where neither is set).
    #[default]
    UserCache,
    /// A file per device and driver version in this directory.
    In(PathBuf),
    /// Exactly this file (one device's: a file of another device or driver is ignored and
    /// replaced).
    File(PathBuf),
    /// No file: every process compiles its pipelines.
    Off,
}

impl PipelineCacheFile {
    /// The file for `device`, if any.
    pub fn path_for(&self, device: &DeviceInfo) -> Option<PathBuf> {
        let name = || file_name(device);
        match self {
            PipelineCacheFile::UserCache => {
                user_cache_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")).map(|d| d.join(name()))
            }
            PipelineCacheFile::In(dir) => Some(dir.join(name())),
            PipelineCacheFile::File(path) => Some(path.clone()),
            PipelineCacheFile::Off => None,
        }
    }
}

impl PipelineCacheFile {
    /// The file the driver self-test keeps its verdicts in for `device`, beside the pipeline
    /// cache's (none where that is `Off`).
    pub fn self_test_path_for(&self, device: &DeviceInfo) -> Option<PathBuf> {
        let path = self.path_for(device)?;
        Some(match self {
            PipelineCacheFile::File(p) => p.with_extension("selftest"),
            _ => path.with_file_name(format!(
                "selftest-{}-{:08x}.verdicts",
                device.device_uuid, device.driver_version
            )),
        })
    }
}

/// `vk-sgmat` under the XDG cache directory, else under `~/.cache` (relative paths, which the
/// XDG specification says to ignore, are ignored).
fn user_cache_dir(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg_cache_home)
        .or_else(|| absolute(home).map(|h| h.join(".cache")))
        .map(|d| d.join("vk-sgmat"))
}

/// One device and driver's file name: its UUID and driver version.
fn file_name(device: &DeviceInfo) -> String {
    format!("pipelines-{}-{:08x}.bin", device.device_uuid, device.driver_version)
}

/// The envelope's first bytes.
const MAGIC: &[u8; 8] = b"VKSGPC01";
/// Magic, payload length (u64) and FNV-1a hash of the payload (u64), little-endian.
const ENVELOPE: usize = 24;

/// FNV-1a, 64-bit: enough to catch truncation and damage (not an adversary's forgery: the
/// driver's own header check and validation come after it).
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `data` in the envelope.
pub(crate) fn seal(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENVELOPE + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a(data).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// The payload of a sealed file, if it is whole and undamaged.
pub(crate) fn open(file: &[u8]) -> Option<&[u8]> {
    let (head, data) = (file.get(..ENVELOPE)?, &file[ENVELOPE..]);
    let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    (head[..8] == MAGIC[..] && word(8) == data.len() as u64 && word(16) == fnv1a(data)).then_some(data)
}

/// Whether `data` starts with a Vulkan pipeline-cache header of this device
/// (`VkPipelineCacheHeaderVersionOne`): length, version, vendor, device and cache UUID.
pub(crate) fn fits_device(data: &[u8], device: &DeviceInfo) -> bool {
    let word = |i: usize| {
        data.get(i * 4..i * 4 + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let uuid: Option<String> = data.get(16..32).map(|u| u.iter().map(|b| format!("{b:02x}")).collect());
    word(0).is_some_and(|len| len >= 32 && len as usize <= data.len())
        && word(1) == Some(vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32)
        && word(2) == Some(device.vendor_id)
        && word(3) == Some(device.device_id)
        && uuid.as_deref() == Some(device.pipeline_cache_uuid.as_str())
}

/// The cache data of `path` for `device`, or nothing: a missing, damaged, truncated or foreign
/// file is ignored (and replaced at the next save), never handed to the driver.
pub(crate) fn read(path: &Path, device: &DeviceInfo) -> Option<Vec<u8>> {
    read_sealed(path).filter(|data| fits_device(data, device))
}

/// The payload of the sealed file at `path`, if it is there, whole and undamaged.
pub(crate) fn read_sealed(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::read(path).ok()?;
    open(&file).map(<[u8]>::to_vec)
}

/// Writes `data` sealed to `path`: into a file of this write's own first (process id and a
/// counter: contexts of one process save too), then renamed over `path`, so a reader never sees
/// a partial file and two writers never write one file.
pub(crate) fn write(path: &Path, data: &[u8]) -> Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, seal(data)).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_cache_directory_follows_xdg_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            user_cache_dir(os("/x/cache"), os("/home/u")),
            Some(PathBuf::from("/x/cache/vk-sgmat"))
        );
        assert_eq!(
            user_cache_dir(None, os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/vk-sgmat"))
        );
        assert_eq!(
            user_cache_dir(os("rel"), os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/vk-sgmat"))
        );
        assert_eq!(user_cache_dir(None, os("")), None);
        assert_eq!(user_cache_dir(None, None), None);
    }

    #[test]
    fn the_envelope_rejects_every_damage() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let sealed = seal(&data);
        assert_eq!(open(&sealed), Some(&data[..]));
        for cut in [0, 7, ENVELOPE - 1, ENVELOPE, sealed.len() - 1] {
            assert_eq!(open(&sealed[..cut]), None, "truncated to {cut}");
        }
        for at in [0, 9, 17, ENVELOPE, sealed.len() - 1] {
            let mut bad = sealed.clone();
            bad[at] ^= 0x10;
            assert_eq!(open(&bad), None, "byte {at} flipped");
        }
        let mut longer = sealed.clone();
        longer.push(0);
        assert_eq!(open(&longer), None, "a byte appended");
        assert_eq!(open(&seal(&[])), Some(&[][..]));
    }
}
