//! `lancer.Session`: the state datasets opened through it share (index and metadata
//! caches, request counters, warnings), as pylance's `lance.Session` is passed to
//! `dataset(session=)` / `write_dataset(session=)` and returned by
//! `LanceDataset.session()`. Over `lancer::Session`.

use pyo3::prelude::*;

use crate::dataset::Dataset;

/// Adds the class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    Ok(())
}

/// A session whose warnings become Python `UserWarning`s, with the settings pylance
/// reads from the environment (`LANCE_DEFAULT_BATCH_SIZE`).
pub(crate) fn python_session(builder: lancer::SessionBuilder) -> lancer::Session {
    builder
        .environment()
        .warnings(|message| {
            Python::attach(|py| {
                let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
                // a warnings filter set to "error" cannot raise from here: the warning
                // is then dropped (the session keeps it)
                let _ = PyErr::warn(
                    py,
                    &category,
                    &std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default(),
                    1,
                );
            })
        })
        .build()
}

/// State shared by the datasets opened through it.
#[pyclass(module = "lancer._lancer", name = "Session", frozen)]
pub struct PySession {
    pub(crate) inner: lancer::Session,
}

#[pymethods]
impl PySession {
    /// A new session; its caches hold `index_cache_entries` index segments and
    /// `metadata_cache_entries` metadata entries at most (the defaults when None).
    #[new]
    #[pyo3(signature = (index_cache_entries=None, metadata_cache_entries=None))]
    fn new(index_cache_entries: Option<usize>, metadata_cache_entries: Option<usize>) -> Self {
        let mut b = lancer::Session::builder();
        if let Some(n) = index_cache_entries {
            b = b.index_cache_entries(n);
        }
        if let Some(n) = metadata_cache_entries {
            b = b.metadata_cache_entries(n);
        }
        Self {
            inner: python_session(b),
        }
    }

    /// The session `ds` was opened in.
    #[staticmethod]
    fn of(ds: &Dataset) -> Self {
        Self {
            inner: lancer::Session::of(&ds.ds),
        }
    }

    /// Whether `other` shares this session's state.
    fn is_same_as(&self, other: &PySession) -> bool {
        self.inner.is_same_as(&other.inner)
    }

    /// The session's requests and bytes since it began: (reads — gets, heads and
    /// lists —, bytes read, writes — puts and deletes —, bytes written).
    fn io_totals(&self) -> (u64, u64, u64, u64) {
        let s = self.inner.stats();
        (
            s.gets + s.heads + s.lists,
            s.bytes_read,
            s.puts + s.deletes,
            s.bytes_written,
        )
    }

    /// `(entries, hits, misses)` of the index cache and of the metadata cache.
    fn cache_stats(&self) -> ((usize, u64, u64), (usize, u64, u64)) {
        let i = self.inner.index_cache_stats();
        let m = self.inner.metadata_cache_stats();
        ((i.entries, i.hits, i.misses), (m.entries, m.hits, m.misses))
    }
}
