//! Integration tests of lancer-format (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod alloc;
mod corrupt;
mod coverage;
mod golden;
mod interop;
mod ipc;
mod legacy;
mod mutate;
mod random;
mod roundtrip;
mod shred;
mod v20_write;
mod v23;
