//! The `vk-sgmat` command: `info`, `gemm`, `check`.

mod cli;
mod report;
mod run;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
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
