//! The library half of the `lancer` CLI: what its commands share with tests — the
//! hardened readers of `lancer import` inputs.

pub mod input;
pub mod parquet_par;
