//! The pipeline cache on disk: one file per device and driver in the chosen directory, written
//! after new pipelines and on drop, loaded by the next context; a damaged, truncated, foreign
//! or empty file is ignored (and replaced), never a failure or a wrong result; `Off` writes
//! nothing.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::ints;
use half::f16;
use std::path::{Path, PathBuf};
use vk_sgmat::Matmul;
use vk_sgmat::{Context, ContextOptions, GemmOptions, MatMut, MatRef, PipelineCacheFile};

/// A fresh directory of this test's own.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vk-sgmat-pc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn context_in(cache: PipelineCacheFile) -> Context {
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        pipeline_cache: cache,
        ..Default::default()
    })
    .expect("a context")
}

/// One exact GEMM (small integers), checked element by element.
fn exact_gemm(ctx: &Context, rng: &mut Rng) {
    let (m, n, k) = (19, 23, 17);
    let a: Vec<f16> = ints(rng, m * k);
    let b: Vec<f16> = ints(rng, k * n);
    let mut c = vec![f32::NAN; m * n];
    ctx.run(
        &Matmul::with_options(&GemmOptions::default()),
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p].to_f32() * b[p * n + j].to_f32()).sum();
            assert_eq!(c[i * n + j], want, "({i}, {j})");
        }
    }
    common::assert_no_validation_messages(ctx);
}

/// The file envelope (docs/runtime.md): magic, length and FNV-1a hash, then the data.
fn seal(data: &[u8]) -> Vec<u8> {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut out = b"VKSGPC01".to_vec();
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&hash.to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// The files in `d` but the driver self-test's verdicts, which live beside the pipeline cache
/// (tests/self_test.rs covers them); temporaries of either count.
fn files(d: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "verdicts"))
        .collect();
    out.sort();
    out
}

#[test]
fn a_second_context_loads_what_the_first_compiled() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let d = dir("reuse");
    let first = context_in(PipelineCacheFile::In(d.clone()));
    let (path, loaded) = first.pipeline_cache_file();
    let path = path.expect("a file in the directory").to_path_buf();
    assert_eq!(loaded, 0, "nothing to load in an empty directory");
    let info = first.device_info();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains(&info.device_uuid), "{name}: named by the device");
    assert!(
        name.contains(&format!("{:08x}", info.driver_version)),
        "{name}: and the driver"
    );
    exact_gemm(&first, &mut rng);
    assert!(path.exists(), "saved after the call that compiled pipelines");
    drop(first);
    assert_eq!(files(&d), vec![path.clone()], "one file, no temporary left behind");
    let second = context_in(PipelineCacheFile::In(d.clone()));
    assert!(second.pipeline_cache_file().1 > 0, "the second context loaded the file");
    exact_gemm(&second, &mut rng);
}

#[test]
fn damaged_truncated_foreign_and_empty_files_are_ignored_and_replaced() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let d = dir("damaged");
    let path = d.join("cache.bin");
    let good = {
        let ctx = context_in(PipelineCacheFile::File(path.clone()));
        exact_gemm(&ctx, &mut rng);
        drop(ctx);
        std::fs::read(&path).unwrap()
    };
    assert!(good.len() > 24, "a sealed cache");
    assert_eq!(seal(&good[24..]), good, "the envelope as documented");
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x55;
    // A whole, undamaged file whose Vulkan header names another vendor: sealed again.
    let mut payload = good[24..].to_vec();
    payload[8] ^= 0xff;
    let foreign_header = seal(&payload);
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    for (what, bytes) in [
        ("a flipped byte", flipped),
        ("a truncated file", good[..good.len() / 2].to_vec()),
        ("another device's header", foreign_header),
        ("garbage", garbage),
        ("an empty file", Vec::new()),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        let ctx = context_in(PipelineCacheFile::File(path.clone()));
        assert_eq!(ctx.pipeline_cache_file().1, 0, "{what}: loaded");
        exact_gemm(&ctx, &mut rng);
        drop(ctx);
        let ctx = context_in(PipelineCacheFile::File(path.clone()));
        assert!(ctx.pipeline_cache_file().1 > 0, "{what}: not replaced by a good file");
    }
}

/// `Off` keeps no file; a context that compiled nothing new leaves the file as it is.
#[test]
fn off_writes_nothing() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let ctx = context_in(PipelineCacheFile::Off);
    assert_eq!(ctx.pipeline_cache_file(), (None, 0));
    exact_gemm(&ctx, &mut rng);
    let d = dir("off");
    let in_dir = context_in(PipelineCacheFile::In(d.clone()));
    drop(in_dir);
    assert!(
        files(&d).is_empty(),
        "a context that compiled nothing wrote {:?}",
        files(&d)
    );
}

/// Contexts of one process (a multi-device handle on one GPU, say) save one file at once: no
/// call fails for it, no temporary file is left, and the file that stands is whole.
#[test]
fn contexts_of_one_process_save_one_file_together() {
    let d = dir("together");
    let seed = Rng::fresh_seed();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let d = d.clone();
            scope.spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1));
                for _ in 0..3 {
                    let ctx = context_in(PipelineCacheFile::In(d.clone()));
                    exact_gemm(&ctx, &mut rng);
                }
            });
        }
    });
    let left = files(&d);
    assert_eq!(left.len(), 1, "one file and no temporary: {left:?}");
    let ctx = context_in(PipelineCacheFile::In(d));
    assert!(ctx.pipeline_cache_file().1 > 0, "the file that stands is whole");
}

/// A cache file that cannot be written (its directory is a file) costs the GEMM nothing.
#[test]
fn an_unwritable_cache_never_fails_a_call() {
    let d = dir("unwritable");
    let blocker = d.join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let ctx = context_in(PipelineCacheFile::File(blocker.join("cache.bin")));
    exact_gemm(&ctx, &mut Rng::new(Rng::fresh_seed()));
    drop(ctx);
    assert_eq!(std::fs::read(&blocker).unwrap(), b"x");
}
