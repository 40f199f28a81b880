//! The `vk-sgmat` command: `info`, `gemm`, `bench`, `tune`, `peak`, `runtime`, `check`.

mod args;
mod batched;
mod bench_cmd;
mod chart;
mod check;
mod check_quant;
mod checking;
mod cli;
mod first_runs;
mod fused;
mod gemm_cmd;
mod grouped;
mod models;
mod multi;
mod multi_trace;
mod progress;
mod quantized;
mod report;
mod run;
mod runtime;
mod terms;
mod timing;
mod types;
#[path = "../../../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use clap::Parser;
use std::process::ExitCode;

/// Prints the library's warnings (e.g. a damaged autotune entry being dropped) to stderr.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!(
                "vk-sgmat: {}: {}",
                record.level().as_str().to_lowercase(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

fn main() -> ExitCode {
    // Started as a compiling helper by a context of this binary (or any program's): compile, exit.
    vk_sgmat::serve_helper_if_asked();
    // Only fails if a logger is already set, which nothing here does.
    let _ = log::set_logger(&StderrLogger).map(|()| log::set_max_level(log::LevelFilter::Warn));
    let cli = cli::Cli::parse();
    match run::run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("vk-sgmat: {e:#}");
            ExitCode::from(2)
        }
    }
}
