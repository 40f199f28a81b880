//! Pipelines compiled in a helper process ([`PipelineCompiler::Helper`]).
//!
//! NVIDIA's driver runs a compute pipeline compiled in the process that runs it 4-5x slower for
//! its first 100-500 dispatches (hundreds of milliseconds of a first process); the same pipeline
//! created from cache data that another process compiled is at full speed from its first
//! dispatch. Re-creating it in the compiling process, from any cache or on a second device, does
//! not help (docs/perf/JOURNAL.md, "First process"). So the compiling is done by a process of its
//! own: the context sends the SPIR-V of the pipelines a preparation lacks, the helper compiles
//! them on the same GPU and writes its pipeline cache, and the context creates the pipelines
//! from that cache.
//!
//! The helper is a program started with [`HELPER_ARG`], a request file and a result file: the
//! `vk-sgmat` binary, or any program whose `main` first calls [`serve_helper_if_asked`]. Both
//! files are sealed like the pipeline cache on disk, and each side checks what it reads; a
//! helper that fails, hangs or answers for another device only costs the in-process compile
//! it was meant to replace.

use crate::device::{Device, DeviceInfo, DeviceSelector, Instance, InstanceOptions};
use crate::error::{Error, Result};
use crate::pipeline::Pipelines;
use ash::vk;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where a [`Context`](crate::Context) compiles the pipelines it lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PipelineCompiler {
    /// Default: in this process, on a thread per pipeline.
    #[default]
    InProcess,
    /// In a process of this command, started with [`HELPER_ARG`] (see
    /// [`serve_helper_if_asked`]): the `vk-sgmat` binary, or your own program
    /// ([`HelperCommand::this_program`]). On NVIDIA's driver a pipeline compiled in the process
    /// that runs it runs several times slower for its first hundreds of dispatches; one compiled
    /// by a helper does not. A helper that fails falls back to compiling in this process
    /// ([`Context::compile_report`](crate::Context::compile_report) says why).
    Helper(HelperCommand),
    /// [`PipelineCompiler::Helper`] on NVIDIA's proprietary driver, where it was measured to
    /// help; in this process on every other driver (a helper's start costs tens of
    /// milliseconds, and none of them was seen to run fresh pipelines slowly).
    HelperOnNvidia(HelperCommand),
}

impl PipelineCompiler {
    /// The helper that compiles for `device`, if any.
    pub(crate) fn helper_for(&self, device: &DeviceInfo) -> Option<HelperCommand> {
        match self {
            PipelineCompiler::InProcess => None,
            PipelineCompiler::Helper(c) => Some(c.clone()),
            PipelineCompiler::HelperOnNvidia(c) => {
                (device.driver_id == vk::DriverId::NVIDIA_PROPRIETARY.as_raw()).then(|| c.clone())
            }
        }
    }
}

/// How to start a compiling helper: a program and the arguments before [`HELPER_ARG`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelperCommand {
    /// The program.
    pub program: PathBuf,
    /// Its first arguments (e.g. an interpreter's or loader's), before [`HELPER_ARG`].
    pub args: Vec<OsString>,
}

impl HelperCommand {
    /// `program`, started with no arguments before [`HELPER_ARG`].
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// The running program, started again (its `main` must call [`serve_helper_if_asked`]).
    /// Where it runs through an explicitly started dynamic loader (`ld-linux-*.so.2
    /// --library-path DIR PROGRAM`, as the repository's test runner starts binaries), the same
    /// loader with the loader's directory as the library path. `None` where the platform
    /// cannot name the running program.
    pub fn this_program() -> Option<Self> {
        let exe = std::env::current_exe().ok()?;
        if !exe.file_name()?.to_str()?.starts_with("ld-linux") {
            return Some(Self::new(exe));
        }
        let program = std::env::args_os().next()?;
        let dir = exe.parent()?.as_os_str().to_owned();
        Some(Self {
            args: vec!["--library-path".into(), dir, program],
            program: exe,
        })
    }
}

/// The first argument that makes a program a compiling helper.
pub const HELPER_ARG: &str = "--vk-sgmat-compile-helper";

/// How long a helper may take before it counts as hung: generous, since one int8 pipeline
/// takes NVIDIA's compiler 15-20 s.
const HELPER_LIMIT: Duration = Duration::from_secs(300);

/// The most pipelines and SPIR-V words one request may hold (a plan needs at most a handful).
const MAX_ENTRIES: usize = 1024;
const MAX_WORDS: usize = 1 << 24;

/// What the helper did for a context so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompileReport {
    /// Pipelines a helper compiled, whose cache data this context then created them from.
    pub from_helper: usize,
    /// Pipelines the driver created from the pipeline cache without compiling them (from the
    /// cache file or a helper), as its creation feedback says (0 where it says nothing).
    pub from_cache: usize,
    /// Helper runs that failed (their pipelines were compiled in this process).
    pub failures: usize,
    /// Why the last failed run failed.
    pub last_failure: Option<String>,
}

/// One pipeline to compile: its SPIR-V, and the subgroup size it pins (`None`: any).
pub(crate) struct Source {
    pub words: Vec<u32>,
    pub subgroup_size: Option<u32>,
}

/// If this process was started as a compiling helper (first argument [`HELPER_ARG`]), does the
/// compiling and exits; otherwise returns at once. Call it first thing in `main` of a program
/// that names itself in [`PipelineCompiler::Helper`].
pub fn serve_helper_if_asked() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != HELPER_ARG) {
        return;
    }
    let code = match (args.get(2), args.get(3), args.len()) {
        (Some(request), Some(result), 4) => match serve(Path::new(request), Path::new(result)) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("vk-sgmat compile helper: {e}");
                1
            }
        },
        _ => {
            eprintln!("vk-sgmat compile helper: usage: PROGRAM {HELPER_ARG} REQUEST RESULT");
            2
        }
    };
    std::process::exit(code);
}

/// The helper's work: opens the request's device, compiles every pipeline on a thread each with
/// the same layout and flags as a context's, and writes the pipeline cache to `result`.
fn serve(request: &Path, result: &Path) -> Result<()> {
    let payload = crate::pipeline_file::read_sealed(request)
        .ok_or_else(|| Error::InvalidOption(format!("request {}: missing, truncated or damaged", request.display())))?;
    let (uuid, sources) = decode(&payload)?;
    let instance = Instance::new(&InstanceOptions { validation: false })?;
    let index = instance
        .devices()?
        .iter()
        .position(|(_, info)| info.device_uuid == uuid)
        .ok_or_else(|| Error::InvalidOption(format!("no device with UUID {uuid}")))?;
    let device = Device::new(instance, &DeviceSelector::Index(index), 0, None)?;
    let pipelines = Pipelines::new(device, None, None, None)?;
    std::thread::scope(|s| {
        let each: Vec<_> = sources
            .iter()
            .map(|src| {
                s.spawn(|| pipelines.build_with(&src.words, src.subgroup_size, vk::PipelineCreateFlags::empty()))
            })
            .collect();
        each.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .map(drop)
        })
    })?;
    crate::pipeline_file::write(result, &pipelines.cache_data()?)
}

/// Compiles `sources` in a process of `helper` for `device`; returns the pipeline cache data
/// it wrote (checked to be whole and this device's).
pub(crate) fn compile(helper: &HelperCommand, device: &DeviceInfo, sources: &[Source]) -> Result<Vec<u8>> {
    let program = &helper.program;
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let stem = std::env::temp_dir().join(format!(
        "vk-sgmat-helper-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let files = Files([
        stem.with_extension("request"),
        stem.with_extension("result"),
        stem.with_extension("log"),
    ]);
    let [request, result, log] = &files.0;
    crate::pipeline_file::write(request, &encode(&device.device_uuid, sources))?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let log_file = std::fs::File::create(log).map_err(io(log))?;
    let mut child = Command::new(program)
        .args(&helper.args)
        .arg(HELPER_ARG)
        .arg(request)
        .arg(result)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(io(program))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io(program))? {
            break status;
        }
        if started.elapsed() > HELPER_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Unsupported(format!(
                "compile helper {} took over {} s",
                program.display(),
                HELPER_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if !status.success() {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        return Err(Error::Unsupported(format!(
            "compile helper {} failed ({status}): {}",
            program.display(),
            said.trim()
        )));
    }
    crate::pipeline_file::read(result, device).ok_or_else(|| {
        Error::Unsupported(format!(
            "compile helper {} wrote no pipeline cache of this device",
            program.display()
        ))
    })
}

/// Files removed when dropped, whatever happened.
struct Files([PathBuf; 3]);

impl Drop for Files {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// A request's payload: the device UUID (32 hex digits), the count of pipelines, then each
/// pipeline's pinned subgroup size (0: any), its count of words and its words, all u32
/// little-endian.
fn encode(uuid: &str, sources: &[Source]) -> Vec<u8> {
    let mut out = uuid.as_bytes().to_vec();
    let mut put = |w: u32| out.extend_from_slice(&w.to_le_bytes());
    put(sources.len() as u32);
    for s in sources {
        put(s.subgroup_size.unwrap_or(0));
        put(s.words.len() as u32);
        s.words.iter().for_each(|&w| put(w));
    }
    out
}

/// [`encode`]'s payload read back, every count and length checked against the bytes there are.
fn decode(payload: &[u8]) -> Result<(String, Vec<Source>)> {
    let bad = |what: &str| Error::InvalidOption(format!("compile request: {what}"));
    let uuid = payload
        .get(..32)
        .and_then(|u| std::str::from_utf8(u).ok())
        .filter(|u| u.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| bad("no device UUID"))?
        .to_string();
    let mut words = payload[32..]
        .chunks(4)
        .map(|c| c.try_into().map(u32::from_le_bytes).map_err(|_| bad("a partial word")));
    let mut next = |what: &str| words.next().unwrap_or_else(|| Err(bad(what)));
    let count = next("no count")? as usize;
    if count == 0 || count > MAX_ENTRIES {
        return Err(bad(&format!("{count} pipelines (1 to {MAX_ENTRIES})")));
    }
    let mut sources = Vec::with_capacity(count);
    for _ in 0..count {
        let subgroup_size = Some(next("no subgroup size")?).filter(|&s| s != 0);
        let len = next("no length")? as usize;
        if len == 0 || len > MAX_WORDS {
            return Err(bad(&format!("a module of {len} words (1 to {MAX_WORDS})")));
        }
        let words = (0..len).map(|_| next("a module cut short")).collect::<Result<_>>()?;
        sources.push(Source { words, subgroup_size });
    }
    if next("").is_ok() {
        return Err(bad("bytes after the last module"));
    }
    Ok((uuid, sources))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "0123456789abcdef0123456789abcdef";

    fn sources() -> Vec<Source> {
        vec![
            Source {
                words: vec![0x0723_0203, 7, 8],
                subgroup_size: Some(32),
            },
            Source {
                words: vec![0x0723_0203],
                subgroup_size: None,
            },
        ]
    }

    #[test]
    fn a_request_reads_back_as_written() {
        let (uuid, back) = decode(&encode(UUID, &sources())).unwrap();
        assert_eq!(uuid, UUID);
        assert_eq!(back.len(), 2);
        for (a, b) in back.iter().zip(sources()) {
            assert_eq!((&a.words, a.subgroup_size), (&b.words, b.subgroup_size));
        }
    }

    #[test]
    fn a_damaged_request_is_an_error() {
        let good = encode(UUID, &sources());
        for cut in [0, 31, 32, 35, 36, 44, good.len() - 4, good.len() - 1] {
            assert!(decode(&good[..cut]).is_err(), "cut to {cut} bytes");
        }
        let mut longer = good.clone();
        longer.extend_from_slice(&[0; 4]);
        assert!(decode(&longer).is_err(), "a word appended");
        let mut not_hex = good.clone();
        not_hex[3] = b'g';
        assert!(decode(&not_hex).is_err(), "a UUID that is not hex");
        let mut huge = good.clone();
        huge[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_err(), "a count beyond the bytes");
        let mut long_module = good;
        long_module[40..44].copy_from_slice(&(MAX_WORDS as u32 + 1).to_le_bytes());
        assert!(decode(&long_module).is_err(), "a module over the limit");
        assert!(decode(&encode(UUID, &[])).is_err(), "no pipelines");
    }
}
