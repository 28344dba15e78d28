//! What a dataset says about itself, from Python (issue 41): the manifest's field-id
//! high-water mark and version summary, request counters, the files present and the
//! files each version references, validation, dropping a whole dataset, IVF models
//! and index prewarming. Each a thin call into the `lancer` crate, GIL released.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, Float32Array};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Field};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(max_field_id, m)?)?;
    m.add_function(wrap_pyfunction!(manifest_needs_migration, m)?)?;
    m.add_function(wrap_pyfunction!(version_summary, m)?)?;
    m.add_function(wrap_pyfunction!(io_stats, m)?)?;
    m.add_function(wrap_pyfunction!(all_files, m)?)?;
    m.add_function(wrap_pyfunction!(tracked_files, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(drop_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(ivf_model, m)?)?;
    m.add_function(wrap_pyfunction!(prewarm_index, m)?)?;
    m.add_function(wrap_pyfunction!(index_cache_stats, m)?)?;
    Ok(())
}

/// The highest field id the manifest uses (its schema's and its data files'; -1 for
/// none): a dropped column's id still counts.
#[pyfunction]
fn max_field_id(ds: &Dataset) -> i32 {
    lancer::inspect::max_field_id(&ds.ds.manifest().pb)
}

/// pylance's `lance.lance.manifest_needs_migration`: whether the latest version's
/// manifest (with this version's indexes) lacks fields a write fills in.
#[pyfunction]
fn manifest_needs_migration(ds: &Dataset) -> PyResult<bool> {
    let latest = ds.ds.latest().map_err(|e| errors::lancer(e.into()))?;
    let indices = ds.ds.indices().map_err(|e| errors::lancer(e.into()))?;
    Ok(lancer::inspect::manifest_needs_migration(
        &latest.manifest().pb,
        indices,
    ))
}

/// This version's number, commit time (seconds, nanoseconds) and summary, as pylance
/// computes it from the manifest: fragments, data files and their bytes, deletion
/// files and the rows they delete, rows (values as strings).
#[pyfunction]
fn version_summary(ds: &Dataset) -> (u64, i64, i32, BTreeMap<String, String>) {
    let m = &ds.ds.manifest().pb;
    let summary = lancer::versions::Summary::of(m)
        .entries()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let ts = m
        .timestamp
        .as_ref()
        .map_or((0, 0), |t| (t.seconds, t.nanos));
    (ds.ds.version(), ts.0, ts.1, summary)
}

/// The session's requests and bytes as pylance's IOStats counts them: reads (gets,
/// heads and lists), bytes read, writes (puts and deletes), bytes written, since the
/// previous `incremental` call (since the session began, before any); with
/// `incremental` the next interval starts, as pylance resets its counters.
#[pyfunction]
fn io_stats(ds: &Dataset, incremental: bool) -> (u64, u64, u64, u64) {
    let session = lancer::Session::of(&ds.ds);
    let s = if incremental {
        session.stats_incremental()
    } else {
        session.stats_since_incremental()
    };
    (
        s.gets + s.heads + s.lists,
        s.bytes_read,
        s.puts + s.deletes,
        s.bytes_written,
    )
}

/// Every file under the dataset's root: (path, bytes, modified in ms since the epoch).
#[pyfunction]
fn all_files(py: Python<'_>, ds: &Dataset) -> PyResult<Vec<(String, u64, i64)>> {
    py.detach(|| {
        let files = lancer::inspect::all_files(ds.ds.store()).map_err(errors::lancer)?;
        Ok(files
            .into_iter()
            .map(|f| (f.path, f.size, f.modified_ms))
            .collect())
    })
}

/// The files each version from `min_version` on references: (version, path, kind in
/// pylance's words), version by version.
#[pyfunction]
#[pyo3(signature = (ds, min_version=None))]
fn tracked_files(
    py: Python<'_>,
    ds: &Dataset,
    min_version: Option<u64>,
) -> PyResult<Vec<(u64, String, &'static str)>> {
    py.detach(|| {
        let files = lancer::inspect::tracked_files(ds.ds.store(), min_version, |_, _| {})
            .map_err(errors::lancer)?;
        Ok(files
            .into_iter()
            .map(|f| (f.version, f.path, f.kind.name()))
            .collect())
    })
}

/// The problems of this version (fragment ids, data files present with their sizes
/// and row counts, deletion files, index segments); empty when it checks out.
#[pyfunction]
fn validate(py: Python<'_>, ds: &Dataset) -> Vec<String> {
    py.detach(|| {
        let mut seen = lancer::inspect::Checked::default();
        lancer::inspect::version_problems(&ds.ds, false, &mut seen)
    })
}

/// Deletes the dataset at `uri` and everything under it (see
/// `lancer::inspect::drop_dataset`); a missing one is `FileNotFoundError` unless
/// `ignore_not_found`.
#[pyfunction]
#[pyo3(signature = (uri, storage_options=None, ignore_not_found=false))]
fn drop_dataset(
    py: Python<'_>,
    uri: String,
    storage_options: Option<BTreeMap<String, String>>,
    ignore_not_found: bool,
) -> PyResult<()> {
    py.detach(|| {
        let session = lancer::Session::builder()
            .storage_options(storage_options.unwrap_or_default())
            .build();
        let store = session.store(Path::new(&uri)).map_err(errors::lancer)?;
        match lancer::inspect::drop_dataset(&store) {
            Ok(()) => Ok(()),
            Err(lancer::Error::Table(lancer::TableError::NotFound { .. })) if ignore_not_found => {
                Ok(())
            }
            Err(lancer::Error::Table(e @ lancer::TableError::NotFound { .. })) => {
                Err(errors::open(&uri, e))
            }
            Err(e) => Err(errors::lancer(e)),
        }
    })
}

/// The IVF model of the vector index `name`: its centroids (a fixed-size list of
/// float32 per partition) and metric; None when no segment covers rows yet.
#[pyfunction]
fn ivf_model(
    py: Python<'_>,
    ds: &Dataset,
    name: String,
) -> PyResult<Option<(PyArrowType<ArrayData>, String)>> {
    let model = py.detach(|| lancer::index::ivf_model(&ds.ds, &name).map_err(errors::lancer))?;
    let Some(model) = model else {
        return Ok(None);
    };
    let dim = i32::try_from(model.dim).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "index {name:?} has vectors of {} dimensions, more than an Arrow list holds",
            model.dim
        ))
    })?;
    let values = Float32Array::from(model.centroids);
    let field = Arc::new(Field::new("item", DataType::Float32, true));
    let list =
        FixedSizeListArray::try_new(field, dim, Arc::new(values), None).map_err(errors::arrow)?;
    Ok(Some((
        PyArrowType(list.to_data()),
        model.metric.to_string(),
    )))
}

/// Opens every segment of the index `name` into the dataset's session cache; the
/// number of segments cached.
#[pyfunction]
fn prewarm_index(py: Python<'_>, ds: &Dataset, name: String) -> PyResult<usize> {
    py.detach(|| lancer::index::prewarm_index(&ds.ds, &name).map_err(errors::lancer))
}

/// The session's index cache: (entries, hits, misses).
#[pyfunction]
fn index_cache_stats(ds: &Dataset) -> (usize, u64, u64) {
    let s = lancer::Session::of(&ds.ds).index_cache_stats();
    (s.entries, s.hits, s.misses)
}
