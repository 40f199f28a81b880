//! Progress of long sweeps (`bench`, `check`, `tune`): an indicatif bar with an ETA on a terminal;
//! plain lines (one per case, with elapsed time) when stdout is not a terminal or with `--json`,
//! so logs stay readable.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static PLAIN: AtomicBool = AtomicBool::new(false);

/// Plain lines instead of a bar (set for `--json`).
pub fn set_plain(plain: bool) {
    PLAIN.store(plain, Ordering::Relaxed);
}

/// One sweep's progress.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    total: u64,
    done: u64,
}

impl Progress {
    /// A sweep of `total` cases.
    pub fn new(total: usize) -> Self {
        let bar = (std::io::stdout().is_terminal() && !PLAIN.load(Ordering::Relaxed)).then(|| {
            let bar = ProgressBar::new(total as u64);
            let style =
                ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} {wide_msg} [{elapsed}, ETA {eta}]")
                    .expect("a valid template")
                    .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Self {
            bar,
            started: Instant::now(),
            total: total as u64,
            done: 0,
        }
    }

    /// Shows that `what` is starting (the bar's message; nothing in plain mode).
    pub fn start(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }

    /// One case done, with its outcome (a line above the bar, or a plain line).
    pub fn done(&mut self, line: &str) {
        self.done += 1;
        match &self.bar {
            Some(bar) => {
                if !line.is_empty() {
                    bar.println(line);
                }
                bar.inc(1);
            }
            None if !line.is_empty() => eprintln!(
                "[{:7.1} s] {}/{} {line}",
                self.started.elapsed().as_secs_f64(),
                self.done,
                self.total
            ),
            None => {}
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
