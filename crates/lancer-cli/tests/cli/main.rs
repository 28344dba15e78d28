//! The `lancer` binary, one module per command (one test binary): on golden files
//! and datasets pylance wrote and read, its output equals pylance's; errors are one
//! line with a non-zero exit code; concurrent and killed writers lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;

mod blob;
mod branch;
mod cat;
mod concurrency;
mod global;
mod import_export;
mod index;
mod inspect;
mod meta;
mod search;
#[cfg(feature = "sql")]
mod sql;
mod verify;

use std::path::PathBuf;

use lancer_testkit::arrow::read_file as arrow_file;
use lancer_testkit::{copy_dir, repo};

use common::json_of;

/// A golden file pylance 14 wrote (tests/data/files).
fn golden(name: &str) -> PathBuf {
    repo().join("tests/data/files/pylance-14").join(name)
}

/// The golden datasets (tests/data/datasets).
fn datasets() -> PathBuf {
    repo().join("tests/data/datasets")
}
