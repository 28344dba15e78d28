//! `_lancer.Loader` / `_lancer.EpochReader`: the training-data loader
//! (`lancer-loader`) for Python — discovery returns the pinned plan as JSON, a reader
//! yields `pyarrow.RecordBatch`es with the GIL released while blocks are read, and its
//! state (epoch, block, offset, rows) resumes it exactly.

use std::sync::Mutex;

use lancer_loader::{discover, Epoch, Options, Pin, Plan, Shuffle, State, Tail};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;
use crate::export::PyBatch;

type Storage = Option<std::collections::BTreeMap<String, String>>;

fn loader_err(e: lancer_loader::LoaderError) -> PyErr {
    match e {
        lancer_loader::LoaderError::Table(t) => errors::table(t),
        lancer_loader::LoaderError::Lancer(l) => errors::lancer(l),
        lancer_loader::LoaderError::Arrow(a) => errors::arrow(a),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Discovers `uri` (latest, a version or a tag): `(plan_json, requests)`.
#[pyfunction]
#[pyo3(signature = (uri, version=None, tag=None, storage_options=None))]
pub fn discover_plan(
    py: Python<'_>,
    uri: String,
    version: Option<u64>,
    tag: Option<String>,
    storage_options: Storage,
) -> PyResult<(String, u64)> {
    let pin = match (version, tag) {
        (Some(v), _) => Pin::Version(v),
        (None, Some(t)) => Pin::Tag(t),
        (None, None) => Pin::Latest,
    };
    let opts = storage_options.unwrap_or_default();
    py.detach(|| {
        let d = discover(&uri, &pin, &opts).map_err(|e| match e {
            lancer_loader::LoaderError::Table(t) => errors::open(&uri, t),
            other => loader_err(other),
        })?;
        Ok((d.plan.to_json(), d.requests))
    })
}

/// A loader for one rank's worker over a pinned plan.
#[pyclass(module = "lancer._lancer", frozen)]
pub struct Loader {
    inner: lancer_loader::Loader,
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (plan_json, rank=0, world_size=1, worker=0, num_workers=1, columns=None,
                        filter=None, batch_size=1024, shuffle="none", buffer=65536, seed=0,
                        tail="keep", cache_entries=256, prefetch=true, storage_options=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        plan_json: &str,
        rank: u64,
        world_size: u64,
        worker: u64,
        num_workers: u64,
        columns: Option<Vec<String>>,
        filter: Option<String>,
        batch_size: usize,
        shuffle: &str,
        buffer: usize,
        seed: u64,
        tail: &str,
        cache_entries: usize,
        prefetch: bool,
        storage_options: Storage,
    ) -> PyResult<Loader> {
        let plan = Plan::from_json(plan_json).map_err(loader_err)?;
        let shuffle = match shuffle {
            "none" => Shuffle::None,
            "buffer" => Shuffle::Buffer { buffer },
            "global" => Shuffle::Global,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown shuffle {other:?}: none, buffer or global"
                )))
            }
        };
        let tail = match tail {
            "keep" => Tail::Keep,
            "drop_last" => Tail::DropLast,
            "pad" => Tail::Pad,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown tail {other:?}: keep, drop_last or pad"
                )))
            }
        };
        let opts = Options {
            rank,
            world_size,
            worker,
            num_workers,
            columns,
            filter,
            batch_size,
            shuffle,
            seed,
            tail,
            cache_entries,
            prefetch,
        };
        let storage = storage_options.unwrap_or_default();
        let inner = py
            .detach(|| lancer_loader::Loader::new(plan, opts, &storage))
            .map_err(loader_err)?;
        Ok(Loader { inner })
    }

    /// Rows (before any filter) this reader gets in `epoch`.
    fn rows_in_epoch(&self, epoch: u64) -> u64 {
        self.inner.rows_in_epoch(epoch)
    }

    /// A reader of `epoch` from `(block, offset)` (0, 0: its start).
    #[pyo3(signature = (epoch, block=0, offset=0, rows=0))]
    fn read(&self, epoch: u64, block: u64, offset: u64, rows: u64) -> EpochReader {
        let e = self.inner.resume(State {
            epoch,
            block,
            offset,
            rows,
        });
        EpochReader {
            inner: Mutex::new(e),
        }
    }
}

/// One epoch's batches (an iterator of `pyarrow.RecordBatch`).
#[pyclass(module = "lancer._lancer", frozen)]
pub struct EpochReader {
    inner: Mutex<Epoch>,
}

#[pymethods]
impl EpochReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyBatch>> {
        let got = py.detach(|| {
            let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            e.next()
        });
        match got {
            None => Ok(None),
            Some(Ok(b)) => Ok(Some(PyBatch(b))),
            Some(Err(e)) => Err(loader_err(e)),
        }
    }

    /// `(epoch, block, offset, rows)`: where the reader is (pass it back to `read`).
    fn state(&self) -> (u64, u64, u64, u64) {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner()).state();
        (s.epoch, s.block, s.offset, s.rows)
    }
}
