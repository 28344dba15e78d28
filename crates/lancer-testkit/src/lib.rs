//! Test support shared by Lancer's crates: a dev-dependency only, never published.
//!
//! - [`TempDir`]: a fresh directory removed when dropped, also when the test fails
//!   (`LANCER_KEEP_TEMP=1` keeps them for a look, printing where they are);
//!   [`copy_dir`] copies a fixture into one.
//! - [`oracle`]: the repository root, the pylance venvs `scripts/setup-python.sh`
//!   installs, the live fixture directories `scripts/test.sh` exports, and running a
//!   Python script or snippet that must succeed (its stdout back, its stderr in the
//!   failure message). Without a venv a test is skipped; with `LANCER_REQUIRE_PYLANCE`
//!   set (as under `scripts/test.sh`) a missing one is a failure.
//! - [`process`]: running a command that must succeed, or fail with a given exit code,
//!   with a message naming the command, its status and its output; [`Cli`] does that
//!   for one binary (the CLI's tests hand it `env!("CARGO_BIN_EXE_lancer")`).
//! - [`arrow`]: Arrow IPC files and streams as one batch.
//!
//! It depends on no Lancer crate, so every crate's tests can use it without building
//! the layers above the crate under test. A test fails by panicking: the kit's helpers
//! do too, with a message that says what went wrong.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub mod arrow;
mod dir;
pub mod oracle;
pub mod process;

pub use dir::{copy_dir, TempDir};
pub use oracle::{pylance, repo};
pub use process::{run_fails, run_ok, stdout, Cli};
