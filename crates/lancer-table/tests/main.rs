//! Integration tests of lancer-table (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../lancer-format/tests/alloc.rs"]
mod alloc;
mod branches;
mod common;
mod concurrency;
mod config;
mod golden;
mod hostile;
mod legacy;
mod mixed;
#[path = "../../lancer-format/tests/mutate.rs"]
mod mutate;
mod mutations;
mod write;
