//! The self-test's verdicts on disk, beside the pipeline cache: one file per device and driver,
//! in the pipeline cache's sealed envelope, a text payload whose first line names the crate
//! version, a digest of the library's sources, and the device and driver it holds for. Files are untrusted input: a damaged, foreign or
//! malformed file is ignored as a whole (every kernel is then tested again and the file
//! rewritten); a verdict only ever skips a test or drops a configuration, never changes a plan
//! otherwise.

use super::Verdict;
use crate::device::DeviceInfo;
use crate::pipeline_file::{read_sealed, write};
use std::collections::BTreeMap;
use std::path::Path;

/// Files larger than this are not read (a few hundred kernels take tens of kilobytes).
const MAX_BYTES: u64 = 4 << 20;

/// The payload's first line: what the verdicts hold for. Another crate version or changed
/// library sources (a digest of them, made by the build script) test again, as does another
/// driver build.
pub(super) fn header(device: &DeviceInfo) -> String {
    format!(
        "vk-sgmat self-test 1\t{}+{}\t{}\t{:08x}\t{}\t{}",
        env!("CARGO_PKG_VERSION"),
        env!("VK_SGMAT_SOURCE_DIGEST"),
        device.device_uuid,
        device.driver_version,
        one_field(&device.driver_name),
        one_field(&device.driver_info)
    )
}

/// `s` with the characters that separate fields and lines replaced.
pub(super) fn one_field(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// The verdicts of `path`, by kernel name; `None` where the file is missing, damaged, another
/// device's or driver's, or not exactly in this format.
pub(super) fn read(path: &Path, header: &str) -> Option<BTreeMap<String, Verdict>> {
    if std::fs::metadata(path).ok()?.len() > MAX_BYTES {
        return None;
    }
    let data = read_sealed(path)?;
    parse(std::str::from_utf8(&data).ok()?, header)
}

/// The verdicts of a payload, all or nothing.
fn parse(text: &str, header: &str) -> Option<BTreeMap<String, Verdict>> {
    let mut lines = text.lines();
    if lines.next()? != header {
        return None;
    }
    let mut out = BTreeMap::new();
    for line in lines {
        let fields: Vec<&str> = line.split('\t').collect();
        let (name, verdict) = match fields[..] {
            ["pass", name] => (name, Verdict::Passed),
            ["fail", name, config, reason] => (
                name,
                Verdict::Failed {
                    config: config.to_string(),
                    reason: reason.to_string(),
                },
            ),
            _ => return None,
        };
        if name.is_empty() || out.insert(name.to_string(), verdict).is_some() {
            return None;
        }
    }
    Some(out)
}

/// The payload for `verdicts`.
fn payload(header: &str, verdicts: &BTreeMap<String, Verdict>) -> String {
    let mut out = String::from(header);
    for (name, verdict) in verdicts {
        out.push('\n');
        match verdict {
            Verdict::Passed => out += &format!("pass\t{name}"),
            Verdict::Failed { config, reason } => out += &format!("fail\t{name}\t{config}\t{reason}"),
        }
    }
    out
}

/// Writes `verdicts` to `path` atomically (a reader never sees a partial file).
pub(super) fn save(path: &Path, header: &str, verdicts: &BTreeMap<String, Verdict>) -> crate::error::Result<()> {
    write(path, payload(header, verdicts).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts() -> BTreeMap<String, Verdict> {
        let mut v = BTreeMap::new();
        v.insert("gemm_a".to_string(), Verdict::Passed);
        v.insert(
            "gemm_b".to_string(),
            Verdict::Failed {
                config: "16x16x16 f16->f32".into(),
                reason: "C[0][0] = 0 where 3 is exact".into(),
            },
        );
        v
    }

    #[test]
    fn verdicts_read_back_as_written() {
        let text = payload("head", &verdicts());
        assert_eq!(parse(&text, "head"), Some(verdicts()));
        assert_eq!(parse("head", "head"), Some(BTreeMap::new()));
    }

    #[test]
    fn a_file_of_another_header_or_a_malformed_line_is_ignored_whole() {
        let text = payload("head", &verdicts());
        assert_eq!(parse(&text, "other head"), None);
        for bad in [
            "head\npass",
            "head\npass\t",
            "head\npass\tx\ty",
            "head\nfail\tx\tconfig",
            "head\nok\tx",
            "head\npass\tx\npass\tx",
            "",
        ] {
            assert_eq!(parse(bad, "head"), None, "{bad:?}");
        }
    }

    #[test]
    fn fields_lose_their_separators() {
        assert_eq!(one_field("Mesa\t24.2\n(x)"), "Mesa 24.2 (x)");
    }

    #[test]
    fn a_damaged_file_on_disk_is_ignored_and_a_good_one_read() {
        let dir = std::env::temp_dir().join(format!("vk-sgmat-selftest-file-{}", std::process::id()));
        let path = dir.join("verdicts");
        save(&path, "head", &verdicts()).unwrap();
        assert_eq!(read(&path, "head"), Some(verdicts()));
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path, "head"), None);
        std::fs::write(&path, b"not a sealed file").unwrap();
        assert_eq!(read(&path, "head"), None);
        assert_eq!(read(&dir.join("missing"), "head"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
