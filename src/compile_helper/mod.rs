//! Pipelines compiled in a helper process ([`PipelineCompiler::Helper`]).
//!
//! NVIDIA's driver runs a compute pipeline compiled in the process that runs it 4-5x slower for
//! its first 100-500 dispatches (hundreds of milliseconds of a first process); the same pipeline
//! created from cache data that another process compiled nearly always runs at full speed from
//! its first dispatch. Re-creating it in the compiling process, from any cache or on a second
//! device, does not help (docs/perf/JOURNAL.md, "First process", "Compiled by a helper
//! process"). So the compiling is done by a process of its own: the context sends the SPIR-V of
//! the pipelines a preparation lacks, the helper compiles them on the same GPU and answers with
//! its pipeline cache, and the context creates the pipelines from that cache.
//!
//! The helper is a program started with [`HELPER_ARG`] that serves one request on its
//! standard input and output ([`protocol`]) and exits: the `vk-sgmat` binary, or any program
//! whose `main` first calls [`serve_helper_if_asked`]. The context creates the pipelines only
//! once the helper has exited: on NVIDIA's driver, pipelines from a helper still alive ran as
//! slowly at first as pipelines compiled in the process ([`process`]). A helper that cannot
//! start, fails, hangs or answers for another device only costs the in-process compile it was
//! meant to replace.

use crate::device::DeviceInfo;
use ash::vk;
use std::ffi::OsString;
use std::path::PathBuf;

mod process;
mod protocol;
mod serve;

pub(crate) use process::Helpers;

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
    /// by a helper that has exited does not. Each preparation that lacks pipelines starts a
    /// helper (a few hundred milliseconds on NVIDIA's driver). A helper that fails makes the
    /// context compile in this process, that preparation and every later one
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

/// What the helper did for a context so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompileReport {
    /// Pipelines a helper compiled, whose cache data this context then created them from.
    pub from_helper: usize,
    /// Pipelines the driver created from the pipeline cache without compiling them (from the
    /// cache file or a helper), as its creation feedback says (0 where it says nothing).
    pub from_cache: usize,
    /// Helper processes started (one per preparation that lacked pipelines).
    pub helpers_started: usize,
    /// Requests to a helper that failed: the first failure makes the context compile in its
    /// own process from then on (so this is 0 or 1).
    pub failures: usize,
    /// Why the last failed run failed.
    pub last_failure: Option<String>,
    /// Pipelines this process compiled itself: created where the driver's creation feedback
    /// reported no pipeline cache hit (every pipeline created, on a driver that reports none).
    pub compiled_here: usize,
    /// Wall time spent creating those pipelines, summed over threads.
    pub compile_time: std::time::Duration,
    /// The longest of those creations: the least a preparation compiling them on parallel
    /// threads can take.
    pub longest_compile: std::time::Duration,
}

/// One pipeline to compile: its SPIR-V, and the subgroup size it pins (`None`: any).
pub(crate) struct Source {
    pub words: Vec<u32>,
    pub subgroup_size: Option<u32>,
}

/// If this process was started as a compiling helper (first argument [`HELPER_ARG`]), serves
/// its context's request, then exits; otherwise returns at once. Call it first thing in `main`
/// of a program that names itself in [`PipelineCompiler::Helper`].
pub fn serve_helper_if_asked() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != HELPER_ARG) {
        return;
    }
    if args.len() != 2 {
        eprintln!("vk-sgmat compile helper: usage: PROGRAM {HELPER_ARG} (a request on standard input)");
        std::process::exit(2);
    }
    match serve::serve() {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("vk-sgmat compile helper: {e}");
            std::process::exit(1);
        }
    }
}
