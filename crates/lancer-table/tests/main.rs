//! Integration tests of lancer-table (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod concurrency;
mod golden;
mod hostile;
mod legacy;
mod mixed;
mod write;
