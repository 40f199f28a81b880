//! The context's side: a helper process per preparation that lacks pipelines, sent one request
//! and waited for until it has exited, before the context creates the pipelines from its
//! answer. On NVIDIA's driver the exit is what counts: helpers kept alive between
//! preparations, their pipelines destroyed before they answered, left the context's pipelines
//! as slow at first as pipelines compiled in the process (docs/perf/JOURNAL.md, "Compiled by a
//! helper process": the large two of a Llama layer's GEMMs 3.8-5.0x their steady time in 8 of 8
//! with kept helpers, 1.01-1.02 in 4 of 4 with helpers that had exited).

use super::protocol::{encode, read_frame, write_frame};
use super::{HelperCommand, Source, HELPER_ARG};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a helper may take to answer before it counts as hung: generous, since one int8
/// pipeline takes NVIDIA's compiler 15-20 s.
const ANSWER_LIMIT: Duration = Duration::from_secs(300);
/// How long a helper that answered may take to exit (its driver and device torn down).
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// How long a helper that failed may take to exit on its own before it is killed.
const FAILED_EXIT_LIMIT: Duration = Duration::from_secs(1);

/// A context's helpers: the command that starts one, how many were started, and whether one
/// failed.
pub(crate) struct Helpers {
    command: HelperCommand,
    started: AtomicUsize,
    /// Set by a helper's failure: from then on this context compiles in its own process, so a
    /// helper that hangs or crashes costs one preparation its time, not every one.
    given_up: AtomicBool,
}

impl Helpers {
    pub(crate) fn new(command: HelperCommand) -> Self {
        Self {
            command,
            started: AtomicUsize::new(0),
            given_up: AtomicBool::new(false),
        }
    }

    /// How many helper processes were started so far.
    pub(crate) fn started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// Whether no helper failed yet (after one did, the context compiles in its own process).
    pub(crate) fn usable(&self) -> bool {
        !self.given_up.load(Ordering::Acquire)
    }

    /// Compiles `sources` for `device` in a new helper; returns the pipeline cache data it
    /// answered, checked to be whole and this device's, once the helper has exited. A failure
    /// stops the helper and gives helpers up for this context.
    pub(crate) fn compile(&self, device: &DeviceInfo, sources: &[Source]) -> Result<Vec<u8>> {
        let answer = self.compile_once(device, sources);
        if answer.is_err() {
            self.given_up.store(true, Ordering::Release);
        }
        answer
    }

    fn compile_once(&self, device: &DeviceInfo, sources: &[Source]) -> Result<Vec<u8>> {
        self.started.fetch_add(1, Ordering::Relaxed);
        let mut helper = Helper::start(&self.command)?;
        let data = helper.ask(&encode(&device.device_uuid, sources))?;
        if !crate::pipeline_file::fits_device(&data, device) {
            return Err(helper.failed("answered with no pipeline cache of this device"));
        }
        helper.exited()?;
        Ok(data)
    }
}

/// One helper process: its input, its answers (read by a thread of their own, so a wait for
/// one can time out) and the file its messages go to.
struct Helper {
    program: PathBuf,
    child: Child,
    input: Option<ChildStdin>,
    answers: Receiver<Result<Option<Vec<u8>>>>,
    log: PathBuf,
}

impl Helper {
    fn start(command: &HelperCommand) -> Result<Self> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let log = std::env::temp_dir().join(format!(
            "vk-sgmat-helper-{}-{}.log",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |path: &PathBuf| {
            let path = path.clone();
            move |source| Error::Io { path, source }
        };
        let log_file = std::fs::File::create(&log).map_err(io(&log))?;
        let spawned = Command::new(&command.program)
            .args(&command.args)
            .arg(HELPER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_file(&log);
                return Err(io(&command.program)(e));
            }
        };
        let (input, output) = (child.stdin.take(), child.stdout.take());
        let (send, answers) = std::sync::mpsc::channel();
        if let Some(mut output) = output {
            std::thread::spawn(move || loop {
                let frame = read_frame(&mut output);
                let more = matches!(frame, Ok(Some(_)));
                if send.send(frame).is_err() || !more {
                    break;
                }
            });
        }
        Ok(Self {
            program: command.program.clone(),
            child,
            input,
            answers,
            log,
        })
    }

    /// Sends one request and waits for its answer.
    fn ask(&mut self, request: &[u8]) -> Result<Vec<u8>> {
        let sent = match self.input.as_mut() {
            Some(input) => write_frame(input, request).map_err(|e| e.to_string()),
            None => Err("has no input".to_string()),
        };
        if let Err(e) = sent {
            return Err(self.failed(&format!("could not be sent the request ({e})")));
        }
        match self.answers.recv_timeout(ANSWER_LIMIT) {
            Ok(Ok(Some(data))) => Ok(data),
            Ok(Ok(None)) | Err(RecvTimeoutError::Disconnected) => Err(self.failed("ended without answering")),
            Ok(Err(e)) => Err(self.failed(&format!("answered wrongly ({e})"))),
            Err(RecvTimeoutError::Timeout) => {
                Err(self.failed(&format!("did not answer within {} s", ANSWER_LIMIT.as_secs())))
            }
        }
    }

    /// Waits until the helper, which answered, has exited (its input ends).
    fn exited(&mut self) -> Result<()> {
        match self.exit_within(EXIT_LIMIT) {
            Ok(Some(status)) if status.success() => Ok(()),
            Ok(Some(_)) => Err(self.failed("failed after answering")),
            Ok(None) => Err(self.failed(&format!("did not exit within {} s of answering", EXIT_LIMIT.as_secs()))),
            Err(e) => Err(self.failed(&format!("could not be waited for ({e})"))),
        }
    }

    /// Ends the helper's input and waits up to `limit` for it to exit on its own.
    fn exit_within(&mut self, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
        drop(self.input.take());
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait()? {
                Some(status) => return Ok(Some(status)),
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                None => return Ok(None),
            }
        }
    }

    /// Stops the helper and says what happened: `what`, its exit status and its messages. A
    /// helper whose output ended may not have been reaped yet: it is given a moment to exit on
    /// its own first, so the status says how it ended rather than that it was killed (a CI
    /// machine saw `/bin/false` reported as killed).
    fn failed(&mut self, what: &str) -> Error {
        if !matches!(self.exit_within(FAILED_EXIT_LIMIT), Ok(Some(_))) {
            let _ = self.child.kill();
        }
        let status = self.child.wait().map_or_else(|e| e.to_string(), |s| s.to_string());
        let said = std::fs::read_to_string(&self.log).unwrap_or_default();
        Error::Unsupported(format!(
            "compile helper {} {what} ({status}){}{}",
            self.program.display(),
            if said.trim().is_empty() { "" } else { ": " },
            said.trim()
        ))
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        drop(self.input.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}
