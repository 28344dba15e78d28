//! `lancer`: inspect, read and demo Lance data.
//!
//! Exit codes: 0 success, 1 the operation failed (bad or unreadable data), 2 bad
//! command-line usage (printed by the argument parser).

mod args;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lancer: error: {e}");
            ExitCode::from(1)
        }
    }
}
