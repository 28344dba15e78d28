//! `lancer`: inspect, read and demo Lance data.
//!
//! Exit codes: 0 success, 1 the operation failed (bad or unreadable data), 2 bad
//! command-line usage (printed by the argument parser) or a bad filter / column name.

mod args;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the C library's allocator: decoded batches and encoded pages are
/// large, short-lived buffers, which glibc unmaps on free and faults in afresh (zeroed)
/// on the next allocation — measured at ~30% of an import's time (`bench/RESULTS.md`).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lancer: error: {e}");
            // A bad filter or column name is a usage error.
            let usage = matches!(
                e.downcast_ref::<lancer::Error>(),
                Some(lancer::Error::Filter { .. } | lancer::Error::InvalidArgument { .. })
            );
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}
