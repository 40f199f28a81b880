//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// Both storage orders of one matrix.
pub const LAYOUTS: [Layout; 2] = [Layout::RowMajor, Layout::ColMajor];

/// Every pair of storage orders of A and B (`nn`, `nt`, `tn`, `tt` as row/column-major).
pub const LAYOUT_PAIRS: [(Layout, Layout); 4] = [
    (Layout::RowMajor, Layout::RowMajor),
    (Layout::RowMajor, Layout::ColMajor),
    (Layout::ColMajor, Layout::RowMajor),
    (Layout::ColMajor, Layout::ColMajor),
];

/// spirv-val from the runner's sysroot (VK_SGMAT_SPIRV_VAL) or PATH; panics with a clear message
/// when neither exists, so a missing tool fails the test instead of skipping it.
pub fn spirv_tool(name: &str, env: &str) -> PathBuf {
    if let Ok(p) = std::env::var(env) {
        return PathBuf::from(p);
    }
    if Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return PathBuf::from(name);
    }
    panic!(
        "{name} not found: run the tests through cargo (the runner in .cargo/config.toml provisions \
         spirv-tools into target/lavapipe-sysroot), or install spirv-tools, or set {env}"
    );
}

/// Runs spirv-val on `words`; returns its complaint, if any.
pub fn spirv_val(words: &[u32], name: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("vk-sgmat-val-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run in parallel threads and may validate modules of one name: a file each.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{name}-{unique}.spv"));
    std::fs::write(&path, bytemuck::cast_slice(words)).unwrap();
    let out = Command::new(spirv_tool("spirv-val", "VK_SGMAT_SPIRV_VAL"))
        .args(["--target-env", "vulkan1.3"])
        .arg(&path)
        .output()
        .expect("spirv-val runs");
    let _ = std::fs::remove_file(&path);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Disassembles `words` with spirv-dis (no header comments, raw ids, for stable goldens).
pub fn spirv_dis(words: &[u32]) -> String {
    let dir = std::env::temp_dir().join(format!("vk-sgmat-dis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.spv");
    std::fs::write(&path, bytemuck::cast_slice(words)).unwrap();
    let out = Command::new(spirv_tool("spirv-dis", "VK_SGMAT_SPIRV_DIS"))
        .args(["--no-header", "--raw-id", "--no-color"])
        .arg(&path)
        .output()
        .expect("spirv-dis runs");
    assert!(
        out.status.success(),
        "spirv-dis failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

use crate::verify::{Check, Rng};
use std::sync::OnceLock;
use vk_sgmat::{Context, ContextOptions, Element, GemmOptions, Layout};

/// One context for every test in a binary (lavapipe compiles pipelines slowly: share them), with
/// the validation layer on and outputs poisoned. Fails, never skips, when no usable device exists.
pub fn context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let options = ContextOptions {
            validation: true,
            poison_outputs: true,
            ..Default::default()
        };
        Context::with_options(options).unwrap_or_else(|e| {
            panic!(
                "these tests need a Vulkan device with cooperative matrices and the Khronos validation layer: {e}\n\
                 Run them through cargo so the runner in .cargo/config.toml provisions lavapipe (Mesa >= 26.1)."
            )
        })
    })
}

/// A context like [`context`] whose allocation limit is cut to `max_allocation` bytes (the
/// limits override): host operands larger than that run in pieces, as operands over the H200's
/// 4 GiB maxMemoryAllocationSize do, and any buffer over it is refused.
pub fn capped_context(max_allocation: u64) -> Context {
    limited_context(|device| vk_sgmat::plan::DispatchLimits {
        max_allocation,
        ..device
    })
}

/// A context like [`context`] whose limits are `limits` of the device's (tighter: the limits
/// override).
pub fn limited_context(
    limits: impl FnOnce(vk_sgmat::plan::DispatchLimits) -> vk_sgmat::plan::DispatchLimits,
) -> Context {
    let device = vk_sgmat::plan::DispatchLimits::from_device(&context().device_info().limits);
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        limits_override: Some(limits(device)),
        ..Default::default()
    })
    .expect("a context with tighter limits")
}

/// `len` integers in -2..=2: products of them sum exactly in every type, so results compare
/// element by element with an f64 reference.
pub fn ints<T: Element>(rng: &mut Rng, len: usize) -> Vec<T> {
    (0..len)
        .map(|_| T::from_f64((rng.next_u64() % 5) as f64 - 2.0))
        .collect()
}

/// Fails, naming what the test exercises, where the device has no matrix units (no
/// cooperative-matrix config, as lavapipe at `LP_NATIVE_VECTOR_WIDTH=128` or `512`). Such tests
/// end in `_on_matrix_units`, so the CI tier without matrix units skips them by name.
pub fn require_matrix_units(ctx: &Context, what: &str) {
    assert!(
        !ctx.configs().is_empty(),
        "this test exercises {what} on the matrix units, and {} offers no cooperative-matrix config; \
         the tier without them skips the tests named *_on_matrix_units",
        ctx.device_info().name
    );
}

/// Asserts that the validation layer has reported nothing so far.
pub fn assert_no_validation_messages(ctx: &Context) {
    assert!(ctx.validation_enabled(), "validation layer must be on in tests");
    let msgs = ctx.validation_messages().messages();
    assert!(
        msgs.is_empty(),
        "{} validation messages:\n{}",
        msgs.len(),
        msgs.join("\n")
    );
}

/// A random GEMM on `ctx`, every row checked against the f64 reference.
pub fn run_case<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    rng: &mut Rng,
    shape: (usize, usize, usize),
    layouts: (Layout, Layout),
    extra_ld: usize,
    options: &GemmOptions,
) -> Check {
    crate::verify::run_random_gemm::<TA, TB, TC>(ctx, rng, shape, layouts, extra_ld, options, usize::MAX)
        .unwrap_or_else(|e| panic!("gemm {shape:?} {layouts:?}: {e}"))
}
