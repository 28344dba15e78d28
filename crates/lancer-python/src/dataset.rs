//! `_lancer.Dataset`: one version of a dataset (a cheap handle; writes return a new
//! one), and the module functions `write` and `cleanup`.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::PyArrowType;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use lancer::file::FileVersion;
use lancer::TableError;
use lancer::{Dataset as Ds, DatasetExt, WriteParams};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors;
use crate::export::{PyBatch, PyTable};

type Options = Option<BTreeMap<String, String>>;

/// One version as Python sees it: `(version, seconds, nanoseconds, rows, operation)`.
type VersionRow = (u64, i64, i32, Vec<(String, String)>);

/// Opens the store behind `uri` with `options` (environment variables first) in a
/// session of its own, as pylance gives each opened dataset its own session: the
/// dataset object and the versions checked out from it share its caches, and each open
/// of a `memory://` URI starts empty. The session's warnings become Python
/// `UserWarning`s.
fn store(uri: &str, options: &Options) -> PyResult<(lancer::Store, lancer::StorageOptions)> {
    store_in(uri, options, None)
}

/// The store at `uri` with `options`, in `session` when one is given (its caches,
/// counters and warnings shared; `memory://` stores excepted: each open of one starts
/// empty, as pylance's), else in a session of its own.
pub(crate) fn store_in(
    uri: &str,
    options: &Options,
    session: Option<&crate::session::PySession>,
) -> PyResult<(lancer::Store, lancer::StorageOptions)> {
    let opts: lancer::StorageOptions = options.clone().unwrap_or_default();
    let session = match session {
        Some(s) if !uri.starts_with("memory://") => s.inner.with_storage_options(opts.clone()),
        _ => {
            crate::session::python_session(lancer::Session::builder().storage_options(opts.clone()))
        }
    };
    let store = session.store(Path::new(uri)).map_err(errors::lancer)?;
    Ok((store, opts))
}

/// Row numbers (offsets or ids) from a list of Python ints, or from `bytes` holding
/// little-endian int64 values (how the Python layer passes NumPy and Arrow arrays: one
/// copy, no Python object per value). A negative or non-integer value is a
/// `ValueError` naming it.
fn row_numbers(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let bad =
        |v: String| PyValueError::new_err(format!("row index {v} is not a non-negative integer"));
    if let Ok(bytes) = obj.cast::<PyBytes>() {
        let raw = bytes.as_bytes();
        if raw.len() % 8 != 0 {
            return Err(PyValueError::new_err(format!(
                "row indices as bytes must be int64 values: {} bytes is not a multiple of 8",
                raw.len()
            )));
        }
        return raw
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                let v = i64::from_le_bytes(b);
                u64::try_from(v).map_err(|_| bad(v.to_string()))
            })
            .collect();
    }
    match obj.extract::<Vec<i64>>() {
        Ok(values) => values
            .into_iter()
            .map(|v| u64::try_from(v).map_err(|_| bad(v.to_string())))
            .collect(),
        Err(e) => {
            // Name the first value that is not an int64 (None, a float, a string...).
            if let Ok(items) = obj.try_iter() {
                for item in items {
                    let item = item?;
                    if item.extract::<i64>().is_err() {
                        return Err(bad(item.repr()?.to_string()));
                    }
                }
            }
            Err(PyValueError::new_err(format!(
                "row indices must be a sequence of non-negative integers: {e}"
            )))
        }
    }
}

/// One version of a dataset.
#[pyclass(module = "lancer._lancer", frozen)]
pub struct Dataset {
    pub(crate) ds: Ds,
    pub(crate) uri: String,
}

impl Dataset {
    pub(crate) fn wrap(&self, ds: Ds) -> Dataset {
        Dataset {
            ds,
            uri: self.uri.clone(),
        }
    }
}

/// A scan's batches as an Arrow reader: errors carried as `ArrowError`, and a pending
/// Ctrl-C (checked between batches) ends it.
struct Batches {
    schema: SchemaRef,
    inner: Box<dyn Iterator<Item = lancer::Result<RecordBatch>> + Send>,
    /// Batches of fewer rows than this are joined (up to this many rows) before they
    /// cross to pyarrow (1: none are): a selective filter leaves a few dozen rows per
    /// scan task, and each batch imported costs pyarrow ~10 µs (112 batches of 57 rows:
    /// +1.1 ms on a 15 ms query). Only for a whole table (`to_table`): a stream would
    /// wait for `rows` matching rows before its first batch.
    rows: usize,
    /// Bytes of a row's fixed-width values (variable-width values counted at 16): a
    /// batch of `JOIN_MAX_BYTES` or more crosses alone, since copying it into a joined
    /// batch costs more than its import (wide rows: 57 rows of a 768-d vector are
    /// 175 KB, ~20 µs to copy).
    row_bytes: usize,
    /// A result read past the last batch handed out (it did not fit).
    held: Option<lancer::Result<RecordBatch>>,
}

/// Batches at least this large are not joined (see `Batches::row_bytes`).
const JOIN_MAX_BYTES: usize = 64 << 10;

/// Bytes per row of `t`'s fixed-width values; variable-width values count 16.
fn value_bytes(t: &arrow_schema::DataType) -> usize {
    use arrow_schema::DataType as T;
    match t {
        T::FixedSizeList(f, n) => value_bytes(f.data_type()).saturating_mul((*n).max(0) as usize),
        T::Struct(fields) => fields.iter().map(|f| value_bytes(f.data_type())).sum(),
        t => t.primitive_width().unwrap_or(16),
    }
}

impl Batches {
    fn new(
        schema: SchemaRef,
        inner: Box<dyn Iterator<Item = lancer::Result<RecordBatch>> + Send>,
        rows: usize,
    ) -> Self {
        let row_bytes = schema
            .fields()
            .iter()
            .map(|f| value_bytes(f.data_type()))
            .sum::<usize>()
            .max(1);
        Self {
            schema,
            inner,
            rows: rows.max(1),
            row_bytes,
            held: None,
        }
    }

    /// Whether `b` crosses alone rather than joined (see `row_bytes`).
    fn big(&self, b: &RecordBatch) -> bool {
        b.num_rows().saturating_mul(self.row_bytes) >= JOIN_MAX_BYTES
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        let err = |e: lancer::Error| ArrowError::ExternalError(Box::new(e));
        let mut parts: Vec<RecordBatch> = Vec::new();
        let mut rows = 0;
        loop {
            // Signals are handled on the main thread only; elsewhere this is a no-op.
            if Python::attach(|py| py.check_signals()).is_err() {
                return Some(Err(ArrowError::ExternalError(errors::INTERRUPTED.into())));
            }
            let next = self.held.take().or_else(|| self.inner.next());
            match next {
                None => break,
                Some(Err(e)) if parts.is_empty() => return Some(Err(err(e))),
                Some(Ok(b))
                    if parts.is_empty() || (rows + b.num_rows() <= self.rows && !self.big(&b)) =>
                {
                    rows += b.num_rows();
                    let alone = self.big(&b);
                    parts.push(b);
                    if alone || rows >= self.rows {
                        break;
                    }
                }
                // an error after some batches, or a batch that does not fit or crosses
                // alone: next time
                Some(other) => {
                    self.held = Some(other);
                    break;
                }
            }
        }
        match parts.len() {
            0 => None,
            1 => parts.pop().map(Ok),
            _ => Some(
                lancer::concat_batches(&self.schema, &parts)
                    .map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))),
            ),
        }
    }
}

impl RecordBatchReader for Batches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

fn cols(columns: &Option<Vec<String>>) -> Option<Vec<&str>> {
    columns
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect())
}

#[pymethods]
impl Dataset {
    /// Opens `uri` (a path, `file://`, `s3://`, `gs://`, `az://` or `memory://`) at its
    /// latest version, a version number, or a tag.
    #[staticmethod]
    #[pyo3(signature = (uri, version=None, tag=None, storage_options=None, session=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        version: Option<u64>,
        tag: Option<String>,
        storage_options: Options,
        session: Option<PyRef<'_, crate::session::PySession>>,
    ) -> PyResult<Dataset> {
        let session = session.as_deref();
        py.detach(|| {
            let (store, opts) = store_in(&uri, &storage_options, session)?;
            let version = match tag {
                Some(t) => Some(
                    lancer::versions::tag_version(&store, &t).map_err(|e| errors::open(&uri, e))?,
                ),
                None => version,
            };
            let ds = Ds::open_with(store, opts, version).map_err(|e| errors::open(&uri, e))?;
            Ok(Dataset { ds, uri })
        })
    }

    /// The dataset's location as given.
    #[getter]
    fn uri(&self) -> String {
        self.uri.clone()
    }

    /// This handle's version.
    #[getter]
    fn version(&self) -> u64 {
        self.ds.version()
    }

    /// The schema (a `pyarrow.Schema`).
    #[getter]
    fn schema(&self) -> PyArrowType<Schema> {
        // JSON columns as readers see them: Arrow's JSON type
        PyArrowType(lancer::json_text_schema(&self.ds.schema()).as_ref().clone())
    }

    /// The SQL filter a Substrait `ExtendedExpression` expresses (a
    /// `pyarrow.compute.Expression` serialized by `pyarrow.substrait`), its fields named
    /// by position in this dataset's schema.
    fn substrait_filter(&self, message: &[u8]) -> PyResult<String> {
        lancer::filter::substrait_filter_sql(message, &self.ds.schema()).map_err(errors::lancer)
    }

    /// Whether rows keep their ids across compaction (stable row ids).
    #[getter]
    fn stable_row_ids(&self) -> bool {
        self.ds.uses_stable_row_ids()
    }

    /// The data storage version of the files (e.g. "2.1").
    #[getter]
    fn data_storage_version(&self) -> String {
        match self.ds.storage_version() {
            FileVersion::Legacy => "0.1".into(),
            FileVersion::V2_0 => "2.0".into(),
            FileVersion::V2_1 => "2.1".into(),
            FileVersion::V2_2 => "2.2".into(),
            FileVersion::V2_3 => "2.3".into(),
        }
    }

    /// The same dataset at `version`.
    fn checkout(&self, py: Python<'_>, version: u64) -> PyResult<Dataset> {
        let ds = py.detach(|| self.ds.at_version(version).map_err(errors::table))?;
        Ok(self.wrap(ds))
    }

    /// The same dataset at its newest version.
    fn latest(&self, py: Python<'_>) -> PyResult<Dataset> {
        let ds = py.detach(|| self.ds.latest().map_err(errors::table))?;
        Ok(self.wrap(ds))
    }

    /// Every version, oldest first: `(version, seconds, nanoseconds, summary)` (the
    /// summary as pylance names its counts).
    fn versions(&self, py: Python<'_>) -> PyResult<Vec<VersionRow>> {
        py.detach(|| {
            let v = lancer::versions::version_summaries(self.ds.store()).map_err(errors::table)?;
            Ok(v.into_iter()
                .map(|v| {
                    let summary = v
                        .summary
                        .entries()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect();
                    (v.version, v.timestamp.0, v.timestamp.1, summary)
                })
                .collect())
        })
    }

    /// The table metadata and config of this version (two dicts).
    fn metadata(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let pb = &self.ds.manifest().pb;
        (
            pb.table_metadata.clone().into_iter().collect(),
            pb.config.clone().into_iter().collect(),
        )
    }

    /// Tags and their versions, sorted by name.
    fn tags(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        py.detach(|| lancer::versions::list_tags(self.ds.store()).map_err(errors::table))
    }

    /// Tags `version` as `name` (an existing tag is an error unless `replace`).
    #[pyo3(signature = (name, version, replace=false))]
    fn create_tag(
        &self,
        py: Python<'_>,
        name: String,
        version: u64,
        replace: bool,
    ) -> PyResult<()> {
        py.detach(|| {
            let store = self.ds.store();
            self.ds.at_version(version).map_err(errors::table)?;
            if replace {
                match lancer::versions::delete_tag(store, &name) {
                    Ok(()) | Err(TableError::NotFound { .. }) => {}
                    Err(e) => return Err(errors::table(e)),
                }
            }
            lancer::versions::create_tag(store, &name, version, 0).map_err(errors::table)
        })
    }

    /// Deletes the tag `name`.
    fn delete_tag(&self, py: Python<'_>, name: String) -> PyResult<()> {
        py.detach(|| lancer::versions::delete_tag(self.ds.store(), &name).map_err(errors::table))
    }

    /// Live rows, or rows passing a SQL `filter` (reads only the filter's columns);
    /// `fast_search` / `include_deleted_rows` as the scanner's.
    #[pyo3(signature = (filter=None, fast_search=false, include_deleted_rows=false))]
    fn count_rows(
        &self,
        py: Python<'_>,
        filter: Option<String>,
        fast_search: bool,
        include_deleted_rows: bool,
    ) -> PyResult<u64> {
        match filter {
            None if !include_deleted_rows => Ok(self.ds.count_rows()),
            Some(f) if !fast_search && !include_deleted_rows => {
                py.detach(|| self.ds.count_where(&f).map_err(errors::lancer))
            }
            f => py.detach(|| {
                let mut s = self
                    .ds
                    .scan()
                    .fast_search(fast_search)
                    .include_deleted_rows(include_deleted_rows)
                    .with_row_id(include_deleted_rows);
                if let Some(f) = &f {
                    s = s.filter(f);
                }
                s.count_rows().map_err(errors::lancer)
            }),
        }
    }

    /// A scan as a `pyarrow.RecordBatchReader` (batches produced as they are read; the
    /// filter is checked before this returns). `project`: output columns computed by SQL
    /// expressions, `[(name, expression)]`, instead of `columns`. `join`: small batches
    /// are joined up to `batch_size` rows before they cross (for a whole table: fewer
    /// imports; a stream would wait longer for its first batch). `order_by`: sort keys
    /// `(column, ascending, nulls_first)`, applied before offset and limit.
    #[pyo3(signature = (columns=None, filter=None, limit=None, offset=None, with_row_id=false,
                        with_row_address=false, batch_size=None, fragments=None, use_scalar_index=true,
                        project=None, join=false, order_by=None, fast_search=false,
                        include_deleted_rows=false, strict_batch_size=false,
                        blob_descriptions=false))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<String>,
        limit: Option<u64>,
        offset: Option<u64>,
        with_row_id: bool,
        with_row_address: bool,
        batch_size: Option<usize>,
        fragments: Option<Vec<u64>>,
        use_scalar_index: bool,
        project: Option<Vec<(String, String)>>,
        join: bool,
        order_by: Option<Vec<(String, bool, bool)>>,
        fast_search: bool,
        include_deleted_rows: bool,
        strict_batch_size: bool,
        blob_descriptions: bool,
    ) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
        let described;
        let ds = if blob_descriptions {
            described = self.ds.with_blob_descriptions();
            &described
        } else {
            &self.ds
        };
        let stream = py.detach(|| {
            let mut s = ds
                .scan()
                .fast_search(fast_search)
                .include_deleted_rows(include_deleted_rows)
                .strict_batch_size(strict_batch_size)
                .limit(limit)
                .offset(offset.unwrap_or(0))
                .with_row_id(with_row_id)
                .with_row_address(with_row_address)
                .use_scalar_index(use_scalar_index);
            if let Some(c) = &columns {
                s = s.columns(c);
            }
            if let Some(p) = &project {
                s = s.project(p);
            }
            if let Some(f) = &filter {
                s = s.filter(f);
            }
            if let Some(b) = batch_size {
                if b == 0 {
                    return Err(PyValueError::new_err("batch_size must be at least 1"));
                }
                s = s.batch_size(b);
            }
            if let Some(fr) = &fragments {
                s = s.fragments(fr);
            }
            if let Some(o) = &order_by {
                let keys: Vec<lancer::SortKey> = o
                    .iter()
                    .map(|(column, ascending, nulls_first)| lancer::SortKey {
                        column: column.clone(),
                        ascending: *ascending,
                        nulls_first: *nulls_first,
                    })
                    .collect();
                s = s.order_by(&keys);
            }
            s.stream().map_err(errors::lancer)
        })?;
        // (a strict batch size is the engine's: nothing is joined on top)
        let join_to = if join && !strict_batch_size {
            batch_size.unwrap_or(lancer::scan::DEFAULT_BATCH_SIZE)
        } else {
            1
        };
        let reader = Batches::new(stream.schema(), Box::new(stream), join_to);
        Ok(PyArrowType(Box::new(reader)))
    }

    /// The plan a scan would run (filters, indexes used), in pylance's operator names;
    /// with `analyze` the scan is run once and the plan carries what it cost.
    #[pyo3(signature = (columns=None, filter=None, limit=None, offset=None, with_row_id=false,
                        with_row_address=false, analyze=false))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<String>,
        limit: Option<u64>,
        offset: Option<u64>,
        with_row_id: bool,
        with_row_address: bool,
        analyze: bool,
    ) -> PyResult<String> {
        py.detach(|| {
            let mut s = self.ds.scan();
            if let Some(c) = &columns {
                s = s.columns(c);
            }
            if let Some(f) = &filter {
                s = s.filter(f);
            }
            s = s
                .limit(limit)
                .offset(offset.unwrap_or(0))
                .with_row_id(with_row_id)
                .with_row_address(with_row_address);
            match analyze {
                true => s.analyze(),
                false => s.explain(),
            }
            .map_err(errors::lancer)
        })
    }

    /// Rows at live-row offsets `indices` (in that order, repeats allowed), as a
    /// one-batch `pyarrow.Table`.
    /// With `blob_descriptions`, blob v2 columns come as their descriptors (pylance's
    /// `take`).
    #[pyo3(signature = (indices, columns=None, blob_descriptions=false))]
    fn take(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
        blob_descriptions: bool,
    ) -> PyResult<PyTable> {
        let indices = row_numbers(indices)?;
        let ds = if blob_descriptions {
            self.ds.with_blob_descriptions()
        } else {
            self.ds.clone()
        };
        let b = py.detach(|| {
            let c = cols(&columns);
            ds.take(&indices, c.as_deref()).map_err(errors::table)
        })?;
        Ok(PyTable(b))
    }

    /// Rows by row id (the stable id, or the row address when the dataset has none), as
    /// a one-batch `pyarrow.Table`.
    #[pyo3(signature = (ids, columns=None, blob_descriptions=false))]
    fn take_rows(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        columns: Option<Vec<String>>,
        blob_descriptions: bool,
    ) -> PyResult<PyTable> {
        let ids = row_numbers(ids)?;
        let ds = if blob_descriptions {
            self.ds.with_blob_descriptions()
        } else {
            self.ds.clone()
        };
        let b = py.detach(|| {
            let c = cols(&columns);
            if ds.uses_stable_row_ids() {
                ds.take_row_ids(&ids, c.as_deref())
            } else {
                ds.take_addresses(&ids, c.as_deref())
            }
            .map_err(errors::table)
        })?;
        Ok(PyTable(b))
    }

    /// Deletes the rows matching a SQL `filter`; the dataset after (the same version
    /// when nothing matched).
    fn delete(&self, py: Python<'_>, filter: String) -> PyResult<Dataset> {
        let ds = py.detach(|| DatasetExt::delete(&self.ds, &filter).map_err(errors::lancer))?;
        Ok(self.wrap(ds))
    }

    /// The registered base paths: (id, name, path, is_dataset_root), by id.
    fn base_paths(&self) -> Vec<(u32, Option<String>, String, bool)> {
        self.ds
            .base_paths()
            .iter()
            .map(|b| (b.id, b.name.clone(), b.path.clone(), b.is_dataset_root))
            .collect()
    }

    /// Registers base paths, (name, path, is_dataset_root) each, in one commit.
    #[pyo3(signature = (bases, transaction_properties=None))]
    fn add_bases(
        &self,
        py: Python<'_>,
        bases: Vec<BaseTuple>,
        transaction_properties: Option<std::collections::HashMap<String, String>>,
    ) -> PyResult<Dataset> {
        let specs = base_specs(bases);
        let props = transaction_properties.unwrap_or_default();
        let ds = py.detach(|| self.ds.add_bases(&specs, &props).map_err(errors::table))?;
        Ok(self.wrap(ds))
    }

    /// Makes this handle's version the latest again (a new version).
    fn restore(&self, py: Python<'_>) -> PyResult<Dataset> {
        let ds = py.detach(|| self.ds.restore(self.ds.version()).map_err(errors::table))?;
        Ok(self.wrap(ds))
    }

    /// The fragments: dicts of `id`, `physical_rows`, `deleted_rows` and `files`
    /// (`path`, `fields`, `file_major_version`, `file_minor_version`).
    fn fragments<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for f in self.ds.fragments() {
            let d = PyDict::new(py);
            d.set_item("id", f.id)?;
            d.set_item("physical_rows", f.physical_rows)?;
            let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
            d.set_item("deleted_rows", deleted)?;
            d.set_item(
                "deletion_file",
                f.deletion_file
                    .as_ref()
                    .map(|del| lancer::inspect::deletion_path(f.id, del)),
            )?;
            let mut files = Vec::new();
            for df in &f.files {
                let fd = PyDict::new(py);
                fd.set_item("path", &df.path)?;
                fd.set_item("fields", &df.fields)?;
                fd.set_item("column_indices", &df.column_indices)?;
                fd.set_item("file_major_version", df.file_major_version)?;
                fd.set_item("file_minor_version", df.file_minor_version)?;
                fd.set_item("file_size_bytes", df.file_size_bytes)?;
                fd.set_item("base_id", df.base_id)?;
                files.push(fd);
            }
            d.set_item("files", files)?;
            out.push(d);
        }
        Ok(out)
    }

    /// The `k` nearest rows to `q` in `column`: the columns asked (all by default)
    /// plus `_distance`, nearest first. Through the column's vector index when it has
    /// one for the metric (unless `use_index` is false), else exact.
    #[pyo3(signature = (column, q, k, metric=None, nprobes=None, refine_factor=None, filter=None,
                        prefilter=true, columns=None, use_index=true, with_row_id=false,
                        with_row_address=false, explain=false, fast_search=false,
                        minimum_nprobes=None, maximum_nprobes=None, ef=None, approx_mode=None))]
    #[allow(clippy::too_many_arguments)]
    fn nearest(
        &self,
        py: Python<'_>,
        column: String,
        q: Vec<f32>,
        k: usize,
        metric: Option<String>,
        nprobes: Option<usize>,
        refine_factor: Option<u32>,
        filter: Option<String>,
        prefilter: bool,
        columns: Option<Vec<String>>,
        use_index: bool,
        with_row_id: bool,
        with_row_address: bool,
        explain: bool,
        fast_search: bool,
        minimum_nprobes: Option<usize>,
        maximum_nprobes: Option<usize>,
        ef: Option<usize>,
        approx_mode: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let approx_mode = approx_mode_of(approx_mode.as_deref())?;
        use lancer::search::{nearest, Nearest, RowMeta, SearchOptions};
        let b = py.detach(|| {
            let metric = search_metric(&self.ds, &column, metric.as_deref())?;
            let req = Nearest {
                column: &column,
                query: q,
                k,
                metric,
            };
            let filtering = filtering(filter.as_deref(), prefilter);
            let params = lancer::search::AnnParams {
                use_index,
                nprobes,
                refine_factor,
                fast_search,
                min_nprobes: minimum_nprobes,
                max_nprobes: maximum_nprobes,
                ef,
                approx_mode,
            };
            if explain {
                return lancer::search::explain_nearest(&self.ds, &req, filtering, &params)
                    .map(Err)
                    .map_err(errors::lancer);
            }
            let c = cols(&columns);
            let meta = RowMeta {
                row_id: with_row_id,
                row_address: with_row_address,
            };
            nearest(
                &self.ds,
                &req,
                &SearchOptions {
                    filtering,
                    columns: c.as_deref(),
                    ann: params.clone(),
                    row_meta: meta,
                },
            )
            .map(Ok)
            .map_err(errors::lancer)
        })?;
        // a batch, or with `explain` the plan's text
        match b {
            Ok(b) => Ok(PyBatch(b).into_pyobject(py)?.unbind()),
            Err(plan) => Ok(plan.into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// Full-text search of `query` (in `column`, or every indexed column): the columns
    /// asked plus `_score`, best first.
    #[pyo3(signature = (query, column=None, query_json=None, limit=None, filter=None, prefilter=false,
                        columns=None, with_row_id=false, with_row_address=false, explain=false,
                        fast_search=false))]
    #[allow(clippy::too_many_arguments)]
    fn full_text_search(
        &self,
        py: Python<'_>,
        query: Option<String>,
        column: Option<String>,
        query_json: Option<String>,
        limit: Option<usize>,
        filter: Option<String>,
        prefilter: bool,
        columns: Option<Vec<String>>,
        with_row_id: bool,
        with_row_address: bool,
        explain: bool,
        fast_search: bool,
    ) -> PyResult<Py<PyAny>> {
        let b = py.detach(|| {
            let q = match (query_json, query) {
                // a structured query (lancer.query), in Lance's JSON shape
                (Some(j), _) => lancer::search::fts_query_from_json(&j)
                    .map_err(|e| errors::lancer(lancer::Error::Index(e)))?,
                // (a query in double quotes is a phrase, as in pylance)
                (None, Some(text)) => lancer::FtsQuery::from_text(&text, column.as_deref()),
                (None, None) => {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "full_text_query needs a query",
                    ))
                }
            };
            let opts = lancer::search::FtsOptions {
                limit,
                filter,
                prefilter,
                fast_search,
                columns,
                row_meta: lancer::search::RowMeta {
                    row_id: with_row_id,
                    row_address: with_row_address,
                },
            };
            if explain {
                return lancer::search::explain_full_text(&self.ds, &q, &opts)
                    .map(Err)
                    .map_err(errors::lancer);
            }
            lancer::search::full_text_search(&self.ds, &q, &opts)
                .map(Ok)
                .map_err(errors::lancer)
        })?;
        // a batch, or with `explain` the plan's text
        match b {
            Ok(b) => Ok(PyBatch(b).into_pyobject(py)?.unbind()),
            Err(plan) => Ok(plan.into_pyobject(py)?.into_any().unbind()),
        }
    }

    /// Builds an index on `column`: IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ (vector),
    /// BTREE / BITMAP / LABEL_LIST / ZONEMAP / BLOOMFILTER / NGRAM (scalar), JSON (a
    /// path of a JSON column) or INVERTED (full text), in the reference's format. The
    /// dataset after.
    #[pyo3(signature = (column, index_type, name=None, replace=false, metric=None, num_partitions=None,
                        num_sub_vectors=None, num_bits=None, sample_rate=None, max_iterations=None,
                        analyzer_json=None, zone_size=None, rows_per_zone=None, bloom_items=None,
                        bloom_probability=None, progress=None, m=None, ef_construction=None,
                        max_level=None, json_path=None, target_index_type=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_index(
        &self,
        py: Python<'_>,
        column: String,
        index_type: String,
        name: Option<String>,
        replace: bool,
        metric: Option<String>,
        num_partitions: Option<usize>,
        num_sub_vectors: Option<usize>,
        num_bits: Option<u32>,
        sample_rate: Option<usize>,
        max_iterations: Option<usize>,
        analyzer_json: Option<String>,
        zone_size: Option<usize>,
        rows_per_zone: Option<u64>,
        bloom_items: Option<u64>,
        bloom_probability: Option<f64>,
        progress: Option<Py<PyAny>>,
        m: Option<usize>,
        ef_construction: Option<usize>,
        max_level: Option<u16>,
        json_path: Option<String>,
        target_index_type: Option<String>,
    ) -> PyResult<Dataset> {
        // an INVERTED index's tokenizer settings, in pylance's names; invalid ones refused
        let analyzer = analyzer_json
            .map(|j| {
                let p = lancer::AnalyzerParams::from_json(&j)?;
                p.check()?;
                Ok::<_, lancer::IndexError>(p)
            })
            .transpose()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let params = lancer::IndexParams {
            name,
            replace,
            metric,
            num_partitions,
            num_sub_vectors,
            num_bits,
            sample_rate,
            max_iterations,
            zone_size,
            rows_per_zone,
            bloom_items,
            bloom_probability,
            analyzer,
            m,
            ef_construction,
            max_level,
            json_path,
            target_index_type,
            ..Default::default()
        };
        let spec = lancer::IndexSpec::parse(&index_type, params).map_err(errors::lancer)?;
        let (listener, failed) = match progress {
            Some(f) => {
                let (l, e) = crate::meta::progress_listener(f);
                (Some(l), Some(e))
            }
            None => (None, None),
        };
        let ds = py.detach(|| {
            lancer::create_index(&self.ds, &column, &spec, listener.as_ref())
                .map_err(errors::lancer)
        })?;
        // the callback's own exception, raised once the build is done (the index stands)
        if let Some(e) = failed.and_then(|f| f.lock().unwrap_or_else(|p| p.into_inner()).take()) {
            return Err(e);
        }
        Ok(self.wrap(ds))
    }

    /// Every index segment as pylance lists them: dicts of `name`, `type`, `uuid`,
    /// `fields`, `version`, `fragment_ids`, `base_id`.
    fn list_segments<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let segs =
            py.detach(|| lancer::inspect::list_segments(&self.ds).map_err(errors::lancer))?;
        let mut out = Vec::with_capacity(segs.len());
        for s in segs {
            let d = PyDict::new(py);
            d.set_item("name", s.name)?;
            d.set_item("type", s.index_type)?;
            d.set_item("uuid", s.uuid)?;
            d.set_item("fields", s.fields)?;
            d.set_item("version", s.version)?;
            d.set_item("fragment_ids", s.fragment_ids)?;
            d.set_item("base_id", s.base_id)?;
            out.push(d);
        }
        Ok(out)
    }

    /// pylance's `index_statistics(name)`, as JSON text.
    fn index_statistics(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let v = py.detach(|| {
            lancer::inspect::index_statistics(&self.ds, &name).map_err(errors::lancer)
        })?;
        Ok(v.to_string())
    }

    /// pylance's `describe_indices()`: dicts of `name`, `type_url`,
    /// `num_rows_indexed`, `fields`, `field_names`, `num_segments`, `total_size_bytes`.
    fn describe_indices<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let ds =
            py.detach(|| lancer::inspect::describe_indices(&self.ds).map_err(errors::lancer))?;
        let mut out = Vec::with_capacity(ds.len());
        let json = py.import("json")?;
        for i in ds {
            let d = PyDict::new(py);
            d.set_item("name", i.name)?;
            d.set_item("index_type", i.index_type)?;
            d.set_item(
                "details",
                json.call_method1("loads", (i.details.to_string(),))?,
            )?;
            let mut segments = Vec::with_capacity(i.segments.len());
            for s in i.segments {
                let sd = PyDict::new(py);
                sd.set_item("uuid", s.uuid)?;
                sd.set_item("fragment_ids", s.fragment_ids)?;
                sd.set_item(
                    "dataset_version_at_last_update",
                    s.dataset_version_at_last_update,
                )?;
                sd.set_item("index_version", s.index_version)?;
                sd.set_item("created_at_ms", s.created_at_ms)?;
                sd.set_item("base_id", s.base_id)?;
                sd.set_item("size_bytes", s.size_bytes)?;
                segments.push(sd);
            }
            d.set_item("segments", segments)?;
            d.set_item("type_url", i.type_url)?;
            d.set_item("num_rows_indexed", i.num_rows_indexed)?;
            d.set_item("fields", i.fields)?;
            d.set_item("field_names", i.field_names)?;
            d.set_item("total_size_bytes", i.total_size_bytes)?;
            out.push(d);
        }
        Ok(out)
    }

    /// pylance's `stats.dataset_stats(max_rows_per_group)`: (deleted rows, fragments,
    /// small files).
    fn dataset_stats(&self, py: Python<'_>, max_rows_per_group: u64) -> PyResult<(u64, u64, u64)> {
        let s = py.detach(|| {
            lancer::inspect::dataset_stats(&self.ds, max_rows_per_group).map_err(errors::lancer)
        })?;
        Ok((s.num_deleted_rows, s.num_fragments, s.num_small_files))
    }

    /// pylance's `stats.data_stats()`: (field id, bytes on disk) per field.
    fn data_stats(&self, py: Python<'_>) -> PyResult<Vec<(i32, u64)>> {
        let s = py.detach(|| lancer::inspect::data_stats(&self.ds).map_err(errors::lancer))?;
        Ok(s.into_iter().map(|f| (f.id, f.bytes_on_disk)).collect())
    }

    /// Drops the index `name`; the dataset after.
    fn drop_index(&self, py: Python<'_>, name: String) -> PyResult<Dataset> {
        let ds =
            py.detach(|| lancer::index::drop_index(&self.ds, &name).map_err(errors::lancer))?;
        Ok(self.wrap(ds))
    }

    fn __repr__(&self) -> String {
        format!(
            "lancer.Dataset({:?}, version={}, rows={})",
            self.uri,
            self.ds.version(),
            self.ds.count_rows()
        )
    }
}

/// A base path from Python: (name, path, is_dataset_root, id; 0 lets the dataset pick).
pub(crate) type BaseTuple = (Option<String>, String, bool, u32);

/// Base paths to register, from Python's tuples.
pub(crate) fn base_specs(bases: Vec<BaseTuple>) -> Vec<lancer::BaseSpec> {
    bases
        .into_iter()
        .map(|(name, path, is_dataset_root, id)| lancer::BaseSpec {
            name,
            path,
            is_dataset_root,
            id,
        })
        .collect()
}

/// `write_dataset(progress=)`: the Python function `(event, fragment JSON)` told of
/// each fragment the write begins and completes (called with the GIL; its exception
/// fails the write, named).
fn fragment_observer(callback: Py<PyAny>) -> lancer::FragmentObserver {
    lancer::FragmentObserver(std::sync::Arc::new(
        move |event: lancer::FragmentEvent, frag: &lancer::pb::DataFragment| {
            let name = match event {
                lancer::FragmentEvent::Begin => "begin",
                lancer::FragmentEvent::Complete => "complete",
            };
            let text = lancer::write::python_json_text(&lancer::write::fragment_to_json(frag));
            Python::attach(|py| {
                callback
                    .call1(py, (name, text))
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        },
    ))
}

/// Writes the batches of `reader` (anything with `__arrow_c_stream__`) to `uri`:
/// mode `create` (an existing dataset is an error), `append` or `overwrite`.
#[pyfunction]
#[pyo3(signature = (reader, uri, mode="create", max_rows_per_file=None, max_bytes_per_file=None,
                    data_storage_version=None, storage_options=None, enable_stable_row_ids=false,
                    transaction_properties=None, auto_cleanup=None, skip_auto_cleanup=false,
                    v2_manifest_paths=true, session=None, blob_pack_file_size_threshold=None,
                    allow_external_blob_outside_bases=false, ingest_external_blobs=false,
                    initial_bases=None, target_bases=None, target_all_bases=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn write(
    py: Python<'_>,
    reader: PyArrowType<ArrowArrayStreamReader>,
    uri: String,
    mode: &str,
    max_rows_per_file: Option<usize>,
    max_bytes_per_file: Option<u64>,
    data_storage_version: Option<String>,
    storage_options: Options,
    enable_stable_row_ids: bool,
    transaction_properties: Option<std::collections::HashMap<String, String>>,
    auto_cleanup: Option<(u64, u64)>,
    skip_auto_cleanup: bool,
    v2_manifest_paths: bool,
    session: Option<PyRef<'_, crate::session::PySession>>,
    blob_pack_file_size_threshold: Option<u64>,
    allow_external_blob_outside_bases: bool,
    ingest_external_blobs: bool,
    initial_bases: Option<Vec<BaseTuple>>,
    target_bases: Option<Vec<String>>,
    target_all_bases: Option<bool>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Dataset> {
    let session = session.as_deref();
    let reader = reader.0;
    let mode = mode.to_ascii_lowercase();
    if !matches!(mode.as_str(), "create" | "append" | "overwrite") {
        return Err(PyValueError::new_err(format!(
            "unknown mode {mode:?}: create, append or overwrite"
        )));
    }
    let mut params = WriteParams {
        enable_stable_row_ids,
        transaction_properties: transaction_properties.unwrap_or_default(),
        auto_cleanup: auto_cleanup.map(|(interval, secs)| lancer::AutoCleanup {
            interval,
            older_than: std::time::Duration::from_secs(secs),
        }),
        skip_auto_cleanup,
        // (a new dataset's manifest names; an existing one keeps its own)
        naming: if v2_manifest_paths {
            lancer::versions::Naming::V2
        } else {
            lancer::versions::Naming::V1
        },
        blobs: lancer::BlobWriteOptions {
            pack_file_size_threshold: blob_pack_file_size_threshold,
            allow_external_outside_bases: allow_external_blob_outside_bases,
            ingest_external: ingest_external_blobs,
            ..Default::default()
        },
        initial_bases: base_specs(initial_bases.unwrap_or_default()),
        target_bases: target_bases.unwrap_or_default(),
        target_all_bases,
        on_fragment: progress.map(fragment_observer),
        ..Default::default()
    };
    if let Some(v) = &data_storage_version {
        let v = match v.to_ascii_lowercase().as_str() {
            "stable" => "2.1".to_string(),
            "next" => "2.2".to_string(),
            other => other.to_string(),
        };
        params.storage = FileVersion::parse(&v)
            .map_err(|e| PyValueError::new_err(format!("data_storage_version {v:?}: {e}")))?;
    }
    if let Some(n) = max_rows_per_file {
        if n == 0 {
            return Err(PyValueError::new_err(
                "max_rows_per_file must be at least 1",
            ));
        }
        params.max_rows_per_file = n;
    }
    if let Some(n) = max_bytes_per_file {
        params.max_bytes_per_file = n;
    }
    let schema = reader.schema();
    // The input stream is read on this thread (a Python-backed reader takes the GIL
    // itself when it needs it).
    let ds = py.detach(move || {
        let (store, opts) = store_in(&uri, &storage_options, session)?;
        // (registered bases' stores open with the same options)
        let mut params = params;
        params.storage_options = Some(opts.clone());
        let existing = match lancer::versions::latest_version(&store) {
            Ok(v) => Some(v.version),
            Err(TableError::NotFound { .. }) => None,
            Err(e) => return Err(errors::table(e)),
        };
        // (an append to nothing creates the dataset, as pylance does)
        if mode == "create" && existing.is_some() {
            return Err(errors::invalid_input(format!(
                "{uri} already exists: use mode=\"append\" or mode=\"overwrite\""
            )));
        }
        let batches = reader.map(|b| {
            b.map_err(|e| TableError::InvalidInput {
                what: e.to_string(),
            })
        });
        let written = match (mode.as_str(), existing) {
            ("append", Some(v)) => Ds::open_with(store.clone(), opts.clone(), Some(v))
                .and_then(|d| d.append_stream(batches, &params)),
            _ => Ds::write_stream_in(store.clone(), schema, batches, &params),
        }
        .map_err(errors::table)?;
        // the new version on a handle that keeps the caller's storage options (a new
        // overwrite's handle carries none)
        let ds = if mode == "append" && existing.is_some() {
            written
        } else {
            Ds::open_with(store, opts, Some(written.version())).map_err(errors::table)?
        };
        Ok(Dataset { ds, uri })
    })?;
    Ok(ds)
}

/// Removes versions older than `older_than_seconds` (if given) and not among the newest
/// `retain_versions` (if given) — never the latest or a tagged one (a tagged one due
/// for removal is an `OSError` with `error_if_tagged`) — and the files only they used:
/// `(bytes, versions, data files, transaction files, index files, deletion files)`
/// removed. With `retain_versions` alone, unreferenced files younger than a week stay
/// unless `delete_unverified`.
#[pyfunction]
#[pyo3(signature = (uri, older_than_seconds=None, retain_versions=None, storage_options=None,
                    delete_unverified=false, error_if_tagged=true))]
pub fn cleanup(
    py: Python<'_>,
    uri: String,
    older_than_seconds: Option<f64>,
    retain_versions: Option<usize>,
    storage_options: Options,
    delete_unverified: bool,
    error_if_tagged: bool,
) -> PyResult<CleanupCounts> {
    let age = older_than(older_than_seconds)?;
    if retain_versions == Some(0) {
        return Err(PyValueError::new_err("retain_versions must be at least 1"));
    }
    py.detach(|| {
        let (store, _) = store(&uri, &storage_options)?;
        let s = lancer::versions::cleanup_retaining(
            &store,
            age,
            retain_versions,
            delete_unverified,
            error_if_tagged,
        )
        .map_err(errors::table)?;
        Ok(cleanup_counts(&s))
    })
}

/// A cleanup's `older_than` in seconds as a duration (negative, not finite or beyond
/// range: the caller's mistake).
pub(crate) fn older_than(seconds: Option<f64>) -> PyResult<Option<std::time::Duration>> {
    match seconds {
        Some(s) if !(s >= 0.0 && s.is_finite()) => Err(PyValueError::new_err(
            "older_than must be a non-negative duration",
        )),
        Some(s) => std::time::Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(|_| {
                errors::invalid_input(format!("older_than of {s} seconds is out of range"))
            }),
        None => Ok(None),
    }
}

/// pylance's cleanup counts: bytes, versions, data / transaction / index / deletion
/// files removed.
pub(crate) type CleanupCounts = (u64, usize, usize, usize, usize, usize);

pub(crate) fn cleanup_counts(s: &lancer::versions::CleanupStats) -> CleanupCounts {
    (
        s.bytes_removed,
        s.versions_removed,
        s.data_files_removed,
        s.transaction_files_removed,
        s.index_files_removed,
        s.deletion_files_removed,
    )
}

/// pylance's `approx_mode` (None: "normal"); another value is a `ValueError`.
pub(crate) fn approx_mode_of(m: Option<&str>) -> PyResult<lancer::search::ApproxMode> {
    match m {
        None => Ok(lancer::search::ApproxMode::Normal),
        Some(m) => lancer::search::ApproxMode::parse(m).ok_or_else(|| {
            PyValueError::new_err(format!(
                "approx_mode must be \"fast\", \"normal\" or \"accurate\", got {m:?}"
            ))
        }),
    }
}

/// A vector search's metric: the one asked for, else the column's index's, else l2.
pub(crate) fn search_metric(
    ds: &lancer::Dataset,
    column: &str,
    metric: Option<&str>,
) -> PyResult<lancer::Metric> {
    Ok(match metric {
        Some(m) => lancer::Metric::parse(m).map_err(|e| errors::lancer(e.into()))?,
        None => lancer::search::column_index_metric(ds, column)
            .map_err(errors::lancer)?
            .unwrap_or(lancer::Metric::L2),
    })
}

/// How a vector search's SQL `filter` applies: before the search (`prefilter`) or to
/// its `k` nearest.
pub(crate) fn filtering(filter: Option<&str>, prefilter: bool) -> lancer::search::Filtering<'_> {
    use lancer::search::Filtering;
    match filter {
        None => Filtering::None,
        Some(f) if prefilter => Filtering::Pre(f),
        Some(f) => Filtering::Post(f),
    }
}
