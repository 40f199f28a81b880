//! A digest of the library's sources, for the self-test's verdicts kept on disk: they hold only
//! for the code that made and judged the kernels. The crate version alone stays the same when
//! the kernels change in a development build or a patched copy, and a kept "pass" would then
//! skip the test of a kernel it never ran.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    files.sort();
    // FNV-1a over each file's path and contents: a change detector, not a defence.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for path in files {
        let contents = std::fs::read(&path).unwrap_or_default();
        let name = path.to_string_lossy().into_owned().into_bytes();
        for b in name.into_iter().chain([0]).chain(contents) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=VK_SGMAT_SOURCE_DIGEST={h:016x}");
}

/// The `.rs` files under `dir`, the command line's (`src/bin`) left out: it makes no kernels.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            if path != Path::new("src/bin") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}
