//! Integration tests of lancer-format (one test binary).

mod alloc;
mod corrupt;
mod coverage;
mod golden;
mod shred;
