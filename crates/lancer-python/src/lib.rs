//! `lancer._lancer`: the native module behind the `lancer` Python package (issue #17).
//!
//! A thin layer: each function opens, reads, writes or searches through the `lancer`
//! crate and hands Arrow data across the Arrow C Data / C Stream interfaces
//! (`arrow-pyarrow`), so batches reach pyarrow without a copy and without per-row
//! Python objects. Rust work runs with the GIL released (`Python::detach`); scans
//! stream batch by batch and stop on Ctrl-C (a pending signal is checked between
//! batches). The pylance-shaped surface (keyword arguments, `LanceDataset`,
//! `LanceScanner`, pandas / `__arrow_c_stream__` inputs) is Python code in
//! `python/lancer/__init__.py`; this module keeps to plain values.
//!
//! Errors become Python exceptions carrying Lancer's message (see [`errors`]).

// PyO3's macros expand to `unsafe` blocks (the CPython ABI); Lancer's own code here
// writes one: `blobs::copy_out` fills new `bytes` objects from several threads.
#![allow(unsafe_code)]

mod batch;
mod blobs;
mod branches;
mod compaction;
mod computed;
mod dataset;
mod distributed;
mod errors;
mod evolve;
mod export;
mod ffi_provider;
mod file;
mod info;
mod introspect;
mod kmeans;
mod loader;
mod meta;
mod session;
mod sql;
mod transactions;
mod two_phase;

use pyo3::prelude::*;

/// mimalloc, as in the `lancer` CLI: decoded batches and pages reuse freed memory
/// instead of faulting fresh pages in (the Python suite's scans ran 1.3–1.6x the Rust
/// API's time with the C library's allocator). Memory handed to pyarrow is freed by
/// Rust (the Arrow release callbacks), so it never crosses allocators.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module.
#[pymodule]
fn _lancer(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<dataset::Dataset>()?;
    m.add_function(wrap_pyfunction!(dataset::write, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::cleanup, m)?)?;
    evolve::register(m)?;
    branches::register(m)?;
    meta::register(m)?;
    session::register(m)?;
    info::register(m)?;
    introspect::register(m)?;
    kmeans::register(m)?;
    batch::register(m)?;
    transactions::register(m)?;
    two_phase::register(m)?;
    compaction::register(m)?;
    computed::register(m)?;
    distributed::register(m)?;
    blobs::register(m)?;
    sql::register(m)?;
    ffi_provider::register(m)?;
    m.add_class::<file::PyFileReader>()?;
    m.add_class::<file::PyFileWriter>()?;
    m.add_class::<loader::Loader>()?;
    m.add_class::<loader::EpochReader>()?;
    m.add_function(wrap_pyfunction!(loader::discover_plan, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
